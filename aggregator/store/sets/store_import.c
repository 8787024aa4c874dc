/* Importing benchmark sets: the imports row, device names, and the
 * transaction every message of a set is stored in (store_set.h). */
#include "store_set.h"

#include "store_internal.h"

#include "tc_buf.h"
#include "tc_error.h"
#include "tc_validate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long s_ll(PGresult *res, int r, int c)
{
    return PQgetisnull(res, r, c) ? 0 : strtoll(PQgetvalue(res, r, c), NULL, 10);
}

int tc_store_import_begin(tc_store_t *s, const tc_set_header_t *h, const char *file,
                          const char *file_sha256, long long *import_id, bool *again,
                          char *when, size_t when_size)
{
    *import_id = 0;
    *again = false;
    if (when_size)
        when[0] = '\0';
    int rc = tc_store_staging(s); /* its messages are stored in its transaction */
    if (rc == 0)
        rc = tc_store_begin(s);
    char fv[16], sv[16];
    snprintf(fv, sizeof fv, "%d", h->format_version);
    snprintf(sv, sizeof sv, "%d", h->schema_version);
    const char *params[] = {h->set_id, h->source, file, file_sha256, fv,
                            h->traincast_version, sv, *h->exported_at ? h->exported_at : NULL};
    PGresult *res = NULL;
    if (rc == 0)
        rc = tc_store_query(
            s, &res, "recording the import",
            "WITH ins AS (INSERT INTO imports (set_id, source, file_name, file_sha256, "
            "format_version, traincast_version, schema_version, exported_at, records, stored, "
            "duplicates, devices) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0, 0, '{}') "
            "ON CONFLICT (set_id) DO NOTHING RETURNING import_id, imported_at) "
            "SELECT import_id, false, imported_at FROM ins UNION ALL "
            "SELECT import_id, true, imported_at FROM imports WHERE set_id = $1 LIMIT 1",
            8, params);
    if (rc == 0 && PQntuples(res) != 1) {
        PQclear(res);
        res = NULL;
        rc = tc_fail(TC_EDB, "database: the import of set %s could not be read back", h->set_id);
    }
    if (rc == 0) {
        *import_id = s_ll(res, 0, 0);
        *again = PQgetvalue(res, 0, 1)[0] == 't';
        snprintf(when, when_size, "%.19s", PQgetvalue(res, 0, 2));
        PQclear(res);
        s->import_id = *import_id;
    }
    if (rc < 0)
        tc_store_rollback(s);
    return rc;
}

int tc_store_import_device_name(tc_store_t *s, const Traincast__V1__Device *d,
                                const char *source, char *name, size_t size, bool *renamed)
{
    *renamed = false;
    snprintf(name, size, "%s", d->name);
    const char *up[] = {d->uuid};
    PGresult *res = NULL;
    int rc = tc_store_query(s, &res, "looking up the device",
                            "SELECT name FROM devices WHERE uuid = $1", 1, up);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 1) {
        /* This very device is here already (imported before, or measured
         * here): it keeps its name. */
        snprintf(name, size, "%s", PQgetvalue(res, 0, 0));
        *renamed = strcmp(name, d->name) != 0;
        PQclear(res);
        return 0;
    }
    PQclear(res);
    char mp[16], thr[16], mem[32];
    snprintf(mp, sizeof mp, "%u", d->multiprocessors);
    snprintf(thr, sizeof thr, "%u", d->threads);
    snprintf(mem, sizeof mem, "%" PRIu64, d->memory_bytes);
    char candidate[TC_MAX_NAME_LEN + 1];
    snprintf(candidate, sizeof candidate, "%s", d->name);
    for (int attempt = 1; attempt < 100; attempt++) {
        const char *params[] = {candidate, tc_device_kind_name(d->kind), d->compute_capability,
                                mp, thr, mem, d->library, d->library_version};
        rc = tc_store_query(
            s, &res, "comparing the device with local ones",
            "SELECT count(*), count(*) FILTER (WHERE kind = $2 AND coalesce(compute_capability, "
            "'') = $3 AND coalesce(multiprocessors, 0) = $4::integer AND coalesce(threads, 0) = "
            "$5::integer AND coalesce(memory_bytes, 0) = $6::bigint AND coalesce(library, '') = "
            "$7 AND coalesce(library_version, '') = $8) FROM devices WHERE name = $1",
            8, params);
        if (rc < 0)
            return rc;
        long long all = s_ll(res, 0, 0), same = s_ll(res, 0, 1);
        PQclear(res);
        if (all == 0 || same > 0)
            break; /* a new class, or the same hardware class: join it */
        /* A local class of that name is other hardware: a distinct name,
         * truncated so that it stays a valid name. */
        char suffix[128];
        if (attempt == 1)
            snprintf(suffix, sizeof suffix, " [%.100s]", source);
        else
            snprintf(suffix, sizeof suffix, " [%.100s %d]", source, attempt);
        int keep = (int)(TC_MAX_NAME_LEN - strlen(suffix));
        snprintf(candidate, sizeof candidate, "%.*s%s", keep, d->name, suffix);
    }
    snprintf(name, size, "%s", candidate);
    *renamed = strcmp(name, d->name) != 0;
    return 0;
}

int tc_store_import_record_file(tc_store_t *s, const char *file_sha256)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", s->import_id);
    const char *params[] = {id, file_sha256};
    return tc_store_query(s, NULL, "recording the set's checksum",
                          "UPDATE imports SET file_sha256 = $2 WHERE import_id = $1 AND "
                          "file_sha256 = ''",
                          2, params);
}

int tc_store_import_finish(tc_store_t *s, long long stored, long long duplicates,
                           char *const *devices, size_t n_devices, char *const *renamed,
                           char *const *renamed_uuids, char *const *original_names,
                           size_t n_renamed, const char *devices_seen_json)
{
    char id[32], st[32], du[32], total[32];
    snprintf(id, sizeof id, "%lld", s->import_id);
    snprintf(st, sizeof st, "%lld", stored);
    snprintf(du, sizeof du, "%lld", duplicates);
    snprintf(total, sizeof total, "%lld", stored + duplicates);
    tc_buf_t devs = {0}, ren = {0};
    tc_store_text_array(&devs, (const char *const *)devices, n_devices);
    tc_store_text_array(&ren, (const char *const *)renamed, n_renamed);
    int rc = devs.failed || ren.failed ? tc_fail(TC_ENOMEM, "out of memory") : 0;
    const char *params[] = {id, total, st, du, tc_buf_str(&devs), tc_buf_str(&ren)};
    /* A set imported before keeps the row of its first import. */
    if (rc == 0)
        rc = tc_store_query(s, NULL, "recording the import's counts",
                            "UPDATE imports SET records = $2, stored = $3, duplicates = $4, "
                            "devices = $5::text[], renamed = $6::text[] WHERE import_id = $1 "
                            "AND records = 0 AND stored = 0 AND duplicates = 0",
                            6, params);
    for (size_t i = 0; rc == 0 && i < n_renamed; i++) {
        const char *p[] = {renamed_uuids[i], original_names[i], id};
        rc = tc_store_query(s, NULL, "recording a device's name in the set",
                            "UPDATE devices SET original_name = $2 WHERE uuid = $1 AND "
                            "import_id = $3::bigint AND original_name IS NULL",
                            3, p);
    }
    /* An imported device was last seen when the exporting database last
     * heard of it, not when it was imported (a device of this fleet that
     * the set also holds keeps its own). */
    if (rc == 0 && devices_seen_json) {
        const char *p[] = {id, devices_seen_json};
        rc = tc_store_query(s, NULL, "recording when the set's devices were last seen",
                            "UPDATE devices d SET last_seen = (j->>'last_seen')::timestamptz "
                            "FROM json_array_elements($2::json) j WHERE d.uuid = j->>'uuid' "
                            "AND d.import_id = $1::bigint",
                            2, p);
    }
    tc_buf_free(&devs);
    tc_buf_free(&ren);
    if (rc == 0)
        rc = tc_store_commit(s);
    if (rc < 0)
        tc_store_rollback(s);
    s->import_id = 0;
    return rc;
}

void tc_store_import_abort(tc_store_t *s)
{
    tc_store_rollback(s);
    s->import_id = 0;
}
