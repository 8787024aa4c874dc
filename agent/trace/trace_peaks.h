/* What the traces of a device say about the memory training takes: the
 * largest peak per batch size, which leaves the rest of the device's memory
 * to a conv's workspace (agent/bench/bench_run.h). */
#ifndef TC_TRACE_PEAKS_H
#define TC_TRACE_PEAKS_H

#include <stddef.h>
#include <stdint.h>

/* The largest peak memory of the training traces of one batch size. */
typedef struct {
    uint32_t batch;
    uint64_t peak_bytes;
} tc_trace_peak_t;

/* The largest peak memory per batch of the successful traces of the device
 * with this uuid in result files `paths` (comma-separated). *peaks is
 * malloc'ed (caller frees). A missing file is an error naming it. */
int tc_trace_peaks_load(const char *paths, const char *device_uuid, tc_trace_peak_t **peaks,
                        size_t *n);

#endif
