/* aggregator export: some device classes' conv benchmarks (with every
 * sample), traces (with every iteration) and the model graphs those need,
 * as a self-describing, versioned benchmark set (docs/benchmark-sets.md). */
#include "benchset.h"
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
        .summary = "Write the conv benchmarks (with every sample), traces (with every "
                   "iteration) and model graphs\nof some device classes as a benchmark set "
                   "that 'aggregator import' loads into another\ntraincast database.",
        .max_positional = 0,
        .config_file = true,
        .epilog = "The set is one file: a header (format version, traincast and schema version, "
                  "source, the\ndevices and models), the messages that brought the results, "
                  "and a trailer with their\ncount and SHA-256. Fits are not exported: the "
                  "importer fits. See docs/benchmark-sets.md.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown) {
        tc_cli_result_free(&cli);
        return rc;
    }
    tc_store_t *store = NULL;
    tc_device_class_t *all = NULL;
    size_t n_all = 0, *idx = NULL, n = 0;
    char **names = NULL, *devices_json = NULL, *models_json = NULL;
    long long messages = 0;
    s_export_t x = {0};
    bool snapshot = false;
    char host[256] = "";
    if (!source || !*source) {
        if (gethostname(host, sizeof host - 1) != 0 || !*host)
            snprintf(host, sizeof host, "unknown");
        source = host;
    }
    if (strlen(source) > 200)
        TC_FAIL_GOTO(TC_EUSAGE, "--source must be at most 200 bytes");
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    TC_TRY(tc_store_device_classes(store, &all, &n_all));
    TC_TRY(tc_device_select(all, n_all, devices, "--device", &idx, &n));
    if (!(names = calloc(n + 1, sizeof *names)))
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        names[i] = all[idx[i]].name;
    TC_TRY(tc_store_export_begin(store));
    snapshot = true;
    TC_TRY(tc_store_export_summary(store, names, n, &devices_json, &models_json, &messages));

    char set_id[TC_MSGID_LEN + 1], exported_at[40];
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
        .records = messages,
        .devices_json = devices_json,
        .models_json = models_json,
    };
    TC_TRY(tc_set_writer_open(out, &h, &x.writer));
    x.bar = tc_progress_new("exporting", (uint64_t)(messages ? messages : 1));
    TC_TRY(tc_store_export_messages(store, names, n, s_put, &x));
    if (tc_set_writer_count(x.writer) != messages)
        TC_FAIL_GOTO(TC_EDB, "internal: the set holds %lld messages, its header says %lld",
                     tc_set_writer_count(x.writer), messages);
    TC_TRY(tc_set_writer_finish(x.writer));
    tc_progress_destroy(&x.bar);
    printf("wrote %s: set %s from '%s', %lld messages of %zu device class%s\n", out, set_id,
           source, messages, n, n == 1 ? "" : "es");
    for (size_t i = 0; i < n; i++)
        printf("  %s (%ld traces)\n", names[i], all[idx[i]].traces);
err:
    tc_progress_destroy(&x.bar);
    tc_set_writer_destroy(&x.writer);
    if (snapshot)
        tc_store_export_end(store);
    free(devices_json);
    free(models_json);
    free(names);
    free(idx);
    free(all);
    tc_store_destroy(&store);
    tc_cli_result_free(&cli);
    return rc;
}
