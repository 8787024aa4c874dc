/* tc_model_t: import (caps, pre-flight scan, protobuf-c unpack, graph IR,
 * shape inference) and what users extract from it: layers, deduplicated
 * conv and matmul configs, features, the wire form. */
#include "tc_model.h"
#include "tc_model_internal.h"

#include "tc_buf.h"
#include "tc_error.h"
#include "tc_graph.h"
#include "tc_pbscan.h"
#include "tc_sha256.h"
#include "tc_wire.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_DEFAULT_MAX_FILE (256u << 20)

struct tc_model {
    tc_graph_t g;
    char *name;
    char *id;
    char sha256[65];
    char structure[65]; /* SHA-256 of the structure's text (s_structure_hash) */
    uint32_t in_c, in_h, in_w;
    uint64_t params;
    double flops, macs;
    const tc_model_node_t **layers;
    size_t n_layers;
    tc_conv_usage_t *convs;
    size_t n_convs;
    tc_matmul_usage_t *matmuls;
    size_t n_matmuls;
    char **meta; /* key, value pairs */
    size_t n_meta;
    const char *export_warning; /* "" or why the file looks exported for inference */
};

static int s_dedup_ops(tc_model_t *m);

static int s_copy_meta(tc_model_t *m, const Onnx__ModelProto *mp)
{
    if (!mp->n_metadata_props)
        return 0;
    m->meta = tc_arena_alloc(&m->g.arena, 2 * mp->n_metadata_props * sizeof *m->meta);
    if (!m->meta)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        m->meta[2 * i] = tc_arena_strdup(&m->g.arena, mp->metadata_props[i]->key);
        m->meta[2 * i + 1] = tc_arena_strdup(&m->g.arena, mp->metadata_props[i]->value);
        if (!m->meta[2 * i] || !m->meta[2 * i + 1])
            return tc_fail(TC_ENOMEM, "out of memory");
    }
    m->n_meta = mp->n_metadata_props;
    return 0;
}

#define S_TRAINING_EXPORT                                                                     \
    "export it in training mode: model.train(); torch.onnx.export(model, x, FILE, "           \
    "export_params=False, training=torch.onnx.TrainingMode.TRAINING, "                        \
    "do_constant_folding=False, opset_version=17, dynamic_axes={'input': {0: 'batch'}}) "     \
    "(README, your own model)"

/* An export for inference trains differently from the network: batch norm
 * in eval mode (one output, training_mode 0) or folded into the convs, and
 * dropout gone. Folding leaves no trace that tells it from a CNN without
 * batch norm or dropout, so a file with convs and neither says so, hedged. */
static int s_check_export_mode(tc_model_t *m, const Onnx__ModelProto *mp)
{
    m->export_warning = "";
    const Onnx__GraphProto *g = mp->graph;
    size_t bn = 0, bn_eval = 0, dropout = 0, conv = 0;
    for (size_t i = 0; g && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        const char *op = n->op_type ? n->op_type : "";
        if (!strcmp(op, "BatchNormalization")) {
            bool training = false;
            for (size_t k = 0; k < n->n_attribute; k++) {
                const Onnx__AttributeProto *a = n->attribute[k];
                if (a->name && !strcmp(a->name, "training_mode") && a->i != 0)
                    training = true;
            }
            bn++;
            /* opset < 14 has no training_mode: training exports give it the
             * running mean and variance as outputs */
            bn_eval += !training && n->n_output < 3;
        }
        dropout += !strcmp(op, "Dropout");
        conv += !strcmp(op, "Conv");
    }
    const char *w = NULL;
    char buf[1024];
    if (bn_eval) {
        snprintf(buf, sizeof buf,
                 "%zu of its %zu BatchNormalization nodes are in inference mode (an eval-mode "
                 "export): training normalizes by batch statistics and updates the running ones, "
                 "so the prediction misses that; " S_TRAINING_EXPORT,
                 bn_eval, bn);
        w = buf;
    } else if (conv && !bn && !dropout && !mp->n_metadata_props) {
        snprintf(buf, sizeof buf,
                 "no BatchNormalization or Dropout node among its %zu convs: if the network has "
                 "batch norm or dropout, this is an inference export (torch.onnx.export's "
                 "defaults fold batch norm into the convs and drop dropout) and its training "
                 "time comes out too low; " S_TRAINING_EXPORT,
                 conv);
        w = buf;
    }
    if (w && !(m->export_warning = tc_arena_strdup(&m->g.arena, w)))
        return tc_fail(TC_ENOMEM, "out of memory");
    return 0;
}

static int s_collect(tc_model_t *m)
{
    tc_graph_t *g = &m->g;
    const tc_value_t *in = &g->values[g->input];
    if (in->rank == 4) {
        m->in_c = (uint32_t)in->dims[1];
        m->in_h = (uint32_t)in->dims[2];
        m->in_w = (uint32_t)in->dims[3];
    } else {
        m->in_c = (uint32_t)in->dims[1];
    }
    m->layers = calloc(g->n_nodes, sizeof *m->layers);
    if (!m->layers)
        return tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->n_nodes; i++) {
        const tc_gnode_t *n = &g->nodes[g->order[i]];
        if (n->folded)
            continue;
        m->layers[m->n_layers++] = &n->info;
        m->params += n->info.params;
        m->flops += n->info.flops;
        m->macs += n->macs;
    }
    return s_dedup_ops(m);
}

static int s_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define S_KEY_U32(b, v) tc_buf_printf(b, "%u,", (unsigned)(v))
#define S_KEY_DTYPE(b, v) tc_buf_printf(b, "%s,", tc_dtype_name(v))
#define S_KEY_LAYOUT(b, v) tc_buf_printf(b, "%s,", tc_layout_name(v))
#define S_KEY_BOOL(b, v) tc_buf_printf(b, "%d,", (v) ? 1 : 0)
#define S_KEY_(x, y, name, kind, first) S_KEY_##kind(&line, u->config.name);

/* The model's structure as text, hashed: what a file's model id is made
 * of, so that the same network exported with or without its weights (or
 * with other names) gets one id. Exactly what the store keeps of it, so
 * that schema/013_model_structure_ids.sql computes the same from the
 * tables models, model_layers, model_convs and conv_configs:
 *   traincast model structure 1
 *   input C H W
 *   L op op_class params elems_in elems_out d1,d2,...   (each layer, in order)
 *   C c,h,w,...,dtype,layout,bias first_layer multiplicity   (each deduplicated
 *     conv, the lines sorted bytewise; booleans 1 or 0)
 * each line ending in a newline. The op class is written as structure 1
 * named it before layer norm, softmax and copies were classes of their own
 * (norm and softmax as reduce, copy as shape): the class is how the
 * regression reads a layer, not the network, and a file's id stays what it
 * was. */
static const char *s_structure_class(tc_op_class_t c)
{
    switch (c) {
    case TC_OPC_NORM:
    case TC_OPC_SOFTMAX:
        return tc_op_class_name(TC_OPC_REDUCE);
    case TC_OPC_COPY:
        return tc_op_class_name(TC_OPC_SHAPE);
    default:
        return tc_op_class_name(c);
    }
}

static int s_structure_hash(tc_model_t *m)
{
    tc_buf_t b = {0};
    char **lines = calloc(m->n_convs + 1, sizeof *lines);
    int rc = lines ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    tc_buf_printf(&b, "traincast model structure 1\ninput %u %u %u\n", m->in_c, m->in_h,
                  m->in_w);
    for (size_t i = 0; i < m->n_layers; i++) {
        const tc_model_node_t *n = m->layers[i];
        tc_buf_printf(&b, "L %s %s %llu %llu %llu ", n->op, s_structure_class(n->op_class),
                      (unsigned long long)n->params, (unsigned long long)n->elems_in,
                      (unsigned long long)n->elems_out);
        for (int k = 0; k < n->rank_out; k++)
            tc_buf_printf(&b, "%s%lld", k ? "," : "", (long long)n->out_shape[k]);
        tc_buf_putc(&b, '\n');
    }
    for (size_t i = 0; rc == 0 && i < m->n_convs; i++) {
        const tc_conv_usage_t *u = &m->convs[i];
        tc_buf_t line = {0};
        tc_buf_puts(&line, "C ");
        TC_CONV_KEY(S_KEY_, , )
        tc_buf_truncate(&line, line.len - 1); /* the last comma */
        tc_buf_printf(&line, " %d %u\n", u->first_layer ? 1 : 0, u->multiplicity);
        if (line.failed || !(lines[i] = strdup(tc_buf_str(&line))))
            rc = tc_fail(TC_ENOMEM, "out of memory");
        tc_buf_free(&line);
    }
    if (rc == 0) {
        qsort(lines, m->n_convs, sizeof *lines, s_cmp_str);
        for (size_t i = 0; i < m->n_convs; i++)
            tc_buf_puts(&b, lines[i]);
        if (b.failed)
            rc = tc_fail(TC_ENOMEM, "out of memory");
    }
    if (rc == 0)
        tc_sha256_hex(tc_buf_str(&b), b.len, m->structure);
    for (size_t i = 0; lines && i < m->n_convs; i++)
        free(lines[i]);
    free(lines);
    tc_buf_free(&b);
    return rc;
}

int tc_model_set_identity(tc_model_t *m, const char *name, const char *id_prefix)
{
    char id[512];
    free(m->name);
    free(m->id);
    m->name = strdup(name);
    if (id_prefix)
        snprintf(id, sizeof id, "%s%s@%u", id_prefix, name, m->in_h);
    else
        snprintf(id, sizeof id, "onnx:%.12s@%u", m->structure, m->in_h);
    m->id = strdup(id);
    if (!m->name || !m->id)
        return tc_fail(TC_ENOMEM, "out of memory");
    return 0;
}

/* `dir`: the model file's directory, where external data is read; NULL
 * for bytes that came from no file. */
static int s_load(const uint8_t *data, size_t len, const char *name, const char *dir,
                  const tc_model_opts_t *opts, tc_model_t **out)
{
    *out = NULL;
    tc_model_opts_t defaults = {0};
    if (!opts)
        opts = &defaults;
    size_t cap = opts->max_file_bytes ? opts->max_file_bytes : S_DEFAULT_MAX_FILE;
    if (len > cap)
        return tc_fail(TC_ELIMIT, "the model is %zu bytes, over the %zu byte cap", len, cap);
    int rc = tc_onnx_sniff(data, len);
    if (rc < 0)
        return rc;
    Onnx__ModelProto *mp = NULL;
    tc_model_t *m = calloc(1, sizeof *m);
    if (!m)
        return tc_fail(TC_ENOMEM, "out of memory");
    m->g.input = -1;
    m->g.allow_unknown = opts->allow_unknown;
    m->g.ext_dir = dir;
    tc_sha256_hex(data, len, m->sha256);
    /* protobuf-c recurses per nested message and allocates per message:
     * bound both before unpacking. */
    size_t max_alloc = (64u << 20) + 2 * len;
    TC_TRY(tc_pbscan(&onnx__model_proto__descriptor, data, len, TC_GRAPH_MAX_DEPTH, max_alloc,
                     NULL));
    mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp)
        TC_FAIL_GOTO(TC_EPARSE, "not a valid ONNX model (protobuf-c could not unpack it)");
    TC_TRY(tc_graph_from_onnx(&m->g, mp, opts->input_size));
    TC_TRY(tc_graph_infer(&m->g));
    TC_TRY(s_copy_meta(m, mp));
    TC_TRY(s_check_export_mode(m, mp));
    TC_TRY(s_collect(m));
    TC_TRY(s_structure_hash(m));
    TC_TRY(tc_model_set_identity(m, name && *name ? name : "model", NULL));
    /* The proto is no longer needed; drop every pointer into it. */
    for (size_t i = 0; i < m->g.n_nodes; i++)
        m->g.nodes[i].proto = NULL;
    for (size_t i = 0; i < m->g.n_values; i++) {
        m->g.values[i].init = NULL;
        m->g.values[i].ext = NULL;
    }
    m->g.proto = NULL;
    m->g.ext_dir = NULL;
    onnx__model_proto__free_unpacked(mp, NULL);
    *out = m;
    return 0;
err:
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
    tc_model_destroy(&m);
    return rc;
}

int tc_model_load_bytes(const uint8_t *data, size_t len, const char *name,
                        const tc_model_opts_t *opts, tc_model_t **out)
{
    return s_load(data, len, name, NULL, opts, out);
}

int tc_model_read_file(const char *path, size_t cap, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        bool dir = S_ISDIR(st.st_mode);
        close(fd);
        return tc_fail(TC_EINVAL, "%s is %s, not a file: give the path of an .onnx file", path,
                       dir ? "a directory" : "not a regular file");
    }
    if ((uint64_t)st.st_size > cap) {
        close(fd);
        return tc_fail(TC_ELIMIT, "%s is %lld bytes, over the %zu byte cap", path,
                       (long long)st.st_size, cap);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return tc_fail(TC_ENOMEM, "out of memory for %zu bytes", size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            free(buf);
            close(fd);
            return tc_fail(TC_EIO, "reading %s: %s", path, r < 0 ? strerror(e) : "file shrank");
        }
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    *len = size;
    return 0;
}

int tc_model_load_file(const char *path, const tc_model_opts_t *opts, tc_model_t **out)
{
    *out = NULL;
    size_t cap = opts && opts->max_file_bytes ? opts->max_file_bytes : S_DEFAULT_MAX_FILE;
    uint8_t *data;
    size_t len;
    int rc = tc_model_read_file(path, cap, &data, &len);
    if (rc < 0)
        return rc;
    /* The label is the file name without directory and extension; external
     * data is read from the directory. */
    const char *base = strrchr(path, '/');
    char dir[4096];
    if (!base)
        snprintf(dir, sizeof dir, ".");
    else if ((size_t)(base - path) < sizeof dir)
        snprintf(dir, sizeof dir, "%.*s", base == path ? 1 : (int)(base - path), path);
    else
        dir[0] = '\0'; /* too long: external data will fail to open */
    base = base ? base + 1 : path;
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    char *dot = strrchr(name, '.');
    if (dot && dot != name && !strcmp(dot, ".onnx"))
        *dot = '\0';
    rc = s_load(data, len, name, dir, opts, out);
    free(data);
    if (rc < 0)
        return tc_err_context(rc, "%s", path);
    return 0;
}

void tc_model_destroy(tc_model_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_model_t *m = *self_p;
    tc_graph_free(&m->g);
    free(m->layers);
    free(m->convs);
    free(m->matmuls);
    free(m->name);
    free(m->id);
    free(m);
    *self_p = NULL;
}

/* ---- accessors ---- */

const char *tc_model_id(const tc_model_t *m)
{
    return m->id;
}

const char *tc_model_name(const tc_model_t *m)
{
    return m->name;
}

const char *tc_model_sha256(const tc_model_t *m)
{
    return m->sha256;
}

const char *tc_model_export_warning(const tc_model_t *m)
{
    return m->export_warning ? m->export_warning : "";
}

void tc_model_input(const tc_model_t *m, uint32_t *c, uint32_t *h, uint32_t *w)
{
    if (c)
        *c = m->in_c;
    if (h)
        *h = m->in_h;
    if (w)
        *w = m->in_w;
}

uint64_t tc_model_params(const tc_model_t *m)
{
    return m->params;
}

double tc_model_flops(const tc_model_t *m)
{
    return m->flops;
}

double tc_model_macs(const tc_model_t *m)
{
    return m->macs;
}

size_t tc_model_node_count(const tc_model_t *m)
{
    return m->n_layers;
}

const tc_model_node_t *tc_model_node(const tc_model_t *m, size_t i)
{
    return i < m->n_layers ? m->layers[i] : NULL;
}

size_t tc_model_onnx_node_count(const tc_model_t *m)
{
    return m->g.n_nodes;
}

size_t tc_model_unknown_count(const tc_model_t *m)
{
    return m->g.n_unknown;
}

const char *tc_model_unknown(const tc_model_t *m, size_t i)
{
    return i < m->g.n_unknown ? m->g.unknown[i] : NULL;
}

size_t tc_model_conv_count(const tc_model_t *m)
{
    return m->n_convs;
}

const tc_conv_usage_t *tc_model_conv(const tc_model_t *m, size_t i)
{
    return i < m->n_convs ? &m->convs[i] : NULL;
}

const tc_conv_usage_t *tc_model_convs(const tc_model_t *m)
{
    return m->n_convs ? m->convs : NULL;
}

size_t tc_model_matmul_count(const tc_model_t *m)
{
    return m->n_matmuls;
}

const tc_matmul_usage_t *tc_model_matmul(const tc_model_t *m, size_t i)
{
    return i < m->n_matmuls ? &m->matmuls[i] : NULL;
}

const tc_matmul_usage_t *tc_model_matmuls(const tc_model_t *m)
{
    return m->n_matmuls ? m->matmuls : NULL;
}

int tc_model_value_shape(const tc_model_t *m, const char *value, int *rank, int64_t *dims,
                         bool *batched)
{
    int idx = tc_graph_value(&m->g, value);
    if (idx < 0 || !m->g.values[idx].known)
        return tc_fail(TC_ENOTFOUND, "no value '%s' in model %s", value, m->name);
    const tc_value_t *v = &m->g.values[idx];
    int r = 0;
    for (int k = 0; k < v->rank; k++)
        if (k != v->batch_axis)
            dims[r++] = v->dims[k];
    *rank = r;
    if (batched)
        *batched = v->batch_axis >= 0;
    return 0;
}

const char *tc_model_meta(const tc_model_t *m, const char *key)
{
    for (size_t i = 0; i < m->n_meta; i++)
        if (!strcmp(m->meta[2 * i], key))
            return m->meta[2 * i + 1];
    return NULL;
}

/* ---- deduplicated ops: convs and matmuls ---- */

/* One use of a benchmarked op: its config (a conv's or a matmul's, compared
 * by `cmp`), the flags that decide its directions, the layer index. */
typedef struct {
    const void *config;
    int (*cmp)(const void *a, const void *b);
    unsigned flags;
    size_t order;
    uint32_t mult;
} s_op_ref_t;

static int s_ref_cmp(const void *pa, const void *pb)
{
    const s_op_ref_t *a = pa, *b = pb;
    int c = a->cmp(a->config, b->config);
    if (c)
        return c;
    if (a->flags != b->flags)
        return a->flags < b->flags ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

static int s_order_cmp(const void *pa, const void *pb)
{
    const s_op_ref_t *a = pa, *b = pb;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* Deduplicate refs[0..n) by (config, flags) in place, each with its count
 * of uses, keeping first-use order; returns how many are left. Sorting
 * keeps this O(n log n) on hostile graphs with many ops. */
static size_t s_dedup(s_op_ref_t *refs, size_t n)
{
    qsort(refs, n, sizeof *refs, s_ref_cmp);
    /* Collapse equal runs onto their first use (the smallest order). */
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (u && !refs[i].cmp(refs[i].config, refs[u - 1].config) &&
            refs[i].flags == refs[u - 1].flags) {
            refs[u - 1].mult++;
            continue;
        }
        refs[u++] = refs[i];
    }
    qsort(refs, u, sizeof *refs, s_order_cmp);
    return u;
}

static int s_conv_cmp(const void *a, const void *b)
{
    return tc_conv_config_cmp(a, b);
}

static int s_matmul_cmp(const void *a, const void *b)
{
    return tc_matmul_config_cmp(a, b);
}

/* Convs by (config, first_layer); matmuls by (config, which operands need
 * a gradient). */
static int s_dedup_ops(tc_model_t *m)
{
    size_t nc = 0, nm = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        nc += m->layers[i]->is_conv;
        nm += m->layers[i]->is_matmul;
    }
    if (!nc && !nm)
        return 0;
    s_op_ref_t *refs = malloc((nc + nm) * sizeof *refs);
    m->convs = calloc(nc ? nc : 1, sizeof *m->convs);
    m->matmuls = calloc(nm ? nm : 1, sizeof *m->matmuls);
    if (!refs || !m->convs || !m->matmuls) {
        free(refs);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    s_op_ref_t *cr = refs, *mr = refs + nc;
    size_t kc = 0, km = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
        const tc_model_node_t *l = m->layers[i];
        if (l->is_conv)
            cr[kc++] = (s_op_ref_t){&l->conv, s_conv_cmp, l->first_layer, i, 1};
        if (l->is_matmul)
            mr[km++] = (s_op_ref_t){&l->matmul, s_matmul_cmp,
                                    (l->matmul_grad_a ? 1u : 0u) | (l->matmul_grad_b ? 2u : 0u),
                                    i, 1};
    }
    m->n_convs = s_dedup(cr, nc);
    for (size_t i = 0; i < m->n_convs; i++) {
        m->convs[i].config = *(const tc_conv_config_t *)cr[i].config;
        m->convs[i].first_layer = cr[i].flags != 0;
        m->convs[i].multiplicity = cr[i].mult;
    }
    m->n_matmuls = s_dedup(mr, nm);
    for (size_t i = 0; i < m->n_matmuls; i++) {
        m->matmuls[i].config = *(const tc_matmul_config_t *)mr[i].config;
        m->matmuls[i].use.grad_a = mr[i].flags & 1u;
        m->matmuls[i].use.grad_b = mr[i].flags & 2u;
        m->matmuls[i].use.multiplicity = mr[i].mult;
    }
    free(refs);
    return 0;
}

/* ---- features and wire form ---- */

void tc_model_features(const tc_model_t *m, unsigned batch, tc_features_t *out)
{
    tc_layer_summary_t *l = malloc((m->n_layers ? m->n_layers : 1) * sizeof *l);
    if (!l) {
        memset(out, 0, sizeof *out);
        out->batch = batch;
        return;
    }
    for (size_t i = 0; i < m->n_layers; i++) {
        const tc_model_node_t *n = m->layers[i];
        l[i] = (tc_layer_summary_t){n->op_class, n->params, n->flops, n->elems_in, n->elems_out};
    }
    tc_features_from_layers(l, m->n_layers, batch, out);
    free(l);
}

static char *s_dup(const char *s)
{
    return strdup(s ? s : "");
}

int tc_model_to_proto(const tc_model_t *m, Traincast__V1__ModelGraph **out)
{
    *out = NULL;
    Traincast__V1__ModelGraph *g = malloc(sizeof *g);
    if (!g)
        return tc_fail(TC_ENOMEM, "out of memory");
    traincast__v1__model_graph__init(g);
    g->model_id = s_dup(m->id);
    g->name = s_dup(m->name);
    g->source_sha256 = s_dup(m->sha256);
    g->input_c = m->in_c;
    g->input_h = m->in_h;
    g->input_w = m->in_w;
    g->params = m->params;
    g->flops = m->flops;
    if (!g->model_id || !g->name || !g->source_sha256)
        goto nomem;
    g->layers = calloc(m->n_layers ? m->n_layers : 1, sizeof *g->layers);
    g->convs = calloc(m->n_convs ? m->n_convs : 1, sizeof *g->convs);
    g->matmuls = calloc(m->n_matmuls ? m->n_matmuls : 1, sizeof *g->matmuls);
    if (!g->layers || !g->convs || !g->matmuls)
        goto nomem;
    g->matmuls_listed = true;
    for (size_t i = 0; i < m->n_layers; i++) {
        const tc_model_node_t *n = m->layers[i];
        Traincast__V1__Layer *l = malloc(sizeof *l);
        if (!l)
            goto nomem;
        traincast__v1__layer__init(l);
        g->layers[g->n_layers++] = l;
        l->name = s_dup(n->name);
        l->op = s_dup(n->op);
        l->op_class = s_dup(tc_op_class_name(n->op_class));
        l->params = n->params;
        l->flops = n->flops;
        l->elems_in = n->elems_in;
        l->elems_out = n->elems_out;
        if (!l->name || !l->op || !l->op_class)
            goto nomem;
        if (n->rank_out) {
            l->out_shape = malloc((size_t)n->rank_out * sizeof *l->out_shape);
            if (!l->out_shape)
                goto nomem;
            memcpy(l->out_shape, n->out_shape, (size_t)n->rank_out * sizeof *l->out_shape);
            l->n_out_shape = (size_t)n->rank_out;
        }
    }
    for (size_t i = 0; i < m->n_convs; i++) {
        Traincast__V1__ConvUsage *u = malloc(sizeof *u);
        Traincast__V1__ConvConfig *c = malloc(sizeof *c);
        if (!u || !c) {
            free(u);
            free(c);
            goto nomem;
        }
        traincast__v1__conv_usage__init(u);
        traincast__v1__conv_config__init(c);
        tc_conv_config_to_proto(&m->convs[i].config, c);
        u->config = c;
        u->multiplicity = m->convs[i].multiplicity;
        u->first_layer = m->convs[i].first_layer;
        g->convs[g->n_convs++] = u;
    }
    for (size_t i = 0; i < m->n_matmuls; i++) {
        Traincast__V1__MatmulUsage *u = malloc(sizeof *u);
        Traincast__V1__MatmulConfig *c = malloc(sizeof *c);
        if (!u || !c) {
            free(u);
            free(c);
            goto nomem;
        }
        traincast__v1__matmul_usage__init(u);
        traincast__v1__matmul_config__init(c);
        tc_matmul_config_to_proto(&m->matmuls[i].config, c);
        u->config = c;
        u->multiplicity = m->matmuls[i].use.multiplicity;
        u->grad_a = m->matmuls[i].use.grad_a;
        u->grad_b = m->matmuls[i].use.grad_b;
        g->matmuls[g->n_matmuls++] = u;
    }
    *out = g;
    return 0;
nomem:
    tc_model_proto_free(&g);
    return tc_fail(TC_ENOMEM, "out of memory building the model graph message");
}

void tc_model_proto_free(Traincast__V1__ModelGraph **g_p)
{
    if (!g_p || !*g_p)
        return;
    /* Everything was malloc'ed, so protobuf-c's own free walks it. */
    traincast__v1__model_graph__free_unpacked(*g_p, NULL);
    *g_p = NULL;
}
