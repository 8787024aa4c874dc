/* The device a trace is recorded under: the identity the device layer
 * (agent/devices/device.h) gives the conv benchmarks of that device, so traces and
 * benchmarks meet in one device row. */
#ifndef TC_TRACE_DEVICE_H
#define TC_TRACE_DEVICE_H

#include "device.h"
#include "trace_proto.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stdint.h>

/* A copy of a Device message's fields, and the device's environment. */
typedef struct {
    Traincast__V1__DeviceKind kind;
    uint32_t index;           /* GPU index; 0 for the CPU */
    char name[512];
    char uuid[128];
    char compute_capability[16];
    uint32_t multiprocessors;
    uint32_t threads;
    uint64_t memory_bytes;
    uint32_t clock_mhz;
    uint32_t memory_clock_mhz;
    char driver_version[128];
    char runtime_version[128];
    char library[16];
    char library_version[64];
    char host[256];
    tc_device_env_t env; /* allocator, BLAS, framework (CPU) */
} tc_trace_device_t;

/* Parse "cpu", "cuda" or "cuda:I". Returns 0 or TC_EINVAL. */
int tc_trace_device_parse(const char *text, Traincast__V1__DeviceKind *kind, uint32_t *index);

/* Open `spec` with the device layer (`threads` for the CPU, 0 = all),
 * copy its description and close it again, so the agent holds no device
 * while the runner trains. Errors are the device layer's (e.g. more
 * threads than CPUs, no such GPU). */
int tc_trace_device_describe(const char *spec, uint32_t threads, tc_trace_device_t *out);

/* GPU `index` as the runner's header describes it, for when this agent
 * build cannot open the GPU itself (built without CUDA): its name, and its
 * UUID when the framework reports one, else "cuda-" + a hash of host, name
 * and index. */
void tc_trace_device_from_header(uint32_t index, const tc_trace_output_t *header,
                                 tc_trace_device_t *out);

/* The wire form; points into `dev`, which must outlive `out`. */
void tc_trace_device_to_proto(const tc_trace_device_t *dev, Traincast__V1__Device *out);

#endif
