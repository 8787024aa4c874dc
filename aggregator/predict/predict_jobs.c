/* Filling in conv benchmarks a prediction lacks. */
#include "predict_output.h"

#include "store_server.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct batches with a missing lookup, comma-separated. */
static void s_missing_batches(const tc_pred_device_t *d, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t used = 0;
    uint32_t last = 0;
    for (size_t i = 0; i < d->n_lookups; i++) {
        const tc_conv_lookup_t *l = &d->lookups[i];
        if (isfinite(l->median_ms) || l->config.n == last)
            continue;
        /* Lookups are batch-major, so each batch shows up in one run. */
        last = l->config.n;
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%u", used ? "," : "", last);
    }
}

/* Distinct configs (without batch and direction) that lack a measurement. */
static size_t s_missing_configs(const tc_pred_device_t *d)
{
    size_t count = 0;
    for (size_t i = 0; i < d->n_lookups; i++) {
        const tc_conv_lookup_t *l = &d->lookups[i];
        if (isfinite(l->median_ms))
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const tc_conv_lookup_t *o = &d->lookups[j];
            tc_conv_config_t a = l->config, b = o->config;
            a.n = b.n = 0;
            seen = !isfinite(o->median_ms) && tc_conv_config_cmp(&a, &b) == 0;
        }
        count += !seen;
    }
    return count;
}

void tc_predict_bench_command(const tc_pred_device_t *d, const tc_pred_request_t *req,
                              const char *model_spec, char *buf, size_t size)
{
    char batches[256];
    s_missing_batches(d, batches, sizeof batches);
    char device[64];
    if (!strcmp(d->device.kind, "cuda"))
        snprintf(device, sizeof device, "--device cuda:%d", d->device.gpu_index);
    else
        snprintf(device, sizeof device, "--device cpu --threads %u", d->device.threads);
    const char *policy = *d->fit.conv_policy ? d->fit.conv_policy : "heuristic";
    /* An input size other than the model's own changes its convs. */
    char input[64] = "";
    if (req->input_size)
        snprintf(input, sizeof input, " --input-size %u", req->input_size);
    snprintf(buf, size,
             "agent bench --models %s%s --batches %s %s --policy %s --out missing.tcr && "
             "agent push --aggregator tcp://AGGREGATOR:5555 missing.tcr",
             model_spec, input, batches, device, policy);
}

/* Queue BenchRequests (one per direction) for what `d` lacks, on any
 * device of its name. Job ids go to ids[*n_ids...]. */
static int s_enqueue(tc_store_t *s, tc_pred_device_t *d, const char *model_spec, char ids[][TC_MSGID_LEN + 1],
                     size_t *n_ids)
{
    Traincast__V1__Policy policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    if (*d->fit.conv_policy)
        tc_policy_parse(d->fit.conv_policy, &policy);
    static const Traincast__V1__Direction dirs[] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                                    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
                                                    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA};
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++) {
        size_t n = 0;
        for (size_t i = 0; i < d->n_lookups; i++)
            n += !isfinite(d->lookups[i].median_ms) && d->lookups[i].direction == dirs[k];
        if (n == 0)
            continue;
        Traincast__V1__ConvConfig *cfgs = calloc(n, sizeof *cfgs);
        Traincast__V1__ConvConfig **ptrs = calloc(n, sizeof *ptrs);
        if (!cfgs || !ptrs) {
            free(cfgs);
            free(ptrs);
            return tc_fail(TC_ENOMEM, "out of memory");
        }
        size_t j = 0;
        for (size_t i = 0; i < d->n_lookups; i++) {
            const tc_conv_lookup_t *l = &d->lookups[i];
            if (isfinite(l->median_ms) || l->direction != dirs[k])
                continue;
            Traincast__V1__ConvConfig init = TRAINCAST__V1__CONV_CONFIG__INIT;
            cfgs[j] = init;
            tc_conv_config_to_proto(&l->config, &cfgs[j]);
            ptrs[j] = &cfgs[j];
            j++;
        }
        Traincast__V1__BenchRequest req = TRAINCAST__V1__BENCH_REQUEST__INIT;
        Traincast__V1__Direction dir = dirs[k];
        req.n_configs = n;
        req.configs = ptrs;
        req.n_directions = 1;
        req.directions = &dir;
        req.policy = policy;
        size_t len = traincast__v1__bench_request__get_packed_size(&req);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf) {
            rc = tc_fail(TC_ENOMEM, "out of memory");
        } else {
            traincast__v1__bench_request__pack(&req, buf);
            char summary[512];
            snprintf(summary, sizeof summary, "%zu %s conv benchmarks for predict --model %s", n,
                     tc_direction_name(dir), model_spec);
            rc = tc_store_job_enqueue(s, "bench", d->device.name, NULL, buf, len, summary,
                                      ids[*n_ids]);
            if (rc == 0)
                (*n_ids)++;
        }
        free(buf);
        free(cfgs);
        free(ptrs);
    }
    return rc;
}

typedef struct {
    char (*ids)[TC_MSGID_LEN + 1];
    tc_store_job_status_t *st;
    size_t n;
    tc_progress_t *bar;
} s_wait_t;

static void s_on_job(void *arg, const char *job_id, const tc_store_job_status_t *st)
{
    s_wait_t *w = arg;
    uint64_t done = 0, total = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (!strcmp(w->ids[i], job_id))
            w->st[i] = *st;
        done += w->st[i].done;
        total += w->st[i].total;
    }
    if (w->bar && total)
        tc_progress_update(w->bar, done * 1000 / total, st->message[0] ? st->message : st->state);
}

int tc_predict_fill_missing(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                            size_t n, unsigned wait_s, const char *model_spec)
{
    /* Ask: every incomplete device with an agent online gets its jobs. */
    char (*ids)[TC_MSGID_LEN + 1] = calloc(3 * n + 1, sizeof *ids);
    tc_store_job_status_t *st = calloc(3 * n + 1, sizeof *st);
    size_t n_ids = 0;
    int rc = (!ids || !st) ? tc_fail(TC_ENOMEM, "out of memory") : 0;
    bool *asked = calloc(n + 1, sizeof *asked);
    if (!asked && rc == 0)
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK || d->missing == 0 || wait_s == 0)
            continue;
        int agents = 0;
        rc = tc_store_device_online(s, d->device.name, 30, &agents);
        if (rc == 0 && agents > 0) {
            tc_log_info("device '%s' lacks %zu conv benchmarks for this model: asking %d "
                        "connected agent(s) to measure them",
                        d->device.name, d->missing, agents);
            rc = s_enqueue(s, d, model_spec, ids, &n_ids);
            asked[i] = true;
        }
    }
    if (rc == 0 && n_ids > 0) {
        s_wait_t w = {ids, st, n_ids, tc_progress_new("benchmarking missing convs", 1000)};
        const char **id_ptrs = calloc(n_ids, sizeof *id_ptrs);
        if (!id_ptrs)
            rc = tc_fail(TC_ENOMEM, "out of memory");
        for (size_t i = 0; id_ptrs && i < n_ids; i++)
            id_ptrs[i] = ids[i];
        if (rc == 0)
            rc = tc_store_job_wait(s, id_ptrs, n_ids, (int)wait_s * 1000, s_on_job, &w);
        free(id_ptrs);
        tc_progress_destroy(&w.bar);
        if (rc == TC_ETIMEOUT) {
            tc_log_warn("the benchmark jobs did not finish within --wait %u s; predicting what "
                        "is measured (they go on running, run predict again later)",
                        wait_s);
            rc = 0;
        }
        if (rc == 0)
            rc = tc_predict_lookup_all(s, req, devs, n, asked);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK || d->missing == 0)
            continue;
        char cmd[768], where[1024] = "";
        tc_predict_bench_command(d, req, model_spec, cmd, sizeof cmd);
        /* A file is read where the command runs: it must be there first. */
        if (strncmp(model_spec, "torchvision:", 12) != 0)
            snprintf(where, sizeof where, " (with %s copied to that host at that path first)",
                     model_spec);
        size_t configs = s_missing_configs(d);
        snprintf(d->note, sizeof d->note,
                 "%zu conv config%s lack%s benchmarks: %zu measurement%s in all (one per "
                 "config, pass and batch)%s; on %s run%s: %s",
                 configs, configs == 1 ? "" : "s", configs == 1 ? "s" : "", d->missing,
                 d->missing == 1 ? "" : "s",
                 asked[i] ? ", and its agents did not measure them in time"
                 : wait_s ? ", and no agent of this device is online to measure them"
                          : "",
                 *d->device.hosts ? d->device.hosts : "its host", where, cmd);
        tc_log_warn("device '%s': %s", d->device.name, d->note);
    }
    free(ids);
    free(st);
    free(asked);
    return rc;
}
