/* Benchmark jobs: the `bench` entry of the job handlers (a BenchRequest's
 * conv configs and matmul configs, sent by the aggregator to `agent serve`,
 * results as `agent bench` sends them: matmuls in matmul_results) and the
 * `bench_models` one (every conv of some models at some batch sizes, for
 * `agent run`, as `agent bench --models` plans them). Items run on the
 * device layer through the bench runner; every ConvResults goes to the
 * journal as it is measured.
 *
 * With keep_results, each device and policy keeps its results in the
 * journal as bench-<device uuid>-<policy> (tc_job_keep): items kept there
 * are not measured again. An item a BenchRequest asks for that was kept
 * before is sent again under its message id (the aggregator stores it
 * once), so a request is answered even when the store lost or never got
 * the result. */
#ifndef TC_BENCH_JOBS_H
#define TC_BENCH_JOBS_H

#include "agent_devices.h"
#include "jobs.h"

typedef struct tc_bench_jobs tc_bench_jobs_t;

/* Check the settings' policy and measurement budget (errors name the
 * flag); the strings are copied. */
int tc_bench_jobs_new(const tc_job_settings_t *settings, tc_bench_jobs_t **out);
void tc_bench_jobs_destroy(tc_bench_jobs_t **self_p);

/* The policy of benchmarks (and of traces: exhaustive = cudnn.benchmark). */
Traincast__V1__Policy tc_bench_jobs_policy(const tc_bench_jobs_t *self);

/* Measure req->configs (n set) and req->matmuls (minibatch set) in
 * req->directions (none: all three) under req->policy (unspecified: the
 * agent's) on `dev`. Matmuls on a device whose backend benchmarks none
 * are not measured: the convs are, then TC_EUNSUPPORTED says how many
 * matmul items were left and why. */
int tc_bench_jobs_request(tc_bench_jobs_t *self, const tc_agent_device_t *dev,
                          const Traincast__V1__BenchRequest *req, tc_job_t *job);

/* Measure every conv of req->models (at req->input_size) at req->batches on
 * each of devs[0..n), without backward-data where no gradient flows to the
 * input. */
int tc_bench_jobs_models(tc_bench_jobs_t *self, const tc_agent_device_t *const *devs, size_t n,
                         const Traincast__V1__TraceRequest *req, tc_job_t *job);

#endif
