/* aggregator export: some device classes' conv and matmul benchmarks (with
 * every sample), traces (with every iteration) and the model graphs those
 * need, as a self-describing, versioned benchmark set
 * (docs/benchmark-sets.md). */
#include "benchset.h"
#include "cli_db.h"
#include "commands.h"
#include "device_match.h"
#include "store.h"
#include "store_model.h"
#include "store_set.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    tc_set_writer_t *writer;
    tc_progress_t *bar;
    long long done;
} s_export_t;

static int s_put(void *arg, const tc_envelope_t *env)
{
    s_export_t *x = arg;
    int rc = tc_set_writer_put(x->writer, env);
    if (rc == 0 && x->bar)
        tc_progress_update(x->bar, (uint64_t)++x->done, tc_body_name(env));
    return rc;
}

/* What the set holds: the device classes --device selects, and the
 * summary its header states. */
typedef struct {
    tc_device_class_t *all;
    size_t n_all, *idx, n;
    char **names; /* the selected classes' names (all's), NULL-ended */
    char *devices_json, *models_json;
    long long messages;
} s_contents_t;

/* Free what s_select and tc_store_export_summary filled in. */
static void s_contents_free(s_contents_t *c)
{
    free(c->devices_json);
    free(c->models_json);
    free(c->names);
    free(c->idx);
    free(c->all);
}

/* The label of the set's source: --source, else this host's name (in host,
 * "unknown" if it has none); at most 200 bytes. */
static int s_source(const char **source, char *host, size_t size)
{
    int rc = 0;
    if (!*source || !**source) {
        if (gethostname(host, size - 1) != 0 || !*host)
            snprintf(host, size, "unknown");
        *source = host;
    }
    if (strlen(*source) > 200)
        TC_FAIL_GOTO(TC_EUSAGE, "--source must be at most 200 bytes");
err:
    return rc;
}

/* Select the device classes --device names, and list their names (into c,
 * which the caller frees, also on failure). */
static int s_select(tc_store_t *store, const char *devices, s_contents_t *c)
{
    int rc;
    TC_TRY(tc_store_device_classes(store, &c->all, &c->n_all));
    TC_TRY(tc_device_select(c->all, c->n_all, devices, "--device", &c->idx, &c->n));
    if (!(c->names = calloc(c->n + 1, sizeof *c->names)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->n; i++)
        c->names[i] = c->all[c->idx[i]].name;
err:
    return rc;
}

/* Write the set to out: its header (a new set id, into set_id, and the time
 * now), the messages of the selected classes and its trailer. The writer and
 * the progress bar in x are the caller's to destroy, also on failure. */
static int s_write_set(tc_store_t *store, const s_contents_t *c, const char *out,
                       const char *source, s_export_t *x, char set_id[TC_MSGID_LEN + 1])
{
    int rc;
    char exported_at[40];
    tc_msgid_new(set_id);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(exported_at, sizeof exported_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    tc_set_header_t h = {
        .format_version = TC_SET_FORMAT_VERSION,
        .set_id = set_id,
        .source = source,
        .traincast_version = TRAINCAST_VERSION,
        .schema_version = tc_store_binary_schema_version(),
        .protocol_version = (int)TC_PROTOCOL_VERSION,
        .exported_at = exported_at,
        .records = c->messages,
        .devices_json = c->devices_json,
        .models_json = c->models_json,
    };
    TC_TRY(tc_set_writer_open(out, &h, &x->writer));
    x->bar = tc_progress_new("exporting", (uint64_t)(c->messages ? c->messages : 1));
    TC_TRY(tc_store_export_messages(store, c->names, c->n, s_put, x));
    if (tc_set_writer_count(x->writer) != c->messages)
        TC_FAIL_GOTO(TC_EDB, "internal: the set holds %lld messages, its header says %lld",
                     tc_set_writer_count(x->writer), c->messages);
    TC_TRY(tc_set_writer_finish(x->writer));
err:
    return rc;
}

int tc_cmd_export(int argc, char **argv)
{
    const char *db = NULL, *devices = NULL, *out = NULL, *source = NULL;
    const tc_opt_t opts[] = {
        {"device", TC_OPT_STR, &devices, "all|NAME,...",
         "device classes to export (a full name, or a part that matches one class)", true},
        {"out", TC_OPT_STR, &out, "FILE", "the set to write (FILE.partial until complete)", true},
        {"source", TC_OPT_STR, &source, "LABEL",
         "where the set comes from, as importers will see it (default: this host's name)"},
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator export",
        .summary = "Write the conv and matmul benchmarks (with every sample), traces (with "
                   "every iteration)\nand model graphs of some device classes as a benchmark "
                   "set that 'aggregator import'\nloads into another traincast database.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "The set is one file: a header (format version, traincast and schema version, "
                  "source, the\ndevices and models), the messages that brought the results, "
                  "and a trailer with their\ncount and SHA-256. Fits are not exported: the "
                  "importer fits. See docs/benchmark-sets.md.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_store_t *store = NULL;
    s_contents_t c = {0};
    s_export_t x = {0};
    bool snapshot = false;
    char host[256] = "", set_id[TC_MSGID_LEN + 1];
    TC_TRY(s_source(&source, host, sizeof host));
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    TC_TRY(s_select(store, devices, &c));
    TC_TRY(tc_store_export_begin(store));
    snapshot = true;
    TC_TRY(tc_store_export_summary(store, c.names, c.n, &c.devices_json, &c.models_json,
                                   &c.messages));
    TC_TRY(s_write_set(store, &c, out, source, &x, set_id));
    tc_progress_destroy(&x.bar);
    printf("wrote %s: set %s from '%s', %lld messages of %zu device class%s\n", out, set_id,
           source, c.messages, c.n, c.n == 1 ? "" : "es");
    for (size_t i = 0; i < c.n; i++)
        printf("  %s (%ld traces)\n", c.names[i], c.all[c.idx[i]].traces);
err:
    tc_progress_destroy(&x.bar);
    tc_set_writer_destroy(&x.writer);
    if (snapshot)
        tc_store_export_end(store);
    s_contents_free(&c);
    tc_store_destroy(&store);
    tc_cli_result_free(&cli);
    return rc;
}
