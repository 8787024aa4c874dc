/* aggregator import: load a benchmark set that 'aggregator export' wrote in
 * another traincast database (docs/benchmark-sets.md). */
#include "benchset.h"
#include "cli_db.h"
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

/* The lists tc_store_import_finish records: the device names of the set
 * (each once) and its renamed devices; the strings are the devices'. */
typedef struct {
    char **names, **renamed, **uuids, **originals;
    size_t n_names, n_renamed;
} s_lists_t;

/* Free the lists (the "ORIGINAL -> NAME" texts are theirs, the rest not). */
static void s_lists_free(s_lists_t *l)
{
    for (size_t i = 0; l->renamed && l->renamed[i]; i++)
        free(l->renamed[i]);
    free(l->renamed);
    free(l->names);
    free(l->uuids);
    free(l->originals);
    memset(l, 0, sizeof *l);
}

/* What an import did: its row, and the messages it stored or found here. */
typedef struct {
    long long import_id, stored, duplicates;
    bool again;
    char when[40];
} s_import_t;

/* Store one record of the set under the name its device takes here, and
 * count it as stored or as already here. */
static int s_import_message(tc_store_t *store, s_devices_t *devs, const char *path,
                            const tc_set_header_t *h, long long record, tc_envelope_t *env,
                            s_import_t *im)
{
    int rc;
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
        TC_TRY(s_device_name(store, devs, h->source, d, &name));
        own_name = d->name;
        d->name = (char *)name;
    }
    tc_store_outcome_t outcome;
    rc = tc_store_put(store, env, &outcome);
    if (own_name)
        d->name = own_name; /* the unpacked message frees its own */
    if (rc < 0) {
        tc_err_context(rc, "%s: record %lld of %lld (%s message %s); nothing was stored", path,
                       record, h->records, tc_body_name(env), env->message_id);
        return rc == TC_EDB ? rc : TC_EINVAL;
    }
    if (outcome == TC_STORE_DUPLICATE)
        im->duplicates++;
    else
        im->stored++;
err:
    return rc;
}

/* Store every record of the set in order, the progress bar following. */
static int s_import_records(tc_store_t *store, tc_set_reader_t *reader, const char *path,
                            s_devices_t *devs, tc_progress_t *bar, s_import_t *im)
{
    const tc_set_header_t *h = tc_set_reader_header(reader);
    tc_envelope_t *env = NULL;
    int rc = 0;
    for (;;) {
        TC_TRY(tc_set_reader_next(reader, &env));
        if (!env)
            break;
        long long record = tc_set_reader_record(reader);
        TC_TRY(s_import_message(store, devs, path, h, record, env, im));
        tc_envelope_free(&env);
        tc_progress_update(bar, (uint64_t)record, NULL);
    }
err:
    tc_envelope_free(&env);
    return rc;
}

/* Build the lists of the devices stored (into *l, which the caller frees
 * with s_lists_free, also on failure). */
static int s_import_lists(const s_devices_t *devs, s_lists_t *l)
{
    int rc = 0;
    l->names = calloc(devs->n + 1, sizeof *l->names);
    l->renamed = calloc(devs->n + 1, sizeof *l->renamed);
    l->uuids = calloc(devs->n + 1, sizeof *l->uuids);
    l->originals = calloc(devs->n + 1, sizeof *l->originals);
    if (!l->names || !l->renamed || !l->uuids || !l->originals)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    for (size_t i = 0; i < devs->n; i++) {
        const s_device_t *dv = &devs->v[i];
        bool seen = false;
        for (size_t k = 0; k < l->n_names; k++)
            seen |= !strcmp(l->names[k], dv->name);
        if (!seen)
            l->names[l->n_names++] = dv->name;
        if (!dv->renamed)
            continue;
        size_t len = strlen(dv->original) + strlen(dv->name) + 8;
        if (!(l->renamed[l->n_renamed] = malloc(len)))
            TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
        snprintf(l->renamed[l->n_renamed], len, "%s -> %s", dv->original, dv->name);
        l->uuids[l->n_renamed] = dv->uuid;
        l->originals[l->n_renamed] = dv->original;
        l->n_renamed++;
    }
err:
    return rc;
}

/* Print what the import stored, the devices it brought and those renamed. */
static void s_print_import(const char *path, const tc_set_header_t *h, const s_import_t *im,
                           const s_lists_t *l, const s_devices_t *devs)
{
    printf("imported %s: set %s from '%s' (exported %s by traincast %s), import %lld\n", path,
           h->set_id, h->source, h->exported_at, h->traincast_version, im->import_id);
    printf("  %lld messages stored, %lld already here\n", im->stored, im->duplicates);
    if (im->again && im->stored == 0)
        printf("  this set was imported before (import %lld, %s UTC): nothing new\n",
               im->import_id, im->when);
    for (size_t i = 0; i < l->n_names; i++)
        printf("  device '%s'\n", l->names[i]);
    for (size_t i = 0; i < devs->n; i++) {
        if (devs->v[i].renamed)
            printf("  renamed: '%s' (uuid %s) is stored as '%s': a device of that name here is "
                   "other hardware\n",
                   devs->v[i].original, devs->v[i].uuid, devs->v[i].name);
    }
    if (im->stored)
        printf("next: aggregator fit, then aggregator predict --gpu all ...\n");
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
                   "database: its\ndevices, conv and matmul benchmarks, traces and model graphs. "
                   "Its devices can then be\nfitted and predicted like local ones; 'aggregator "
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
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    const char *path = cli.positional[0];
    tc_set_reader_t *reader = NULL;
    tc_store_t *store = NULL;
    tc_progress_t *bar = NULL;
    s_devices_t devs = {0};
    s_lists_t lists = {0};
    s_import_t im = {0};
    bool open = false;
    TC_TRY(tc_set_reader_open(path, &reader));
    const tc_set_header_t *h = tc_set_reader_header(reader);
    TC_TRY(tc_store_open(tc_default_dsn(db), &store));
    TC_TRY(tc_store_check_schema(store));
    /* The file's SHA-256 is known at its end; the row is written with it
     * then (tc_store_import_finish keeps the first import's row). */
    TC_TRY(tc_store_import_begin(store, h, path, "", &im.import_id, &im.again, im.when,
                                 sizeof im.when));
    open = true;
    bar = tc_progress_new("importing", (uint64_t)(h->records ? h->records : 1));
    TC_TRY(s_import_records(store, reader, path, &devs, bar, &im));
    TC_TRY(s_import_lists(&devs, &lists));
    TC_TRY(tc_store_import_record_file(store, tc_set_reader_sha256(reader)));
    TC_TRY(tc_store_import_finish(store, im.stored, im.duplicates, lists.names, lists.n_names,
                                  lists.renamed, lists.uuids, lists.originals, lists.n_renamed,
                                  h->devices_seen_json));
    open = false;
    tc_progress_destroy(&bar);
    s_print_import(path, h, &im, &lists, &devs);
err:
    if (open)
        tc_store_import_abort(store);
    tc_progress_destroy(&bar);
    s_lists_free(&lists);
    s_devices_free(&devs);
    tc_store_destroy(&store);
    tc_set_reader_destroy(&reader);
    tc_cli_result_free(&cli);
    return rc;
}
