/* Filling in conv benchmarks a prediction lacks. */
#include "predict_output.h"

#include "tc_error.h"
#include "tc_log.h"

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
    snprintf(buf, size,
             "agent bench --models %s --batches %s %s --policy %s --out missing.tcr && "
             "agent push --aggregator tcp://AGGREGATOR:5555 missing.tcr",
             model_spec, batches, device, policy);
}

int tc_predict_fill_missing(tc_store_t *s, const tc_pred_request_t *req, tc_pred_device_t *devs,
                            size_t n, unsigned wait_s, const char *model_spec)
{
    (void)s;
    (void)wait_s;
    for (size_t i = 0; i < n; i++) {
        tc_pred_device_t *d = &devs[i];
        if (d->status != TC_PRED_OK || d->missing == 0)
            continue;
        char cmd[768];
        tc_predict_bench_command(d, req, model_spec, cmd, sizeof cmd);
        d->status = TC_PRED_MISSING;
        snprintf(d->note, sizeof d->note,
                 "lacks conv benchmarks for %zu configs (%zu measurements); no agent of this "
                 "device is online to measure them. On %s run: %s",
                 s_missing_configs(d), d->missing, *d->device.hosts ? d->device.hosts : "its host",
                 cmd);
        tc_log_warn("device '%s' %s", d->device.name, d->note);
    }
    return 0;
}
