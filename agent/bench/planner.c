#include "planner.h"

#include "tc_conv_step.h"
#include "tc_error.h"
#include "tc_resultfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tc_conv_config_t config; /* n = 0, fp32, nchw: the dedup key */
    uint32_t layers;         /* multiplicity over all models */
    uint32_t inner_layers;   /* of those, layers that are not a network's first */
} s_conf_t;

/* A matmul config and the layers that use it, by which operands need a
 * gradient (they decide its backward directions, tc_matmul_step.h). */
typedef struct {
    tc_matmul_config_t config; /* minibatch 0, fp32: the dedup key */
    uint32_t layers;           /* multiplicity over all models */
    uint32_t grad_a_layers;    /* of those, layers whose A needs a gradient */
    uint32_t grad_b_layers;    /* and whose B does */
} s_mm_t;

struct tc_planner {
    s_conf_t *confs;
    size_t n, cap;
    s_mm_t *mms;
    size_t n_mm, cap_mm;
    bool with_matmuls;
    uint64_t mm_layers;
    bool sorted;
    size_t models;
    uint64_t layers;
    uint64_t first_layers;
};

tc_planner_t *tc_planner_new(void) { return calloc(1, sizeof(tc_planner_t)); }

void tc_planner_destroy(tc_planner_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->confs);
    free((*self_p)->mms);
    free(*self_p);
    *self_p = NULL;
}

static tc_conv_config_t s_key(const tc_conv_config_t *c)
{
    tc_conv_config_t k = *c;
    k.n = 0;
    k.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
    return k;
}

static int s_conf_cmp(const void *a, const void *b)
{
    return tc_conv_config_cmp(&((const s_conf_t *)a)->config, &((const s_conf_t *)b)->config);
}

int tc_planner_add(tc_planner_t *self, const tc_conv_usage_t *convs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tc_conv_config_t k = s_key(&convs[i].config);
        int rc = tc_conv_config_check(&k);
        if (rc < 0)
            return tc_err_context(rc, "conv %zu of model %zu", i + 1, self->models + 1);
        if (convs[i].multiplicity == 0)
            return tc_fail(TC_EINVAL, "conv %zu of model %zu: multiplicity must be > 0", i + 1,
                           self->models + 1);
        if (self->n == self->cap) {
            size_t cap = self->cap ? 2 * self->cap : 64;
            s_conf_t *nc = realloc(self->confs, cap * sizeof *nc);
            if (!nc)
                return tc_fail(TC_ENOMEM, "out of memory planning convs");
            self->confs = nc;
            self->cap = cap;
        }
        uint32_t m = convs[i].multiplicity;
        self->confs[self->n++] = (s_conf_t){k, m, convs[i].first_layer ? 0 : m};
        self->layers += m;
        self->first_layers += convs[i].first_layer ? m : 0;
        self->sorted = false;
    }
    self->models++;
    return 0;
}

static int s_mm_cmp(const void *a, const void *b)
{
    return tc_matmul_config_cmp(&((const s_mm_t *)a)->config, &((const s_mm_t *)b)->config);
}

int tc_planner_add_matmuls(tc_planner_t *self, const tc_matmul_usage_t *mms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tc_matmul_config_t k = mms[i].config;
        k.minibatch = 0;
        k.dtype = TRAINCAST__V1__DTYPE__DTYPE_FP32;
        int rc = tc_matmul_config_check(&k);
        if (rc < 0)
            return tc_err_context(rc, "matmul %zu of model %zu", i + 1, self->models);
        uint32_t m = mms[i].use.multiplicity;
        if (m == 0)
            return tc_fail(TC_EINVAL, "matmul %zu of model %zu: multiplicity must be > 0", i + 1,
                           self->models);
        if (self->n_mm == self->cap_mm) {
            size_t cap = self->cap_mm ? 2 * self->cap_mm : 64;
            s_mm_t *nm = realloc(self->mms, cap * sizeof *nm);
            if (!nm)
                return tc_fail(TC_ENOMEM, "out of memory planning matmuls");
            self->mms = nm;
            self->cap_mm = cap;
        }
        self->mms[self->n_mm++] =
            (s_mm_t){k, m, mms[i].use.grad_a ? m : 0, mms[i].use.grad_b ? m : 0};
        self->mm_layers += m;
        self->sorted = false;
    }
    return 0;
}

void tc_planner_set_matmuls(tc_planner_t *self, bool on) { self->with_matmuls = on; }

/* Sort and merge duplicates (kept const for callers: merging is idempotent). */
static void s_merge(tc_planner_t *self)
{
    if (self->sorted)
        return;
    if (self->n_mm)
        qsort(self->mms, self->n_mm, sizeof *self->mms, s_mm_cmp);
    size_t wm = 0;
    for (size_t r = 0; r < self->n_mm; r++) {
        if (wm > 0 && tc_matmul_config_cmp(&self->mms[wm - 1].config, &self->mms[r].config) == 0) {
            self->mms[wm - 1].layers += self->mms[r].layers;
            self->mms[wm - 1].grad_a_layers += self->mms[r].grad_a_layers;
            self->mms[wm - 1].grad_b_layers += self->mms[r].grad_b_layers;
        } else {
            self->mms[wm++] = self->mms[r];
        }
    }
    self->n_mm = wm;
    qsort(self->confs, self->n, sizeof *self->confs, s_conf_cmp);
    size_t w = 0;
    for (size_t r = 0; r < self->n; r++) {
        if (w > 0 && tc_conv_config_cmp(&self->confs[w - 1].config, &self->confs[r].config) == 0) {
            self->confs[w - 1].layers += self->confs[r].layers;
            self->confs[w - 1].inner_layers += self->confs[r].inner_layers;
        } else {
            self->confs[w++] = self->confs[r];
        }
    }
    self->n = w;
    self->sorted = true;
}

int tc_planner_add_models(tc_planner_t *self, char *const *specs, size_t n,
                          uint32_t input_size)
{
    tc_model_opts_t mo = {.input_size = input_size};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char full[1024];
        const char *spec = specs[i];
        tc_model_t *m = NULL;
        rc = tc_model_load_spec(tc_model_spec_expand(spec, full, sizeof full), &mo, &m);
        if (rc < 0)
            return tc_err_context(rc, "--models %s", spec);
        rc = tc_planner_add(self, tc_model_convs(m), tc_model_conv_count(m));
        if (rc == 0)
            rc = tc_planner_add_matmuls(self, tc_model_matmuls(m), tc_model_matmul_count(m));
        if (rc < 0)
            rc = tc_err_context(rc, "%s", tc_model_id(m));
        tc_model_destroy(&m);
    }
    return rc;
}

/* The layers of a config whose step time includes direction d
 * (tc_conv_step.h: a network's first conv has no backward-data pass). */
static uint32_t s_layers_for(const s_conf_t *c, Traincast__V1__Direction d)
{
    uint32_t first = c->layers - c->inner_layers;
    return (tc_conv_step_counts(false, d) ? c->inner_layers : 0) +
           (tc_conv_step_counts(true, d) ? first : 0);
}

/* The layers of a matmul config whose step time includes direction d. */
static uint32_t s_mm_layers_for(const s_mm_t *c, Traincast__V1__Direction d)
{
    switch (d) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_FWD:
        return c->layers;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        return c->grad_a_layers;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        return c->grad_b_layers;
    default:
        return 0;
    }
}

int tc_planner_build(const tc_planner_t *cself, const unsigned long *batches, size_t n_batches,
                     Traincast__V1__DType dtype, Traincast__V1__Layout layout,
                     const Traincast__V1__Direction *dirs, size_t n_dirs, tc_bench_item_t **items,
                     size_t *n_items, tc_plan_stats_t *stats)
{
    tc_planner_t *self = (tc_planner_t *)cself;
    *items = NULL;
    *n_items = 0;
    memset(stats, 0, sizeof *stats);
    if (layout == TRAINCAST__V1__LAYOUT__LAYOUT_NHWC) /* every conv channels-last */
        for (size_t i = 0; i < self->n; i++)
            if (self->confs[i].config.layout != layout) {
                self->confs[i].config.layout = layout;
                self->sorted = false;
            }
    s_merge(self);
    for (size_t b = 0; b < n_batches; b++)
        if (batches[b] == 0 || batches[b] > (1ul << 20))
            return tc_fail(TC_EINVAL, "batch size %lu is out of range 1..%lu", batches[b],
                           1ul << 20);
    size_t n_mm = self->with_matmuls ? self->n_mm : 0;
    size_t cap = (self->n + n_mm) * n_batches * n_dirs;
    tc_bench_item_t *out = malloc((cap ? cap : 1) * sizeof *out);
    if (!out)
        return tc_fail(TC_ENOMEM, "out of memory for %zu bench items", cap);
    size_t n = 0;
    uint64_t passes_per_batch = 0;
    for (size_t i = 0; i < self->n; i++)
        for (size_t d = 0; d < n_dirs; d++)
            passes_per_batch += s_layers_for(&self->confs[i], dirs[d]);
    uint64_t mm_passes_per_batch = 0;
    for (size_t i = 0; i < n_mm; i++)
        for (size_t d = 0; d < n_dirs; d++)
            mm_passes_per_batch += s_mm_layers_for(&self->mms[i], dirs[d]);
    for (size_t b = 0; b < n_batches; b++) {
        for (size_t i = 0; i < self->n; i++)
            for (size_t d = 0; d < n_dirs; d++) {
                const s_conf_t *c = &self->confs[i];
                uint32_t layers = s_layers_for(c, dirs[d]);
                if (layers == 0)
                    continue;
                tc_bench_item_t *it = &out[n++];
                memset(it, 0, sizeof *it);
                it->kind = TC_OP_CONV;
                it->config = c->config;
                it->config.n = (uint32_t)batches[b];
                it->config.dtype = dtype;
                it->direction = dirs[d];
                it->layers = layers;
            }
        for (size_t i = 0; i < n_mm; i++)
            for (size_t d = 0; d < n_dirs; d++) {
                uint32_t layers = s_mm_layers_for(&self->mms[i], dirs[d]);
                if (layers == 0)
                    continue;
                tc_bench_item_t *it = &out[n++];
                memset(it, 0, sizeof *it);
                it->kind = TC_OP_MATMUL;
                it->matmul = self->mms[i].config;
                it->matmul.minibatch = (uint32_t)batches[b];
                it->matmul.dtype = dtype;
                it->direction = dirs[d];
                it->layers = layers;
                stats->matmul_items++;
            }
    }
    if (n_mm) {
        stats->matmul_layers = self->mm_layers;
        stats->matmul_passes = mm_passes_per_batch * n_batches;
        stats->matmul_configs = n_mm;
    }
    stats->models = self->models;
    stats->conv_layers = self->layers;
    stats->batches = n_batches;
    stats->layer_passes = passes_per_batch * n_batches;
    stats->unique_configs = self->n;
    stats->items = n;
    *items = out;
    *n_items = n;
    return 0;
}

/* --- resume ------------------------------------------------------------ */

typedef struct {
    tc_op_kind_t kind;
    union {
        tc_conv_config_t config;
        tc_matmul_config_t matmul;
    };
    int direction;
    tc_bench_mark_t mark; /* of the key's newest result */
    bool settled;         /* a result of the key measured an earlier one again */
} s_key_t;

struct tc_resume {
    s_key_t *keys;
    size_t n, cap;
    const char *uuid;
    Traincast__V1__Policy policy;
};

static int s_key_cmp(const void *a, const void *b)
{
    const s_key_t *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    int c = x->kind == TC_OP_MATMUL ? tc_matmul_config_cmp(&x->matmul, &y->matmul)
                                    : tc_conv_config_cmp(&x->config, &y->config);
    return c ? c : (x->direction > y->direction) - (x->direction < y->direction);
}

static int s_collect(const tc_envelope_t *env, void *arg)
{
    tc_resume_t *self = arg;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS || !env->conv_results)
        return 0;
    const Traincast__V1__ConvResults *cr = env->conv_results;
    if (!cr->device || !cr->device->uuid || strcmp(cr->device->uuid, self->uuid) != 0)
        return 0;
    size_t n_all = cr->n_results + cr->n_matmul_results;
    for (size_t i = 0; i < n_all; i++) {
        bool mm = i >= cr->n_results;
        const Traincast__V1__ConvResult *r =
            mm ? cr->matmul_results[i - cr->n_results] : cr->results[i];
        if (!r || (mm ? !r->matmul : !r->config) || r->policy != self->policy ||
            r->repetitions == 0)
            continue;
        if (self->n == self->cap) {
            size_t cap = self->cap ? 2 * self->cap : 256;
            s_key_t *nk = realloc(self->keys, cap * sizeof *nk);
            if (!nk)
                return tc_fail(TC_ENOMEM, "out of memory reading earlier results");
            self->keys = nk;
            self->cap = cap;
        }
        s_key_t *k = &self->keys[self->n++];
        memset(k, 0, sizeof *k);
        k->kind = mm ? TC_OP_MATMUL : TC_OP_CONV;
        if (mm)
            tc_matmul_config_from_proto(r->matmul, &k->matmul);
        else
            tc_conv_config_from_proto(r->config, &k->config);
        k->direction = r->direction;
        k->mark = (tc_bench_mark_t){.disturbed = r->load && r->load->disturbed,
                                    .canary_ms = r->load ? r->load->canary_ms : 0,
                                    .measured_at_us = r->measured_at_us};
        k->settled = r->load && r->load->supersedes_us;
    }
    return 0;
}

/* One key for each (op config, direction), sorted: settled when any of its
 * results is, with the newest result's mark. */
static void s_merge_keys(tc_resume_t *self)
{
    if (!self->n)
        return;
    qsort(self->keys, self->n, sizeof *self->keys, s_key_cmp);
    size_t w = 0;
    for (size_t r = 1; r < self->n; r++) {
        s_key_t *k = &self->keys[w], *x = &self->keys[r];
        if (s_key_cmp(k, x) != 0) {
            self->keys[++w] = *x;
            continue;
        }
        k->settled = k->settled || x->settled;
        if (x->mark.measured_at_us > k->mark.measured_at_us)
            k->mark = x->mark;
    }
    self->n = w + 1;
}

int tc_resume_collect(tc_records_fn each, void *src, const char *device_uuid,
                      Traincast__V1__Policy policy, tc_resume_t **out)
{
    *out = NULL;
    tc_resume_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory reading earlier results");
    self->uuid = device_uuid;
    self->policy = policy;
    int rc = each(src, s_collect, self);
    if (rc < 0) {
        tc_resume_destroy(&self);
        return rc;
    }
    s_merge_keys(self);
    self->uuid = NULL;
    *out = self;
    return 0;
}

/* A result file as a source of records (missing: none). */
static int s_file_each(void *path, tc_resultfile_fn fn, void *arg)
{
    int rc = tc_resultfile_read(path, true, fn, arg, NULL);
    return rc < 0 ? tc_err_context(rc, "reading earlier results from %s", (const char *)path)
                  : rc;
}

int tc_resume_load(const char *path, const char *device_uuid, Traincast__V1__Policy policy,
                   tc_resume_t **out)
{
    return tc_resume_collect(s_file_each, (void *)path, device_uuid, policy, out);
}

void tc_resume_destroy(tc_resume_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->keys);
    free(*self_p);
    *self_p = NULL;
}

size_t tc_resume_count(const tc_resume_t *self) { return self ? self->n : 0; }

static const s_key_t *s_find(const tc_resume_t *self, const s_key_t *k)
{
    return self && self->n ? bsearch(k, self->keys, self->n, sizeof *k, s_key_cmp) : NULL;
}

static bool s_done(const tc_resume_t *self, const s_key_t *k) { return s_find(self, k) != NULL; }

/* The key of an item. */
static s_key_t s_item_key(const tc_bench_item_t *it)
{
    s_key_t k;
    memset(&k, 0, sizeof k);
    k.kind = it->kind;
    if (it->kind == TC_OP_MATMUL)
        k.matmul = it->matmul;
    else
        k.config = it->config;
    k.direction = it->direction;
    return k;
}

bool tc_resume_done(const tc_resume_t *self, const tc_conv_config_t *c,
                    Traincast__V1__Direction d)
{
    s_key_t k = s_item_key(&(tc_bench_item_t){.kind = TC_OP_CONV, .config = *c, .direction = d});
    return s_done(self, &k);
}

bool tc_resume_matmul_done(const tc_resume_t *self, const tc_matmul_config_t *c,
                           Traincast__V1__Direction d)
{
    s_key_t k =
        s_item_key(&(tc_bench_item_t){.kind = TC_OP_MATMUL, .matmul = *c, .direction = d});
    return s_done(self, &k);
}

size_t tc_resume_filter(const tc_resume_t *self, tc_bench_item_t *items, size_t *n_items)
{
    size_t w = 0, n = *n_items;
    for (size_t r = 0; r < n; r++) {
        s_key_t k = s_item_key(&items[r]);
        if (!s_done(self, &k))
            items[w++] = items[r];
    }
    *n_items = w;
    return n - w;
}

int tc_resume_held(const tc_resume_t *self, const tc_bench_item_t *items, size_t n_items,
                   tc_bench_held_t **held, size_t *n_held)
{
    *held = NULL, *n_held = 0;
    size_t h = 0;
    tc_bench_held_t *out = NULL;
    for (size_t r = 0; r < n_items; r++) {
        s_key_t k = s_item_key(&items[r]);
        const s_key_t *done = s_find(self, &k);
        if (!done || done->settled)
            continue;
        if (!out && !(out = malloc((n_items - r) * sizeof *out)))
            return tc_fail(TC_ENOMEM, "out of memory");
        out[h++] = (tc_bench_held_t){.item = items[r], .mark = done->mark};
    }
    *held = out, *n_held = h;
    return 0;
}
