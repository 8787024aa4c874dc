/* agent run: benchmark the convs of some models, trace their training, and
 * send everything to the aggregator, in one go. What is measured is kept in
 * the state directory's results/ too, so running the same command again
 * measures only what is missing. */
#include "agent_devices.h"
#include "allocator.h"
#include "commands.h"
#include "session.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_validate.h"
#include "tc_log.h"

#include <stdio.h>
#include <stdlib.h>

/* Run one local job while the link delivers its results as they come. */
static int s_run_job(tc_session_t *s, tc_jobs_t *jobs, tc_job_kind_t kind,
                     const Traincast__V1__TraceRequest *req, volatile sig_atomic_t *stop)
{
    int rc = tc_jobs_submit_local(jobs, kind, req);
    if (rc < 0)
        return rc;
    int status = 0;
    char msg[1024];
    for (;;) {
        if (*stop)
            tc_jobs_cancel(jobs);
        if ((rc = tc_link_step(s->link, 200)) < 0) {
            tc_jobs_cancel(jobs);
            while (tc_jobs_busy(jobs))
                tc_link_step(s->link, 100);
            return rc;
        }
        if (tc_jobs_take_result(jobs, &status, msg, sizeof msg))
            break;
    }
    if (status < 0)
        return tc_fail(status, "%s", msg);
    return 0;
}

/* The command's parsed options besides the session's and the job
 * settings (the strings point into the parsed command line: valid until
 * tc_cli_result_free). */
typedef struct {
    const char *models, *batches, *allocator;
    unsigned long input_size, warmup, iters, repeats;
    bool no_bench, no_trace;
    double timeout_s;
} s_run_args_t;

/* Parse --models and --batches (*names and *bs are the caller's to free)
 * and check the other options: TC_EUSAGE when they leave nothing to do or
 * a number is too large. */
static int s_parse(const s_run_args_t *a, char ***names, size_t *n_names, unsigned long **bs,
                   size_t *n_bs)
{
    int rc;
    TC_TRY(tc_parse_name_list(a->models, "--models", names, n_names));
    TC_TRY(tc_parse_uint_list(a->batches, "--batches", 1, TC_MAX_BATCH, bs, n_bs));
    if (a->no_bench && a->no_trace)
        TC_FAIL_GOTO(TC_EUSAGE, "--no-bench and --no-trace leave nothing to do");
    if (a->input_size > 8192 || a->warmup > 10000 || a->iters > 10000 || a->repeats > 1000)
        TC_FAIL_GOTO(TC_EUSAGE, "--input-size (at most 8192), --warmup, --iters (10000) or "
                                "--repeats (1000) is too large");
err:
    return rc;
}

/* The built-in job handlers (the caller's to release), keeping what they
 * measure in the journal; TC_EUNSUPPORTED when this build lacks one the
 * command needs. */
static int s_handlers(const tc_job_settings_t *js, const s_run_args_t *a,
                      tc_job_handlers_t *handlers)
{
    int rc;
    tc_job_settings_t settings = *js;
    settings.keep_results = true;
    TC_TRY(tc_job_handlers_builtin(&settings, handlers));
    if (!a->no_bench && !handlers->bench_models)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "this agent build has no conv benchmark backend (agent "
                                      "bench) yet; use --no-bench to only trace");
    if (!a->no_trace && !handlers->trace)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "this agent build has no trace runner (agent trace) yet; "
                                      "use --no-trace to only benchmark");
err:
    return rc;
}

/* The request of both jobs: the models, the batches (req->batches is
 * malloc'ed, the caller's to free) and the trace settings. */
static int s_request(const s_run_args_t *a, char **names, size_t n_names,
                     const unsigned long *bs, size_t n_bs, Traincast__V1__TraceRequest *req)
{
    int rc = 0;
    uint32_t *b32 = calloc(n_bs, sizeof *b32);
    if (!b32)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_bs; i++)
        b32[i] = (uint32_t)bs[i];
    req->models = names;
    req->n_models = n_names;
    req->batches = b32;
    req->n_batches = n_bs;
    req->input_size = (uint32_t)a->input_size;
    req->warmup = (uint32_t)a->warmup;
    req->iters = (uint32_t)a->iters;
    req->repeats = (uint32_t)a->repeats;
err:
    return rc;
}

/* Start the job runner (*jobs, the caller's to destroy), connect, and run
 * the benchmarks, then the traces, unless skipped. Benchmarks that failed
 * in part do not keep the traces from running; the first error is the
 * result. */
static int s_run_jobs(tc_session_t *s, const tc_session_flags_t *f,
                      const tc_job_handlers_t *handlers, const Traincast__V1__TraceRequest *req,
                      const s_run_args_t *a, volatile sig_atomic_t *stop, tc_jobs_t **jobs)
{
    int rc = tc_jobs_new(handlers, s->journal, tc_identity_agent_id(s->identity), jobs);
    if (rc == 0)
        rc = tc_session_connect(s, f, handlers, NULL, NULL);
    if (rc == 0 && !a->no_bench)
        rc = s_run_job(s, *jobs, TC_JOB_BENCH_MODELS, req, stop);
    if (!a->no_trace && s->link && !*stop && (rc == 0 || rc == TC_ELIB)) {
        char first[1024];
        snprintf(first, sizeof first, "%s", tc_errmsg());
        int trc = s_run_job(s, *jobs, TC_JOB_TRACE, req, stop);
        if (rc == 0)
            rc = trc;
        else
            tc_fail(rc, "%s", first);
    }
    return rc;
}

/* Wait at most timeout_s for the acknowledgements of what waits and
 * print what became of it; the wait's status. */
static int s_deliver(tc_link_t *link, double timeout_s, volatile sig_atomic_t *stop)
{
    int drc = tc_link_drain(link, (int64_t)(timeout_s * 1000.0), stop, true);
    tc_link_stats_t st;
    tc_link_stats(link, &st);
    printf("results: %llu stored, %llu already stored, %llu rejected, %zu still waiting\n",
           (unsigned long long)(st.acked - st.duplicates), (unsigned long long)st.duplicates,
           (unsigned long long)st.rejected, st.waiting);
    return drc;
}

int tc_cmd_run(int argc, char **argv)
{
    tc_session_flags_t f = {0};
    tc_job_settings_t js = {0};
    s_run_args_t a = {.timeout_s = 300};
    double quiet_pct = 0;
    const tc_opt_t opts[] = {
        TC_SESSION_OPTS(f),
        {"models", TC_OPT_STR, &a.models, "LIST",
         "models: torchvision names (torchvision:resnet50 or resnet50), FILE.py:FUNC (the "
         "model that function of a Python file builds) or .onnx files",
         true},
        {"batches", TC_OPT_STR, &a.batches, "LIST", "mini-batch sizes: 8,16,32 or 8..256", true},
        TC_JOB_SETTINGS_OPTS(js),
        TC_ALLOCATOR_OPT(a.allocator),
        {"input-size", TC_OPT_UINT, &a.input_size, "PX", "input height and width (default: the model's)"},
        {"warmup", TC_OPT_UINT, &a.warmup, "N", "trace warm-up iterations (default 3)"},
        {"iters", TC_OPT_UINT, &a.iters, "N", "trace measured iterations (default 10)"},
        {"repeats", TC_OPT_UINT, &a.repeats, "N", "trace repeats, each a fresh process (default 3)"},
        {"no-bench", TC_OPT_FLAG, &a.no_bench, NULL, "skip the conv benchmarks"},
        {"no-trace", TC_OPT_FLAG, &a.no_trace, NULL, "skip the training traces"},
        {"timeout", TC_OPT_DOUBLE, &a.timeout_s, "SECONDS",
         "after measuring, wait at most this long for acknowledgements (default 300)"},
        TC_QUIET_OPT(&quiet_pct),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent run",
        .summary = "Benchmark every conv of the models at the batch sizes, trace their training, "
                   "and send\nthe results to the aggregator as they are measured. Results are "
                   "kept in the agent's\njournal (STATE/journal): the same command again "
                   "measures only what is missing\n(and sends nothing twice).",
        .max_positional = 0,
        .config_file = true,
        .opts = opts,
    };
    tc_cli_result_t cli;
    tc_session_t s = {0};
    tc_job_handlers_t handlers = {0};
    tc_jobs_t *jobs = NULL;
    char **names = NULL;
    size_t n_names = 0;
    unsigned long *bs = NULL;
    size_t n_bs = 0;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    if ((rc = tc_agent_prepare(a.allocator, tc_cli_given(&spec, "quiet-threshold"), quiet_pct)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    volatile sig_atomic_t *stop = tc_session_stop_flag();
    TC_TRY(s_parse(&a, &names, &n_names, &bs, &n_bs));
    TC_TRY(tc_session_open(&f, &s));
    TC_TRY(s_handlers(&js, &a, &handlers));
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    TC_TRY(s_request(&a, names, n_names, bs, n_bs, &req));
    rc = s_run_jobs(&s, &f, &handlers, &req, &a, stop, &jobs);
    free(req.batches);
    /* Deliver what was measured even when a job failed. */
    if (s.link) {
        int drc = s_deliver(s.link, a.timeout_s, stop);
        if (rc == 0)
            rc = drc;
    }
err:
    tc_jobs_destroy(&jobs);
    tc_session_close(&s);
    tc_job_handlers_release(&handlers);
    tc_free_strv(names, n_names);
    free(bs);
    tc_cli_result_free(&cli);
    return rc;
}
