/* Trace jobs: the `trace` entry of the job handlers (agent/jobs/jobs.h), so
 * `agent run` and `agent serve` measure training traces the way `agent
 * trace` does, sending each TrainTrace through the journal as it finishes.
 *
 * With keep_results, each device's traces are kept in the journal as the
 * results of trace-<device uuid> (tc_job_keep): traces kept there (ok or out
 * of memory) are not measured again. A trace a TraceRequest asks for that
 * was kept before is sent again under its message id (the aggregator stores
 * it once). */
#ifndef TC_TRACE_HANDLER_H
#define TC_TRACE_HANDLER_H

#include "agent_devices.h"
#include "jobs.h"

typedef struct tc_trace_handler tc_trace_handler_t;

/* Settings: the runner command (NULL: the PyTorch harness), the policy
 * (exhaustive: train with cudnn.benchmark on) and keep_results; copied. */
int tc_trace_handler_new(const tc_job_settings_t *settings, tc_trace_handler_t **out);
void tc_trace_handler_destroy(tc_trace_handler_t **self_p);

/* Trace req->models at req->batches on `dev` (the cpu with its thread
 * count, or a GPU). Zero counts in the request take the defaults of `agent
 * trace` (3 warm-up, 10 measured iterations, 3 repeats; the model's input
 * size). Traces that fail are results (sent with status failed), not a
 * failure of the job. */
int tc_trace_handler_run(tc_trace_handler_t *self, const tc_agent_device_t *dev,
                         const Traincast__V1__TraceRequest *req, tc_job_t *job);

#endif
