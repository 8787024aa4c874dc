/* The devices an agent measures in `agent run` and `agent serve`, from the
 * --device and --threads settings: the cpu (with that many threads: a CPU
 * with 1 thread and with all of them are two devices, "<CPU model> (N
 * threads)") and every NVIDIA GPU, or only the --device one. Each is opened
 * once through the device layer to describe it (the identity its conv
 * benchmarks and traces are stored under) and closed again; the jobs open
 * it when they run. */
#ifndef TC_AGENT_DEVICES_H
#define TC_AGENT_DEVICES_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char spec[32];                  /* "cpu", "cuda:0" */
    uint32_t threads;               /* the cpu's thread count; 0 for a GPU */
    Traincast__V1__Device *device;  /* its description (owned by the list); NULL when this
                                       build cannot open it (a GPU without the CUDA
                                       backend: traces still run, benchmarks cannot) */
    char why[512];                  /* why `device` is NULL */
} tc_agent_device_t;

typedef struct tc_agent_devices tc_agent_devices_t;

/* Ready this process to measure: settle the quiet-machine guard
 * (--quiet-threshold when `quiet_given`, hostload.h), check
 * TRAINCAST_OPERANDS (operands.h) where it is set, then run under
 * `allocator` (tc_allocator_apply, which may re-execute the program). Every
 * command that measures calls it first. A GPU loads its libraries when it
 * is first opened (agent/devices/cuda/cuda_libs.c). */
int tc_agent_prepare(const char *allocator, bool quiet_given, double quiet_pct);

/* The --quiet-threshold option of the measuring commands. */
#define TC_QUIET_OPT(dest)                                                                        \
    {"quiet-threshold", TC_OPT_DOUBLE, (dest), "PCT",                                             \
     "measure while other processes use at most PCT % of this machine: wait for quiet (up to "   \
     "60 s, TRAINCAST_QUIET_WAIT_S), measure again what was taken under more, mark what stays "  \
     "disturbed (default 10; 100 turns the guard off, the host-phase canary too; "             \
     "TRAINCAST_QUIET_PCT)"}

/* List the devices. `device` NULL: the cpu and every GPU found (a GPU that
 * cannot be opened is left out with a warning); else only that one, and
 * failing to open it is an error (a GPU the build lacks CUDA for is listed
 * undescribed). `threads` (0: every logical CPU) is the cpu's. */
int tc_agent_devices_new(const char *device, unsigned long threads, tc_agent_devices_t **out);
void tc_agent_devices_destroy(tc_agent_devices_t **self_p);

size_t tc_agent_devices_count(const tc_agent_devices_t *self);
const tc_agent_device_t *tc_agent_devices_get(const tc_agent_devices_t *self, size_t i);

/* The described devices, for the Hello (owned by the list). */
void tc_agent_devices_described(const tc_agent_devices_t *self,
                                Traincast__V1__Device *const **devices, size_t *n);

/* The device a request names by uuid. TC_ENODEV naming the devices this
 * agent has (`what` says what the agent would do, e.g. "benchmarks"). */
int tc_agent_devices_find(const tc_agent_devices_t *self, const char *uuid, const char *what,
                          const tc_agent_device_t **out);

#endif
