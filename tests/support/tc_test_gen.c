#include "tc_test_gen.h"

#include "tc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tc_gen_opts_t tc_gen_defaults(const char *agent_id)
{
    tc_gen_opts_t o = {
        .agent_id = agent_id,
        .device_name = "gen-cpu",
        .device_uuid = "gen-cpu-0",
        .results_per_message = 1,
        .candidates = 3,
        .samples = 10,
        .distinct_configs = 64,
    };
    return o;
}

typedef struct {
    Traincast__V1__ConvConfig cfg;
    Traincast__V1__AlgoTiming cand[8];
    Traincast__V1__AlgoTiming *cand_p[8];
    double samples[64];
    int64_t offsets[64];
    Traincast__V1__ConvResult r;
} s_result_t;

static const char *const s_algos[8] = {"gemm", "winograd", "direct", "implicit_gemm",
                                       "fft", "fft_tiling", "precomp_gemm", "ref"};

static void s_fill(const tc_gen_opts_t *o, size_t index, s_result_t *x)
{
    static const uint32_t chans[] = {16, 32, 64, 128, 256, 512, 1024, 2048};
    static const uint32_t sizes[] = {7, 14, 28, 56, 112, 224};
    size_t shape = index % (o->distinct_configs ? o->distinct_configs : 1);
    traincast__v1__conv_config__init(&x->cfg);
    x->cfg.n = 1u << (index / 7 % 6);
    x->cfg.c = chans[shape % 8];
    x->cfg.k = chans[(shape / 8 + 1) % 8];
    x->cfg.h = x->cfg.w = sizes[shape % 6];
    x->cfg.r = x->cfg.s = shape % 3 == 0 ? 1 : 3;
    x->cfg.pad_h = x->cfg.pad_w = x->cfg.r / 2;
    x->cfg.stride_h = x->cfg.stride_w = 1 + (uint32_t)(shape % 5 == 0);
    x->cfg.dilation_h = x->cfg.dilation_w = 1;
    x->cfg.groups = 1;
    x->cfg.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    x->cfg.layout = TRAINCAST__V1__LAYOUT__LAYOUT_NCHW;

    double base = 0.05 + (double)((index * 7919) % 1000) / 100.0;
    unsigned nc = o->candidates > 8 ? 8 : o->candidates;
    for (unsigned i = 0; i < nc; i++) {
        traincast__v1__algo_timing__init(&x->cand[i]);
        x->cand[i].algo = (char *)s_algos[i];
        x->cand[i].algo_id = (int32_t)i;
        x->cand[i].time_ms = base * (1.0 + 0.3 * i);
        x->cand[i].workspace_bytes = (uint64_t)i * 4096;
        x->cand[i].status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
        x->cand_p[i] = &x->cand[i];
    }
    unsigned ns = o->samples > 64 ? 64 : o->samples;
    for (unsigned i = 0; i < ns; i++) {
        x->samples[i] = base * (1.0 + 0.01 * (double)((i * 37) % 7));
        x->offsets[i] = (int64_t)i * 1000;
    }
    traincast__v1__conv_result__init(&x->r);
    x->r.config = &x->cfg;
    x->r.direction = (Traincast__V1__Direction)(1 + index % 3);
    x->r.policy = TRAINCAST__V1__POLICY__POLICY_HEURISTIC;
    x->r.algo = (char *)s_algos[0];
    x->r.algo_id = 0;
    x->r.median_ms = base;
    x->r.min_ms = base * 0.98;
    x->r.max_ms = base * 1.06;
    x->r.stddev_ms = base * 0.02;
    x->r.repetitions = ns ? ns : 1;
    x->r.n_candidates = nc;
    x->r.candidates = x->cand_p;
    x->r.measured_at_us = tc_now_us();
    x->r.n_samples_ms = ns;
    x->r.samples_ms = x->samples;
    x->r.n_sample_offsets_us = ns;
    x->r.sample_offsets_us = x->offsets;
}

/* Build message `index` into env (pointing into the arrays given). */
static int s_build(const tc_gen_opts_t *o, size_t index, tc_envelope_t *env,
                   Traincast__V1__ConvResults *cr, Traincast__V1__Device *dev, s_result_t *xs,
                   Traincast__V1__ConvResult **rp, char id[TC_MSGID_LEN + 1])
{
    traincast__v1__device__init(dev);
    dev->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    dev->name = (char *)o->device_name;
    dev->uuid = (char *)o->device_uuid;
    dev->threads = 2;
    dev->multiprocessors = 2;
    dev->library = "onednn";
    dev->library_version = "3.0";
    dev->host = "generated";
    unsigned n = o->results_per_message ? o->results_per_message : 1;
    for (unsigned i = 0; i < n; i++) {
        s_fill(o, index * n + i, &xs[i]);
        rp[i] = &xs[i].r;
    }
    traincast__v1__conv_results__init(cr);
    cr->device = dev;
    cr->backend = "onednn";
    cr->n_results = n;
    cr->results = rp;
    traincast__v1__envelope__init(env);
    env->body_case = TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS;
    env->conv_results = cr;
    tc_envelope_stamp(env, o->agent_id, id);
    return 0;
}

int tc_gen_pack(const tc_gen_opts_t *o, size_t index, uint8_t **buf, size_t *len,
                char id_out[TC_MSGID_LEN + 1])
{
    unsigned n = o->results_per_message ? o->results_per_message : 1;
    s_result_t *xs = calloc(n, sizeof *xs);
    Traincast__V1__ConvResult **rp = calloc(n, sizeof *rp);
    if (!xs || !rp) {
        free(xs);
        free(rp);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    tc_envelope_t env;
    Traincast__V1__ConvResults cr;
    Traincast__V1__Device dev;
    s_build(o, index, &env, &cr, &dev, xs, rp, id_out);
    int rc = tc_envelope_pack(&env, buf, len);
    free(xs);
    free(rp);
    return rc;
}

int tc_gen_write(const char *path, const tc_gen_opts_t *o, size_t first_index, size_t n)
{
    /* The result file format (common/wire/tc_resultfile.h) written directly: a
     * test file needs no fsync per record. */
    FILE *f = fopen(path, "ab");
    if (!f)
        return tc_fail(TC_EIO, "cannot open %s", path);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        char id[TC_MSGID_LEN + 1];
        rc = tc_gen_pack(o, first_index + k, &buf, &len, id);
        if (rc < 0)
            break;
        uint8_t hdr[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                          (uint8_t)(len >> 24)};
        if (fwrite(hdr, 1, 4, f) != 4 || fwrite(buf, 1, len, f) != len)
            rc = tc_fail(TC_EIO, "writing %s", path);
        free(buf);
    }
    if (fclose(f) != 0 && rc == 0)
        rc = tc_fail(TC_EIO, "writing %s", path);
    return rc;
}
