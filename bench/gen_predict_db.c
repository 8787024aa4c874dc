/* tc-gen-predict-db: the contents of a large fleet database for the predict
 * latency benchmark (bench/predict_latency.sh).
 *
 * Devices: --devices synthetic GPUs ("Synthetic GPU 01", ...), each with its
 * own speed. Conv results: every conv config of a conv list (the CNN set,
 * tests/data/cnn_set.convs) and of the ONNX files of --models at every
 * batch of --batches, in every direction
 * the config needs, on every device, --rounds times (older measurements
 * stay, as when a fleet re-benchmarks). Times follow a known law with a
 * deterministic jitter:
 *
 *   conv(config, direction, batch) = speed * (1e-9 ms * MACs * dirfactor + 0.01 ms) * jitter
 *   trace = conv sum + speed * (0.4 ms + 3e-7 ms * bn.elems)
 *
 * Matmul results likewise, for the matmul configs of the models given with
 * --models (ONNX files), in the directions their steps run:
 *
 *   matmul(config, direction, batch) = speed * (1e-9 ms * MACs * dirfactor + 0.005 ms) * jitter
 *
 * and a trace adds its model's matmul sum to its conv sum.
 *
 * The bulk tables are written as COPY text on stdout (`--table devices`,
 * `--table configs`, `--table results`, `--table matmul-configs`, `--table
 * matmul-results`; ids are assigned here, so load them into an empty
 * database, in that order) for psql to load; `--traces --db DSN` then stores
 * training traces of a few CNNs (committed ONNX exports) through the store,
 * as the aggregator would, so that `aggregator fit` has something to fit. */
#include "convlist.h"
#include "store.h"
#include "store_rows.h"
#include "tc_cli.h"
#include "tc_conv.h"
#include "tc_conv_step.h"
#include "tc_error.h"
#include "tc_matmul.h"
#include "tc_matmul_step.h"
#include "tc_model.h"
#include "tc_test_msg.h"
#include "tc_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CONFIGS 8192
#define S_EPOCH ((time_t)1767225600) /* 2026-01-01 00:00:00 UTC: the first round */

typedef struct {
    tc_conv_config_t cfg;
    int needs_bwd_data; /* some layer using it does not read the network input */
} s_config_t;

typedef struct {
    s_config_t *v;
    size_t n;
} s_configs_t;

typedef struct {
    tc_matmul_config_t cfg; /* minibatch 0 */
    tc_matmul_use_t use;    /* grad_a, grad_b: some model's step runs bwd_data, bwd_filter */
} s_mm_config_t;

typedef struct {
    s_mm_config_t *v;
    size_t n;
} s_mm_configs_t;

/* In the order of tc_conv_step_directions(). */
static const char *s_dirs[] = {"fwd", "bwd_filter", "bwd_data"};
static const double s_dirfactor[] = {1.0, 1.2, 1.1};
static const unsigned long s_memory_gib[] = {16, 24, 32, 40, 48, 80, 94, 141};

static double s_speed(unsigned dev, unsigned n_dev)
{
    /* 0.3 to 3, log-spaced: a fleet spanning a 10x speed range */
    return n_dev < 2 ? 1.0 : 0.3 * pow(10.0, (double)dev / (double)(n_dev - 1));
}

static uint64_t s_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* A key's hash h mixed with the batch, direction, device and round, as a
 * deterministic jitter in [0.95, 1.05]. */
static double s_jitter_of(uint64_t h, unsigned batch, int dir, unsigned dev, unsigned round)
{
    h = s_mix(h, batch);
    h = s_mix(h, (uint64_t)dir);
    h = s_mix(h, dev);
    h = s_mix(h, round);
    return 0.95 + 0.1 * (double)(h >> 11) / (double)(1ull << 53);
}

/* Deterministic jitter in [0.95, 1.05] per config, batch, direction, device, round. */
static double s_jitter(const tc_conv_config_t *c, unsigned batch, int dir, unsigned dev,
                       unsigned round)
{
    uint64_t h = 1469598103934665603ull;
#define X(x, y, name, kind, first) h = s_mix(h, (uint64_t)c->name);
    TC_CONV_KEY(X, , )
#undef X
    return s_jitter_of(h, batch, dir, dev, round);
}

static double s_conv_ms(const tc_conv_config_t *cfg, unsigned batch, int dir, unsigned dev,
                        unsigned n_dev, unsigned round)
{
    tc_conv_config_t c = *cfg;
    c.n = batch;
    return s_speed(dev, n_dev) * (1e-9 * tc_conv_macs(&c) * s_dirfactor[dir] + 0.01) *
           s_jitter(cfg, batch, dir, dev, round);
}

/* Deterministic jitter in [0.95, 1.05] per matmul config, batch, direction, device, round. */
static double s_mm_jitter(const tc_matmul_config_t *c, unsigned batch, int dir, unsigned dev,
                          unsigned round)
{
    uint64_t h = 0x84222325cbf29ce4ull;
#define X(x, y, name, kind, first) h = s_mix(h, (uint64_t)c->name);
    TC_MATMUL_KEY(X, , )
#undef X
    return s_jitter_of(h, batch, dir, dev, round);
}

/* dir indexes s_dirs and s_dirfactor: 0 fwd, 1 bwd_filter, 2 bwd_data. */
static double s_matmul_ms(const tc_matmul_config_t *cfg, unsigned batch, int dir, unsigned dev,
                          unsigned n_dev, unsigned round)
{
    tc_matmul_config_t c = *cfg;
    c.minibatch = batch;
    return s_speed(dev, n_dev) * (1e-9 * tc_matmul_macs(&c) * s_dirfactor[dir] + 0.005) *
           s_mm_jitter(cfg, batch, dir, dev, round);
}

/* A direction as an index into s_dirs / s_dirfactor. */
static int s_dir_index(Traincast__V1__Direction d)
{
    return d == TRAINCAST__V1__DIRECTION__DIRECTION_FWD          ? 0
           : d == TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER ? 1
                                                                 : 2;
}

typedef int (*s_model_fn)(const tc_model_t *m, void *arg);

/* fn on every ONNX file of `list` (--models), imported. */
static int s_each_model(const char *list, s_model_fn fn, void *arg)
{
    char **paths = NULL;
    size_t n_paths = 0;
    int rc = tc_parse_name_list(list, "--models", &paths, &n_paths);
    for (size_t i = 0; i < n_paths && rc == 0; i++) {
        tc_model_t *m = NULL;
        tc_model_opts_t o = {0};
        rc = tc_model_load_file(paths[i], &o, &m);
        if (rc < 0) {
            rc = tc_err_context(rc, "--models: %s", paths[i]);
            break;
        }
        rc = fn(m, arg);
        tc_model_destroy(&m);
    }
    tc_free_strv(paths, n_paths);
    return rc;
}

/* A model's matmul configs, each once in the set, with every gradient some
 * model's step computes for it. */
static int s_add_matmuls(const tc_model_t *m, void *arg)
{
    s_mm_configs_t *set = arg;
    for (size_t j = 0; j < tc_model_matmul_count(m); j++) {
        const tc_matmul_usage_t *u = tc_model_matmul(m, j);
        size_t k = 0;
        while (k < set->n && tc_matmul_key_cmp(&set->v[k].cfg, &u->config) != 0)
            k++;
        if (k == set->n) {
            s_mm_config_t *v = realloc(set->v, (set->n + 1) * sizeof *v);
            if (!v)
                return tc_fail(TC_ENOMEM, "out of memory");
            set->v = v;
            set->v[k] = (s_mm_config_t){.cfg = u->config};
            set->v[k].cfg.minibatch = 0;
            set->n++;
        }
        set->v[k].use.grad_a |= u->use.grad_a;
        set->v[k].use.grad_b |= u->use.grad_b;
    }
    return 0;
}

static int s_add_model(const char *model, const tc_conv_usage_t *convs, size_t n, void *arg)
{
    (void)model;
    s_configs_t *set = arg;
    for (size_t i = 0; i < n; i++) {
        tc_conv_config_t c = convs[i].config;
        c.n = 0;
        size_t j = 0;
        while (j < set->n && tc_conv_config_cmp(&set->v[j].cfg, &c) != 0)
            j++;
        if (j == set->n) {
            if (set->n == MAX_CONFIGS)
                return tc_fail(TC_EINVAL, "more than %d distinct conv configs", MAX_CONFIGS);
            set->v[set->n].cfg = c;
            set->v[set->n].needs_bwd_data = 0;
            set->n++;
        }
        if (!convs[i].first_layer)
            set->v[j].needs_bwd_data = 1;
    }
    return 0;
}

/* A model's convs, as a conv list's (s_add_model). */
static int s_add_convs(const tc_model_t *m, void *arg)
{
    return s_add_model(tc_model_name(m), tc_model_convs(m), tc_model_conv_count(m), arg);
}

static void s_device_name(unsigned dev, char *buf, size_t size)
{
    snprintf(buf, size, "Synthetic GPU %02u", dev + 1);
}

static void s_device_uuid(unsigned dev, char *buf, size_t size)
{
    snprintf(buf, size, "GPU-synthetic-%04u", dev + 1);
}

static unsigned long s_memory_bytes(unsigned dev)
{
    return s_memory_gib[dev % (sizeof s_memory_gib / sizeof s_memory_gib[0])] << 30;
}

static void s_write_devices(unsigned n_dev)
{
    for (unsigned d = 0; d < n_dev; d++) {
        char name[64], uuid[64];
        s_device_name(d, name, sizeof name);
        s_device_uuid(d, uuid, sizeof uuid);
        printf("%u\t%s\tcuda\t%s\tsynthetic-host-%u\t0\t8.0\t%u\t%lu\t1410\t1215\t550.54\t12.4\t"
               "cudnn\t9.1.0\n",
               d + 1, uuid, name, d / 4, 40 + 20 * d, s_memory_bytes(d));
    }
}

/* The COPY column list of --table configs (--columns). */
#define S_CONFIG_COLUMNS "config_id, " TC_SQL_CONV_KEY_COLS("")

static void s_write_configs(const s_configs_t *set)
{
    tc_buf_t b = {0};
    for (size_t i = 0; i < set->n; i++) {
        Traincast__V1__ConvConfig key = TRAINCAST__V1__CONV_CONFIG__INIT;
        tc_conv_config_to_proto(&set->v[i].cfg, &key);
        tc_copy_int(&b, (long long)(i + 1), 0);
        tc_copy_conv_key(&b, &key);
        b.len--; /* the key's last tab ends the row */
        tc_buf_putc(&b, '\n');
    }
    fwrite(b.data, 1, b.len, stdout);
    tc_buf_free(&b);
}

/* A result's samples_ms and sample_offsets_us, "{...}\t{...}" and the row's end. */
static void s_write_samples(double ms, unsigned samples)
{
    fputc('{', stdout);
    for (unsigned k = 0; k < samples; k++)
        printf("%s%.6g", k ? "," : "", ms * (0.98 + 0.05 * k / samples));
    fputs("}\t{", stdout);
    for (unsigned k = 0; k < samples; k++)
        printf("%s%u", k ? "," : "", (unsigned)(k * ms * 1000 + k));
    fputs("}\n", stdout);
}

static void s_timestamp(time_t t, char *buf, size_t size)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S+00", &tm);
}

/* One message per (round, device, batch), as an agent's bench job sends
 * them: `write` writes the rows of a message (its id and time, the device
 * index, the batch, the round), its results in sequence, a row's time the
 * message's plus a second every 50 rows. */
typedef void (*s_message_fn)(const void *set, const char *msgid, time_t at, unsigned dev,
                             unsigned n_dev, unsigned long batch, unsigned round,
                             unsigned samples);

static void s_write_messages(const void *set, s_message_fn write, time_t epoch, unsigned n_dev,
                             const unsigned long *batches, size_t n_batches, unsigned rounds,
                             unsigned samples)
{
    for (unsigned r = 0; r < rounds; r++)
        for (unsigned d = 0; d < n_dev; d++)
            for (size_t b = 0; b < n_batches; b++) {
                char msgid[TC_MSGID_LEN + 1];
                tc_msgid_new(msgid);
                time_t at = epoch + (time_t)r * 7 * 86400 + (time_t)d * 3600 + (time_t)b * 60;
                write(set, msgid, at, d, n_dev, batches[b], r, samples);
            }
}

static void s_conv_message(const void *arg, const char *msgid, time_t at, unsigned d,
                           unsigned n_dev, unsigned long batch, unsigned r, unsigned samples)
{
    const s_configs_t *set = arg;
    unsigned seq = 0;
    for (size_t i = 0; i < set->n; i++) {
        const s_config_t *c = &set->v[i];
        Traincast__V1__Direction step[TC_CONV_STEP_MAX_DIRS];
        int n_dirs = (int)tc_conv_step_directions(!c->needs_bwd_data, step);
        for (int dir = 0; dir < n_dirs; dir++) {
            double ms = s_conv_ms(&c->cfg, (unsigned)batch, dir, d, n_dev, r);
            char ts[40];
            s_timestamp(at + seq / 50, ts, sizeof ts);
            printf("%s\t%u\t%u\t%zu\t%lu\t%s\theuristic\tcudnn\talgo_%d\t%d\t%.6g\t%.6g\t"
                   "%.6g\t%.6g\t%u\t%lu\t%s\t9.1.0\t",
                   msgid, seq, d + 1, i + 1, batch, s_dirs[dir], (int)(seq % 3), (int)(seq % 3),
                   ms, ms * 0.98, ms * 1.03, ms * 0.01, samples, (unsigned long)(seq % 4) << 20,
                   ts);
            s_write_samples(ms, samples);
            seq++;
        }
    }
}

/* The COPY column list of --table matmul-configs (--columns). */
#define S_MM_CONFIG_COLUMNS "config_id, " TC_SQL_MATMUL_KEY_COLS("")

static void s_mm_put_U32(uint32_t v) { printf("\t%u", v); }
static void s_mm_put_BOOL(bool v) { fputs(v ? "\tt" : "\tf", stdout); }
static void s_mm_put_DTYPE(Traincast__V1__DType v) { printf("\t%s", tc_dtype_name(v)); }

static void s_write_mm_configs(const s_mm_configs_t *set)
{
    for (size_t i = 0; i < set->n; i++) {
        printf("%zu", i + 1);
#define X(x, y, name, kind, first) s_mm_put_##kind(set->v[i].cfg.name);
        TC_MATMUL_KEY(X, , )
#undef X
        putchar('\n');
    }
}

static void s_mm_message(const void *arg, const char *msgid, time_t at, unsigned d,
                         unsigned n_dev, unsigned long batch, unsigned r, unsigned samples)
{
    const s_mm_configs_t *set = arg;
    unsigned seq = 0;
    for (size_t i = 0; i < set->n; i++) {
        Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
        size_t n_dirs = tc_matmul_step_directions(&set->v[i].use, dirs);
        for (size_t j = 0; j < n_dirs; j++) {
            int dir = s_dir_index(dirs[j]);
            double ms = s_matmul_ms(&set->v[i].cfg, (unsigned)batch, dir, d, n_dev, r);
            char ts[40];
            s_timestamp(at + seq / 50, ts, sizeof ts);
            printf("%s\t%u\t%u\t%zu\t%lu\t%s\theuristic\tcublas\tgemm_%d\tgemm\t%.6g\t%.6g\t"
                   "%.6g\t%.6g\t%u\t%s\t",
                   msgid, seq, d + 1, i + 1, batch, s_dirs[dir], (int)(seq % 3), ms, ms * 0.98,
                   ms * 1.03, ms * 0.01, samples, ts);
            s_write_samples(ms, samples);
            seq++;
        }
    }
}

static int s_store_traces(const char *dsn, const char *models_dir, const char *traced,
                          const unsigned long *batches, size_t n_batches, unsigned n_dev,
                          unsigned rounds)
{
    char **names = NULL;
    size_t n_names = 0;
    int rc = tc_parse_name_list(traced, "--traced", &names, &n_names);
    if (rc < 0)
        return rc;
    tc_store_t *s = NULL;
    rc = tc_store_open(dsn, &s);
    for (size_t i = 0; i < n_names && rc == 0; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.onnx", models_dir, names[i]);
        tc_model_t *m = NULL;
        tc_model_opts_t o = {0};
        rc = tc_model_load_file(path, &o, &m);
        for (unsigned d = 0; d < n_dev && rc == 0; d++) {
            for (size_t b = 0; b < n_batches && rc == 0; b++) {
                unsigned batch = (unsigned)batches[b];
                double conv = 0;
                for (size_t j = 0; j < tc_model_conv_count(m); j++) {
                    const tc_conv_usage_t *u = tc_model_conv(m, j);
                    Traincast__V1__Direction step[TC_CONV_STEP_MAX_DIRS];
                    size_t n_dirs = tc_conv_step_directions(u->first_layer, step);
                    double ms[TC_CONV_STEP_MAX_DIRS] = {0};
                    for (size_t dir = 0; dir < n_dirs; dir++)
                        ms[dir] = s_conv_ms(&u->config, batch, (int)dir, d, n_dev, rounds - 1);
                    conv += tc_conv_step_ms(u->first_layer, u->multiplicity, ms);
                }
                for (size_t j = 0; j < tc_model_matmul_count(m); j++) {
                    const tc_matmul_usage_t *u = tc_model_matmul(m, j);
                    Traincast__V1__Direction dirs[TC_MATMUL_STEP_MAX_DIRS];
                    size_t n_dirs = tc_matmul_step_directions(&u->use, dirs);
                    double ms[TC_MATMUL_STEP_MAX_DIRS] = {0};
                    for (size_t k = 0; k < n_dirs; k++)
                        ms[k] = s_matmul_ms(&u->config, batch, s_dir_index(dirs[k]), d, n_dev,
                                            rounds - 1);
                    conv += tc_matmul_step_ms(&u->use, ms);
                }
                tc_features_t f;
                tc_model_features(m, batch, &f);
                double bn = 0, act = 0;
                tc_feature_value(&f, "bn.elems", &bn);
                for (int c = 0; c < TC_OPC_COUNT; c++)
                    act += f.cls[c].elems_out;
                double ms = conv + s_speed(d, n_dev) * (0.4 + 3e-7 * bn);

                char name[64], uuid[64];
                s_device_name(d, name, sizeof name);
                s_device_uuid(d, uuid, sizeof uuid);
                Traincast__V1__ModelGraph *g = NULL;
                rc = tc_model_to_proto(m, &g);
                if (rc < 0)
                    break;
                tc_envelope_t *env = tc_test_envelope("synthetic-agent");
                env->body_case = TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE;
                Traincast__V1__TrainTrace *t = tc_test_trace(uuid, tc_model_id(m), batch, ms);
                Traincast__V1__Device *dv = t->device;
                dv->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
                dv->name = name;
                dv->memory_bytes = s_memory_bytes(d);
                /* The cuDNN the traces ran with is the one the benchmarks were
                 * measured with (the fit counts only those). */
                free(dv->library);
                free(dv->library_version);
                free(t->library_version);
                dv->library = strdup("cudnn");
                dv->library_version = strdup("9.1.0");
                t->library_version = strdup("9.1.0");
                t->policy = TRAINCAST__V1__POLICY__POLICY_UNSPECIFIED;
                t->input_size = 224;
                t->threads = 0;
                for (size_t k = 0; k < t->n_iterations; k++)
                    t->iterations[k]->ms = ms;
                t->peak_memory_bytes = (uint64_t)(2e8 + 16.0 * (double)f.total_params + 4.0 * act);
                t->graph = g;
                env->train_trace = t;
                tc_store_outcome_t out;
                rc = tc_store_put(s, env, &out);
                tc_model_proto_free(&g);
                t->graph = NULL;
            }
        }
        if (rc < 0)
            rc = tc_err_context(rc, "storing traces of %s", path);
        tc_model_destroy(&m);
    }
    tc_store_destroy(&s);
    tc_free_strv(names, n_names);
    return rc;
}

int main(int argc, char **argv)
{
    const char *convs = NULL, *table = NULL, *dsn = NULL, *models_dir = NULL;
    const char *models = NULL;
    const char *batches_text = "1..512,24..512:8", *trace_batches_text = "8,16,32,64";
    const char *traced = "alexnet,resnet18,squeezenet1_1,mobilenet_v2,vgg11,densenet121";
    unsigned long n_dev = 10, rounds = 1, samples = 5;
    bool traces = false, columns = false;
    const tc_opt_t opts[] = {
        {"convs", TC_OPT_STR, &convs, "FILE", "conv list of the models (tests/data/cnn_set.convs)"},
        {"models", TC_OPT_STR, &models, "LIST",
         "ONNX files whose convs (beside --convs') and matmuls the tables hold"},
        {"devices", TC_OPT_UINT, &n_dev, "N", "synthetic devices (default 10)"},
        {"batches", TC_OPT_STR, &batches_text, "LIST",
         "batch sizes benchmarked (default 1..512,24..512:8)"},
        {"rounds", TC_OPT_UINT, &rounds, "N", "times every item was measured (default 1)"},
        {"samples", TC_OPT_UINT, &samples, "N", "samples kept per result (default 5)"},
        {"table", TC_OPT_STR, &table, "NAME",
         "write COPY text of devices, configs, results, matmul-configs or matmul-results to "
         "stdout"},
        {"columns", TC_OPT_FLAG, &columns, NULL,
         "with --table configs or matmul-configs: print its COPY column list instead"},
        {"traces", TC_OPT_FLAG, &traces, NULL, "store traces of --traced models (needs --db)"},
        {"db", TC_OPT_STR, &dsn, "DSN", "database to store traces in"},
        {"models-dir", TC_OPT_STR, &models_dir, "DIR", "where NAME.onnx of --traced are"},
        {"traced", TC_OPT_STR, &traced, "LIST", "CNNs with traces (default: 6 of the set)"},
        {"trace-batches", TC_OPT_STR, &trace_batches_text, "LIST",
         "batch sizes traced (default 8,16,32,64; each must be in --batches)"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "tc-gen-predict-db",
        .summary = "Generate a fleet database for the predict benchmark: COPY text of devices, "
                   "conv configs and conv results on stdout (--table), or traces stored through "
                   "the store (--traces --db).",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    unsigned long *batches = NULL, *tbatches = NULL;
    size_t n_batches = 0, n_tbatches = 0;
    s_configs_t set = {0};
    s_mm_configs_t mm = {0};
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        goto done;
    if (!table == !traces) {
        rc = tc_fail(TC_EUSAGE, "give exactly one of --table NAME or --traces");
        goto done;
    }
    if (n_dev == 0 || rounds == 0 || samples == 0 || samples > 200) {
        rc = tc_fail(TC_EUSAGE, "--devices and --rounds must be > 0, --samples 1..200");
        goto done;
    }
    rc = tc_parse_uint_list(batches_text, "--batches", 1, 65536, &batches, &n_batches);
    if (rc == 0)
        rc = tc_parse_uint_list(trace_batches_text, "--trace-batches", 1, 65536, &tbatches,
                                &n_tbatches);
    if (rc < 0)
        goto done;
    for (size_t i = 0; traces && i < n_tbatches; i++) {
        size_t j = 0;
        while (j < n_batches && batches[j] != tbatches[i])
            j++;
        if (j == n_batches) {
            rc = tc_fail(TC_EUSAGE, "--trace-batches: %lu is not in --batches", tbatches[i]);
            goto done;
        }
    }
    if (traces) {
        if (!dsn || !models_dir) {
            rc = tc_fail(TC_EUSAGE, "--traces needs --db DSN and --models-dir DIR");
            goto done;
        }
        rc = s_store_traces(dsn, models_dir, traced, tbatches, n_tbatches, (unsigned)n_dev,
                            (unsigned)rounds);
        goto done;
    }
    if (!strcmp(table, "devices")) {
        s_write_devices((unsigned)n_dev);
        goto done;
    }
    if (columns && !strcmp(table, "configs")) {
        puts(S_CONFIG_COLUMNS);
        goto done;
    }
    if (columns && !strcmp(table, "matmul-configs")) {
        puts(S_MM_CONFIG_COLUMNS);
        goto done;
    }
    if (!strcmp(table, "matmul-configs") || !strcmp(table, "matmul-results")) {
        if (!models) {
            rc = tc_fail(TC_EUSAGE, "--table %s needs --models LIST", table);
            goto done;
        }
        rc = s_each_model(models, s_add_matmuls, &mm);
        if (rc < 0)
            goto done;
        if (!strcmp(table, "matmul-configs"))
            s_write_mm_configs(&mm);
        else /* half an hour after the convs of a round */
            s_write_messages(&mm, s_mm_message, S_EPOCH + 1800, (unsigned)n_dev, batches,
                             n_batches, (unsigned)rounds, (unsigned)samples);
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = tc_fail(TC_EIO, "writing to stdout failed");
        goto done;
    }
    if (strcmp(table, "configs") && strcmp(table, "results")) {
        rc = tc_fail(TC_EUSAGE,
                     "--table must be devices, configs, results, matmul-configs or "
                     "matmul-results (got '%s')",
                     table);
        goto done;
    }
    if (!convs && !models) {
        rc = tc_fail(TC_EUSAGE, "--table %s needs --convs FILE or --models LIST", table);
        goto done;
    }
    set.v = calloc(MAX_CONFIGS, sizeof *set.v);
    if (!set.v) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    rc = convs ? tc_convlist_read(convs, s_add_model, &set) : 0;
    if (rc == 0 && models)
        rc = s_each_model(models, s_add_convs, &set);
    if (rc < 0)
        goto done;
    if (!strcmp(table, "configs"))
        s_write_configs(&set);
    else
        s_write_messages(&set, s_conv_message, S_EPOCH, (unsigned)n_dev, batches, n_batches,
                         (unsigned)rounds, (unsigned)samples);
    if (fflush(stdout) != 0 || ferror(stdout))
        rc = tc_fail(TC_EIO, "writing to stdout failed");
done:
    free(set.v);
    free(mm.v);
    free(batches);
    free(tbatches);
    tc_cli_result_free(&cli);
    if (rc < 0) {
        fprintf(stderr, "tc-gen-predict-db: error: %s\n", tc_errmsg());
        return tc_exit_status(rc);
    }
    return 0;
}
