/* Trace jobs: the `trace` entry of the job handlers (agent/jobs.h), so
 * `agent run` and `agent serve` measure training traces the way `agent
 * trace` does, sending each TrainTrace through the spool as it finishes. */
#ifndef TC_TRACE_HANDLER_H
#define TC_TRACE_HANDLER_H

#include "jobs.h"

typedef struct tc_trace_handler tc_trace_handler_t;

/* Settings: the device to trace on (NULL: the CPU) and the runner command
 * (NULL: the PyTorch harness); both copied. */
int tc_trace_handler_new(const tc_job_settings_t *settings, tc_trace_handler_t **out);
void tc_trace_handler_destroy(tc_trace_handler_t **self_p);

/* Trace req->models at req->batches. Zero counts in the request take the
 * defaults of `agent trace` (3 warm-up, 10 measured iterations, 3
 * repeats; the model's input size). A request for a device uuid other than
 * the one traced here fails with TC_ENODEV. Traces that fail are results
 * (sent with status failed), not a failure of the job. */
int tc_trace_handler_run(tc_trace_handler_t *self, const Traincast__V1__TraceRequest *req,
                         tc_job_t *job);

#endif
