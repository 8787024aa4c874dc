/* agent run: benchmark the convs of some models, trace their training, and
 * send everything to the aggregator, in one go. What is measured is kept in
 * the state directory's results/ too, so running the same command again
 * measures only what is missing. */
#include "allocator.h"
#include "commands.h"
#include "gpu_framework.h"
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

int tc_cmd_run(int argc, char **argv)
{
    tc_session_flags_t f = {0};
    tc_job_settings_t js = {0};
    const char *models = NULL, *batches = NULL;
    unsigned long input_size = 0, warmup = 0, iters = 0, repeats = 0;
    bool no_bench = false, no_trace = false;
    double timeout_s = 300;
    const char *allocator = NULL;
    const tc_opt_t opts[] = {
        TC_SESSION_OPTS(f),
        {"models", TC_OPT_STR, &models, "LIST",
         "models: torchvision names (torchvision:resnet50 or resnet50) or .onnx files", true},
        {"batches", TC_OPT_STR, &batches, "LIST", "mini-batch sizes: 8,16,32 or 8..256", true},
        TC_JOB_SETTINGS_OPTS(js),
        TC_ALLOCATOR_OPT(allocator),
        {"input-size", TC_OPT_UINT, &input_size, "PX", "input height and width (default: the model's)"},
        {"warmup", TC_OPT_UINT, &warmup, "N", "trace warm-up iterations (default 3)"},
        {"iters", TC_OPT_UINT, &iters, "N", "trace measured iterations (default 10)"},
        {"repeats", TC_OPT_UINT, &repeats, "N", "trace repeats, each a fresh process (default 3)"},
        {"no-bench", TC_OPT_FLAG, &no_bench, NULL, "skip the conv benchmarks"},
        {"no-trace", TC_OPT_FLAG, &no_trace, NULL, "skip the training traces"},
        {"timeout", TC_OPT_DOUBLE, &timeout_s, "SECONDS",
         "after measuring, wait at most this long for acknowledgements (default 300)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent run",
        .summary = "Benchmark every conv of the models at the batch sizes, trace their training, "
                   "and send\nthe results to the aggregator as they are measured (each is "
                   "spooled first).\nResults are kept in STATE/results/ as well: the same "
                   "command again measures only what\nis missing (and sends nothing twice).",
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
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown) {
        tc_cli_result_free(&cli);
        return rc;
    }
    if ((rc = tc_allocator_apply(allocator)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    if ((rc = tc_gpu_prepare("any")) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    volatile sig_atomic_t *stop = tc_session_stop_flag();
    TC_TRY(tc_parse_name_list(models, "--models", &names, &n_names));
    TC_TRY(tc_parse_uint_list(batches, "--batches", 1, TC_MAX_BATCH, &bs, &n_bs));
    if (no_bench && no_trace)
        TC_FAIL_GOTO(TC_EUSAGE, "--no-bench and --no-trace leave nothing to do");
    if (input_size > 8192 || warmup > 10000 || iters > 10000 || repeats > 1000)
        TC_FAIL_GOTO(TC_EUSAGE, "--input-size (at most 8192), --warmup, --iters (10000) or "
                                "--repeats (1000) is too large");
    TC_TRY(tc_session_open(&f, &s));
    char results_dir[2200];
    tc_identity_results_dir(s.identity, results_dir, sizeof results_dir);
    js.results_dir = results_dir;
    TC_TRY(tc_job_handlers_builtin(&js, &handlers));
    if (!no_bench && !handlers.bench_models)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "this agent build has no conv benchmark backend (agent "
                                      "bench) yet; use --no-bench to only trace");
    if (!no_trace && !handlers.trace)
        TC_FAIL_GOTO(TC_EUNSUPPORTED, "this agent build has no trace runner (agent trace) yet; "
                                      "use --no-trace to only benchmark");

    uint32_t *b32 = calloc(n_bs, sizeof *b32);
    if (!b32)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_bs; i++)
        b32[i] = (uint32_t)bs[i];
    Traincast__V1__TraceRequest req = TRAINCAST__V1__TRACE_REQUEST__INIT;
    req.models = names;
    req.n_models = n_names;
    req.batches = b32;
    req.n_batches = n_bs;
    req.input_size = (uint32_t)input_size;
    req.warmup = (uint32_t)warmup;
    req.iters = (uint32_t)iters;
    req.repeats = (uint32_t)repeats;

    rc = tc_jobs_new(&handlers, s.spool, tc_identity_agent_id(s.identity), &jobs);
    if (rc == 0)
        rc = tc_session_connect(&s, &f, &handlers, NULL, NULL);
    if (rc == 0 && !no_bench)
        rc = s_run_job(&s, jobs, TC_JOB_BENCH_MODELS, &req, stop);
    /* Benchmarks that failed in part do not keep the traces from running;
     * the first error is the command's. */
    if (!no_trace && s.link && !*stop && (rc == 0 || rc == TC_ELIB)) {
        char first[1024];
        snprintf(first, sizeof first, "%s", tc_errmsg());
        int trc = s_run_job(&s, jobs, TC_JOB_TRACE, &req, stop);
        if (rc == 0)
            rc = trc;
        else
            tc_fail(rc, "%s", first);
    }
    free(b32);
    /* Deliver what was measured even when a job failed. */
    if (s.link) {
        int drc = tc_link_drain(s.link, (int64_t)(timeout_s * 1000.0), stop, true);
        if (rc == 0)
            rc = drc;
        tc_link_stats_t st;
        tc_link_stats(s.link, &st);
        printf("results: %llu stored, %llu already stored, %llu rejected, %zu still spooled\n",
               (unsigned long long)(st.acked - st.duplicates), (unsigned long long)st.duplicates,
               (unsigned long long)st.rejected, st.spooled);
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
