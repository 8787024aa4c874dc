/* The job handlers this build has: the place where the device layer (conv
 * benchmarks) and the trace runner plug into `agent serve` and `agent run`.
 *
 * Each entry of tc_job_handlers_t left NULL makes the matching job fail with
 * a message saying this build lacks it; nothing is faked. Wiring a module in
 * is a few lines here: add its state to s_ctx_t (built from `settings`),
 * point devices/bench/bench_models/trace at functions with the signatures of
 * agent/jobs.h, and free its state in s_destroy. */
#include "jobs.h"

#include "tc_error.h"
#include "trace_handler.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_trace_handler_t *trace;
} s_ctx_t;

static int s_trace(void *ctx, const Traincast__V1__TraceRequest *req, tc_job_t *job)
{
    return tc_trace_handler_run(((s_ctx_t *)ctx)->trace, req, job);
}

static void s_destroy(void *ctx)
{
    s_ctx_t *c = ctx;
    if (!c)
        return;
    tc_trace_handler_destroy(&c->trace);
    free(c);
}

int tc_job_handlers_builtin(const tc_job_settings_t *settings, tc_job_handlers_t *out)
{
    memset(out, 0, sizeof *out);
    s_ctx_t *c = calloc(1, sizeof *c);
    if (!c)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = tc_trace_handler_new(settings, &c->trace);
    if (rc < 0) {
        s_destroy(c);
        return rc;
    }
    out->ctx = c;
    out->trace = s_trace;
    out->destroy = s_destroy;
    return 0;
}
