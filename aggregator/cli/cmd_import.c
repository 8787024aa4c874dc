/* aggregator import: load a benchmark set that 'aggregator export' wrote in
 * another traincast database (docs/benchmark-sets.md). */
#include "benchset.h"
#include "commands.h"
#include "store.h"
#include "store_set.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The devices of the set as they are stored here. */
typedef struct {
    char *uuid, *original, *name;
    bool renamed;
} s_device_t;

typedef struct {
    s_device_t *v;
    size_t n, cap;
} s_devices_t;

static void s_devices_free(s_devices_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].uuid);
        free(d->v[i].original);
        free(d->v[i].name);
    }
    free(d->v);
    memset(d, 0, sizeof *d);
}

/* The name the device of a message takes here (chosen once per uuid). */
static int s_device_name(tc_store_t *store, s_devices_t *devs, const char *source,
                         const Traincast__V1__Device *d, const char **name)
{
    for (size_t i = 0; i < devs->n; i++) {
        if (!strcmp(devs->v[i].uuid, d->uuid)) {
            *name = devs->v[i].name;
            return 0;
        }
    }
    if (devs->n == devs->cap) {
        size_t cap = devs->cap ? devs->cap * 2 : 8;
        s_device_t *v = realloc(devs->v, cap * sizeof *v);
        if (!v)
            return tc_fail(TC_ENOMEM, "out of memory");
        devs->v = v;
        devs->cap = cap;
    }
    char chosen[512];
    bool renamed = false;
    int rc = tc_store_import_device_name(store, d, source, chosen, sizeof chosen, &renamed);
    if (rc < 0)
        return rc;
    s_device_t *e = &devs->v[devs->n];
    e->uuid = strdup(d->uuid);
    e->original = strdup(d->name);
    e->name = strdup(chosen);
    e->renamed = renamed;
    if (!e->uuid || !e->original || !e->name) {
        free(e->uuid);
        free(e->original);
        free(e->name);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    devs->n++;
    *name = e->name;
    return 0;
}

static Traincast__V1__Device *s_message_device(const tc_envelope_t *env)
{
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS && env->conv_results)
        return env->conv_results->device;
    if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE && env->train_trace)
        return env->train_trace->device;
    return NULL;
}

int tc_cmd_import(int argc, char **argv)
{
    const char *db = NULL;
    const tc_opt_t opts[] = {
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator import",
        .summary = "Load a benchmark set written by 'aggregator export' in another traincast "
                   "database: its\ndevices, conv benchmarks, traces and model graphs. Its "
                   "devices can then be fitted and\npredicted like local ones; 'aggregator "
                   "status' shows where they came from.",
        .positional = "FILE",
        .min_positional = 1,
        .max_positional = 1,
        .config_file = true,
        .epilog = "All or nothing: a truncated or corrupt set stores nothing and names its "
                  "first bad record.\nImporting a set again stores nothing new. A device whose "
                  "name is taken here by other\nhardware is imported as 'NAME [SOURCE]'. A set "
                  "of a newer format is refused. See\ndocs/benchmark-sets.md.",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown) {
        tc_cli_result_free(&cli);
        return rc;
    }
    const char *path = cli.positional[0];
    tc_set_reader_t *reader = NULL;
    tc_store_t *store = NULL;
    tc_envelope_t *env = NULL;
    tc_progress_t *bar = NULL;
    s_devices_t devs = {0};
    char **names = NULL, **renamed = NULL, **uuids = NULL, **originals = NULL;
    bool open = false, again = false;
    long long import_id = 0, stored = 0, duplicates = 0;
    char when[40] = "";
    TC_TRY(tc_set_reader_open(path, &reader));
    const tc_set_header_t *h = tc_set_reader_header(reader);
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    /* The file's SHA-256 is known at its end; the row is written with it
     * then (tc_store_import_finish keeps the first import's row). */
    TC_TRY(tc_store_import_begin(store, h, path, "", &import_id, &again, when, sizeof when));
    open = true;
    bar = tc_progress_new("importing", (uint64_t)(h->records ? h->records : 1));
    for (;;) {
        TC_TRY(tc_set_reader_next(reader, &env));
        if (!env)
            break;
        long long record = tc_set_reader_record(reader);
        if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS &&
            env->body_case != TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH &&
            env->body_case != TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE)
            TC_FAIL_GOTO(TC_EINVAL,
                         "%s: record %lld of %lld: a %s message does not belong in a benchmark "
                         "set (nothing was stored)",
                         path, record, h->records, tc_body_name(env));
        Traincast__V1__Device *d = s_message_device(env);
        char *own_name = NULL;
        if (d && d->uuid && d->name) {
            const char *name = NULL;
            TC_TRY(s_device_name(store, &devs, h->source, d, &name));
            own_name = d->name;
            d->name = (char *)name;
        }
        tc_store_outcome_t outcome;
        rc = tc_store_put(store, env, &outcome);
        if (own_name)
            d->name = own_name; /* the unpacked message frees its own */
        if (rc < 0) {
            tc_err_context(rc, "%s: record %lld of %lld (%s message %s); nothing was stored",
                           path, record, h->records, tc_body_name(env), env->message_id);
            rc = rc == TC_EDB ? rc : TC_EINVAL;
            goto err;
        }
        if (outcome == TC_STORE_DUPLICATE)
            duplicates++;
        else
            stored++;
        tc_envelope_free(&env);
        tc_progress_update(bar, (uint64_t)record, NULL);
    }
    size_t n_renamed = 0;
    names = calloc(devs.n + 1, sizeof *names);
    renamed = calloc(devs.n + 1, sizeof *renamed);
    uuids = calloc(devs.n + 1, sizeof *uuids);
    originals = calloc(devs.n + 1, sizeof *originals);
    if (!names || !renamed || !uuids || !originals)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    size_t n_names = 0;
    for (size_t i = 0; i < devs.n; i++) {
        bool seen = false;
        for (size_t k = 0; k < n_names; k++)
            seen |= !strcmp(names[k], devs.v[i].name);
        if (!seen)
            names[n_names++] = devs.v[i].name;
        if (!devs.v[i].renamed)
            continue;
        size_t len = strlen(devs.v[i].original) + strlen(devs.v[i].name) + 8;
        if (!(renamed[n_renamed] = malloc(len)))
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        snprintf(renamed[n_renamed], len, "%s -> %s", devs.v[i].original, devs.v[i].name);
        uuids[n_renamed] = devs.v[i].uuid;
        originals[n_renamed] = devs.v[i].original;
        n_renamed++;
    }
    TC_TRY(tc_store_import_record_file(store, tc_set_reader_sha256(reader)));
    TC_TRY(tc_store_import_finish(store, stored, duplicates, names, n_names, renamed, uuids,
                                  originals, n_renamed));
    open = false;
    tc_progress_destroy(&bar);
    printf("imported %s: set %s from '%s' (exported %s by traincast %s), import %lld\n", path,
           h->set_id, h->source, h->exported_at, h->traincast_version, import_id);
    printf("  %lld messages stored, %lld already here\n", stored, duplicates);
    if (again && stored == 0)
        printf("  this set was imported before (import %lld, %s UTC): nothing new\n", import_id,
               when);
    for (size_t i = 0; i < n_names; i++)
        printf("  device '%s'\n", names[i]);
    for (size_t i = 0; i < devs.n; i++) {
        if (devs.v[i].renamed)
            printf("  renamed: '%s' (uuid %s) is stored as '%s': a device of that name here is "
                   "other hardware\n",
                   devs.v[i].original, devs.v[i].uuid, devs.v[i].name);
    }
    if (stored)
        printf("next: aggregator fit, then aggregator predict --gpu all ...\n");
err:
    if (open)
        tc_store_import_abort(store);
    tc_progress_destroy(&bar);
    tc_envelope_free(&env);
    for (size_t i = 0; renamed && renamed[i]; i++)
        free(renamed[i]);
    free(renamed);
    free(names);
    free(uuids);
    free(originals);
    s_devices_free(&devs);
    tc_store_destroy(&store);
    tc_set_reader_destroy(&reader);
    tc_cli_result_free(&cli);
    return rc;
}
