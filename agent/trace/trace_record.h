/* A measured trace as the TrainTrace envelope written to a result file,
 * and the key that makes `agent trace` resumable. */
#ifndef TC_TRACE_RECORD_H
#define TC_TRACE_RECORD_H

#include "trace_device.h"
#include "trace_run.h"

#include <stddef.h>

typedef struct {
    const tc_trace_job_t *job;
    const char *model_id;
    const tc_trace_device_t *device;
    const Traincast__V1__ModelGraph *graph; /* NULL: none attached */
    const char *runner;                     /* what ran, for the record */
    const tc_trace_result_t *result;
} tc_trace_record_t;

/* Build and validate (common/wire/tc_validate.h) one envelope stamped with
 * `agent_id`, and hand it to `emit` (which must not keep it). */
int tc_trace_record_emit(const tc_trace_record_t *rec, const char *agent_id,
                         int (*emit)(tc_envelope_t *env, void *arg), void *arg);

/* What identifies a trace for resuming: model id, batch, dtype, amp,
 * optimizer, policy and the device (kind, index, threads). */
void tc_trace_key(const Traincast__V1__TrainTrace *t, char *out, size_t size);

/* The key a planned trace will have once written. */
void tc_trace_plan_key(const tc_trace_job_t *job, const char *model_id,
                       Traincast__V1__DeviceKind kind, uint32_t index, char *out, size_t size);

#endif
