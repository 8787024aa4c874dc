/* The device a trace is recorded under. It must be the same identity the
 * conv benchmarks use for that device, so traces and benchmarks meet in
 * one device row. */
#ifndef TC_TRACE_DEVICE_H
#define TC_TRACE_DEVICE_H

#include "trace_proto.h"
#include "tc_wire.h"

#include <stdint.h>

typedef struct {
    Traincast__V1__DeviceKind kind;
    uint32_t index;           /* GPU index; 0 for the CPU */
    char name[320];
    char uuid[64];
    char host[256];
    char library[16];
    char library_version[64];
    char driver_version[64];
    char runtime_version[64];
    uint32_t multiprocessors;
    uint32_t threads;
    uint64_t memory_bytes;
    uint32_t clock_mhz;
} tc_trace_device_t;

/* Parse "cpu", "cuda" or "cuda:I". Returns 0 or TC_EINVAL. */
int tc_trace_device_parse(const char *text, Traincast__V1__DeviceKind *kind, uint32_t *index);

/* The CPU with `threads` threads: name "<CPU model> (N threads)", uuid
 * "cpu-" + 16 hex digits of a 64-bit FNV-1a hash of host, CPU model and
 * thread count, library oneDNN as this agent links it. */
void tc_trace_device_cpu(uint32_t threads, tc_trace_device_t *out);

/* GPU `index` as the runner's header describes it: its name, and its UUID
 * when the framework reports one (else "cuda-" + a hash of host, name and
 * index). */
void tc_trace_device_cuda(uint32_t index, const tc_trace_output_t *header,
                          tc_trace_device_t *out);

/* The wire form; points into `dev`, which must outlive `out`. */
void tc_trace_device_to_proto(const tc_trace_device_t *dev, Traincast__V1__Device *out);

#endif
