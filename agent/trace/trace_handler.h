/* Trace jobs: the `trace` entry of the job handlers (agent/jobs/jobs.h), so
 * `agent run` and `agent serve` measure training traces the way `agent
 * trace` does, sending each TrainTrace through the spool as it finishes.
 *
 * With a results directory (the state directory's results/), each device
 * has its result file there, trace-<device uuid>.tcr (agent/jobs/job_results.h):
 * traces it holds (ok or out of memory) are not measured again. A trace a
 * TraceRequest asks for that the file holds already is sent again under its
 * message id (the aggregator stores it once). */
#ifndef TC_TRACE_HANDLER_H
#define TC_TRACE_HANDLER_H

#include "agent_devices.h"
#include "jobs.h"

typedef struct tc_trace_handler tc_trace_handler_t;

/* Settings: the runner command (NULL: the PyTorch harness), the policy
 * (exhaustive: train with cudnn.benchmark on) and the results directory;
 * copied. */
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
