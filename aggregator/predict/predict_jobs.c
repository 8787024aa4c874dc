/* Filling in the benchmarks (convs and matmuls) a prediction lacks. */
#include "predict_output.h"

#include "store_server.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The batch of a lookup of either kind. */
static uint32_t s_batch(const tc_conv_lookup_t *l)
{
    return l->kind == TC_OP_MATMUL ? l->matmul.minibatch : l->config.n;
}

/* A lookup that was asked for and not found. */
static bool s_missing(const tc_conv_lookup_t *l)
{
    return !l->skip && !isfinite(l->median_ms);
}

static int s_u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Distinct batches with a missing lookup of either kind, ascending,
 * comma-separated. */
static int s_missing_batches(const tc_pred_device_t *d, char *buf, size_t size)
{
    buf[0] = '\0';
    uint32_t *b = malloc((d->n_lookups ? d->n_lookups : 1) * sizeof *b);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n = 0, used = 0;
    for (size_t i = 0; i < d->n_lookups; i++)
        if (s_missing(&d->lookups[i]))
            b[n++] = s_batch(&d->lookups[i]);
    qsort(b, n, sizeof *b, s_u32_cmp);
    for (size_t i = 0; i < n; i++) {
        if ((i && b[i] == b[i - 1]) || used >= size)
            continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%u", used ? "," : "", b[i]);
    }
    free(b);
    return 0;
}

static int s_conv_key_cmp(const void *a, const void *b)
{
    return tc_conv_config_cmp(a, b);
}

static int s_matmul_key_cmp(const void *a, const void *b)
{
    return tc_matmul_key_cmp(a, b);
}

int tc_predict_missing_count(const tc_pred_device_t *d, tc_pred_missing_t *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = d->n_lookups ? d->n_lookups : 1;
    tc_conv_config_t *convs = malloc(cap * sizeof *convs);
    tc_matmul_config_t *mms = malloc(cap * sizeof *mms);
    if (!convs || !mms) {
        free(convs);
        free(mms);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < d->n_lookups; i++) {
        const tc_conv_lookup_t *l = &d->lookups[i];
        if (!s_missing(l))
            continue;
        /* A config apart from its batch and direction. */
        if (l->kind == TC_OP_MATMUL) {
            mms[out->matmul_items++] = l->matmul;
        } else {
            convs[out->conv_items] = l->config;
            convs[out->conv_items++].n = 0;
        }
    }
    qsort(convs, out->conv_items, sizeof *convs, s_conv_key_cmp);
    qsort(mms, out->matmul_items, sizeof *mms, s_matmul_key_cmp);
    for (size_t i = 0; i < out->conv_items; i++)
        out->conv_configs += i == 0 || tc_conv_config_cmp(&convs[i - 1], &convs[i]) != 0;
    for (size_t i = 0; i < out->matmul_items; i++)
        out->matmul_configs += i == 0 || tc_matmul_key_cmp(&mms[i - 1], &mms[i]) != 0;
    free(convs);
    free(mms);
    return 0;
}

int tc_predict_bench_command(const tc_pred_device_t *d, const tc_pred_request_t *req,
                             const char *model_spec, char *buf, size_t size)
{
    char batches[256];
    tc_pred_missing_t m;
    int rc = s_missing_batches(d, batches, sizeof batches);
    if (rc == 0)
        rc = tc_predict_missing_count(d, &m);
    if (rc < 0)
        return rc;
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
             "agent bench --models %s%s --batches %s %s%s --policy %s --out missing.tcr && "
             "agent push --aggregator tcp://AGGREGATOR:5555 missing.tcr",
             model_spec, input, batches, device, m.matmul_items ? " --ops all" : "", policy);
    return 0;
}

int tc_predict_missing_note(const tc_pred_device_t *d, const tc_pred_request_t *req,
                            const char *model_spec, const char *why, char *buf, size_t size)
{
    char cmd[768], where[1024] = "";
    tc_pred_missing_t m;
    int rc = tc_predict_bench_command(d, req, model_spec, cmd, sizeof cmd);
    if (rc == 0)
        rc = tc_predict_missing_count(d, &m);
    if (rc < 0)
        return rc;
    /* A file is read where the command runs: it must be there first. */
    if (strncmp(model_spec, "torchvision:", 12) != 0)
        snprintf(where, sizeof where, " (with %s copied there at that path first)", model_spec);
    /* "11 conv configs and 3 matmul configs lack benchmarks: 32 conv and
     * 6 matmul measurements in all"; one kind alone names its count. */
    char configs[128] = "", items[128];
    size_t used = 0;
    if (m.conv_configs)
        used += (size_t)snprintf(configs, sizeof configs, "%zu conv config%s", m.conv_configs,
                                 m.conv_configs == 1 ? "" : "s");
    if (m.matmul_configs)
        snprintf(configs + used, sizeof configs - used, "%s%zu matmul config%s",
                 used ? " and " : "", m.matmul_configs, m.matmul_configs == 1 ? "" : "s");
    bool one = m.conv_configs + m.matmul_configs == 1;
    size_t total = m.conv_items + m.matmul_items;
    if (m.conv_items && m.matmul_items)
        snprintf(items, sizeof items, "%zu conv and %zu matmul measurements", m.conv_items,
                 m.matmul_items);
    else
        snprintf(items, sizeof items, "%zu measurement%s", total, total == 1 ? "" : "s");
    snprintf(buf, size,
             "%s lack%s benchmarks: %s in all (one per config, pass and batch)%s; on %s%s run: "
             "%s",
             configs, one ? "s" : "", items, why ? why : "",
             *d->device.hosts ? d->device.hosts : "its host", where, cmd);
    return 0;
}

int tc_predict_bench_request(const tc_pred_device_t *d, Traincast__V1__Direction dir,
                             uint8_t **buf, size_t *len, size_t *n_convs, size_t *n_matmuls)
{
    *buf = NULL;
    *len = *n_convs = *n_matmuls = 0;
    for (size_t i = 0; i < d->n_lookups; i++) {
        const tc_conv_lookup_t *l = &d->lookups[i];
        if (s_missing(l) && l->direction == dir)
            (l->kind == TC_OP_MATMUL ? (*n_matmuls)++ : (*n_convs)++);
    }
    if (*n_convs + *n_matmuls == 0)
        return 0;
    Traincast__V1__Policy policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    if (*d->fit.conv_policy)
        tc_policy_parse(d->fit.conv_policy, &policy);
    Traincast__V1__ConvConfig *cfgs = calloc(*n_convs + 1, sizeof *cfgs);
    Traincast__V1__ConvConfig **cptrs = calloc(*n_convs + 1, sizeof *cptrs);
    Traincast__V1__MatmulConfig *mms = calloc(*n_matmuls + 1, sizeof *mms);
    Traincast__V1__MatmulConfig **mptrs = calloc(*n_matmuls + 1, sizeof *mptrs);
    int rc = 0;
    if (!cfgs || !cptrs || !mms || !mptrs)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    size_t c = 0, m = 0;
    for (size_t i = 0; i < d->n_lookups; i++) {
        const tc_conv_lookup_t *l = &d->lookups[i];
        if (!s_missing(l) || l->direction != dir)
            continue;
        if (l->kind == TC_OP_MATMUL) {
            traincast__v1__matmul_config__init(&mms[m]);
            tc_matmul_config_to_proto(&l->matmul, &mms[m]);
            mptrs[m] = &mms[m];
            m++;
        } else {
            traincast__v1__conv_config__init(&cfgs[c]);
            tc_conv_config_to_proto(&l->config, &cfgs[c]);
            cptrs[c] = &cfgs[c];
            c++;
        }
    }
    Traincast__V1__BenchRequest req = TRAINCAST__V1__BENCH_REQUEST__INIT;
    req.n_configs = c;
    req.configs = cptrs;
    req.n_matmuls = m;
    req.matmuls = mptrs;
    req.n_directions = 1;
    req.directions = &dir;
    req.policy = policy;
    *len = traincast__v1__bench_request__get_packed_size(&req);
    if (!(*buf = malloc(*len ? *len : 1)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    traincast__v1__bench_request__pack(&req, *buf);
err:
    free(cfgs);
    free(cptrs);
    free(mms);
    free(mptrs);
    return rc;
}

/* Queue BenchRequests (one per direction, its convs and matmuls) for what
 * `d` lacks, on any device of its name. Job ids go to ids[*n_ids...]. */
static int s_enqueue(tc_store_t *s, tc_pred_device_t *d, const char *model_spec, char ids[][TC_MSGID_LEN + 1],
                     size_t *n_ids)
{
    static const Traincast__V1__Direction dirs[] = {TRAINCAST__V1__DIRECTION__DIRECTION_FWD,
                                                    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER,
                                                    TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA};
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++) {
        uint8_t *buf = NULL;
        size_t len = 0, convs = 0, matmuls = 0;
        rc = tc_predict_bench_request(d, dirs[k], &buf, &len, &convs, &matmuls);
        if (rc == 0 && buf) {
            const char *dir = tc_direction_name(dirs[k]);
            char what[128], summary[512];
            if (convs && matmuls)
                snprintf(what, sizeof what, "%zu %s conv and %zu %s matmul", convs, dir, matmuls,
                         dir);
            else
                snprintf(what, sizeof what, "%zu %s %s", convs + matmuls, dir,
                         convs ? "conv" : "matmul");
            snprintf(summary, sizeof summary, "%s benchmarks for predict --model %s", what,
                     model_spec);
            rc = tc_store_job_enqueue(s, "bench", d->device.name, NULL, buf, len, summary,
                                      ids[*n_ids]);
            if (rc == 0)
                (*n_ids)++;
        }
        free(buf);
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
    /* Device i's jobs are ids[first[i] .. first[i + 1]). */
    size_t *first = calloc(n + 1, sizeof *first);
    if ((!asked || !first) && rc == 0)
        rc = tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        first[i] = first[i + 1] = n_ids;
        if (d->status != TC_PRED_OK || d->missing == 0 || wait_s == 0)
            continue;
        int agents = 0;
        rc = tc_store_device_online(s, d->device.name, 30, &agents);
        if (rc == 0 && agents > 0) {
            tc_log_info("device '%s' lacks %zu benchmarks for this model: asking %d "
                        "connected agent(s) to measure them",
                        d->device.name, d->missing, agents);
            rc = s_enqueue(s, d, model_spec, ids, &n_ids);
            first[i + 1] = n_ids;
            asked[i] = true;
        }
    }
    if (rc == 0 && n_ids > 0) {
        s_wait_t w = {ids, st, n_ids, tc_progress_new("benchmarking what is missing", 1000)};
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
        /* A job that failed says why (a device that benchmarks no matmuls,
         * say): what it measured is stored, the rest stays missing. */
        for (size_t i = 0; rc == 0 && i < n_ids; i++)
            if (!strcmp(st[i].state, "failed"))
                tc_log_warn("benchmark job %s failed: %s", ids[i], st[i].message);
        if (rc == 0)
            rc = tc_predict_lookup_all(s, req, devs, n, asked);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK || d->missing == 0)
            continue;
        char why[320] = "";
        if (asked[i])
            snprintf(why, sizeof why, ", and its agents did not measure them in time");
        else if (wait_s)
            snprintf(why, sizeof why, ", and no agent of this device is online to measure them");
        /* A job that failed says why its agent could not. */
        for (size_t j = first[i]; asked[i] && j < first[i + 1]; j++) {
            if (!strcmp(st[j].state, "failed")) {
                snprintf(why, sizeof why, ", and its agent could not measure them all (%.256s)",
                         st[j].message);
                break;
            }
        }
        rc = tc_predict_missing_note(d, req, model_spec, why, d->note, sizeof d->note);
    }
    free(ids);
    free(st);
    free(asked);
    free(first);
    return rc;
}
