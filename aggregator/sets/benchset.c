/* Benchmark set files (benchset.h). */
#include "benchset.h"

#include "tc_buf.h"
#include "tc_error.h"
#include "tc_sha256.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Non-ASCII first byte and CR LF: a transfer that mangles bytes or line
 * ends breaks the signature, as PNG's does. */
static const uint8_t s_magic[8] = {0x89, 'T', 'C', 'S', 'E', 'T', '\r', '\n'};

#define S_TYPE_HEADER 'H'
#define S_TYPE_ENVELOPE 'E'
#define S_TYPE_TRAILER 'T'
#define S_CHECK_LEN 8

static void s_check(uint8_t type, const uint8_t *payload, size_t len, uint8_t out[S_CHECK_LEN])
{
    tc_sha256_t h;
    uint8_t d[32];
    tc_sha256_init(&h);
    tc_sha256_update(&h, &type, 1);
    tc_sha256_update(&h, payload, len);
    tc_sha256_final(&h, d);
    memcpy(out, d, S_CHECK_LEN);
}

/* ---- writing ---- */

struct tc_set_writer {
    FILE *f;
    char *path, *partial;
    tc_sha256_t sum; /* of every byte written before the trailer */
    long long count;
    bool finished;
};

static int s_write(tc_set_writer_t *w, const void *p, size_t n, bool summed)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return tc_fail(TC_EIO, "cannot write %s: %s", w->partial, strerror(errno));
    if (summed)
        tc_sha256_update(&w->sum, p, n);
    return 0;
}

static int s_record(tc_set_writer_t *w, uint8_t type, const uint8_t *payload, size_t len)
{
    if (len > TC_MAX_MESSAGE_BYTES)
        return tc_fail(TC_ELIMIT, "a record of %zu bytes is over the %u byte limit", len,
                       TC_MAX_MESSAGE_BYTES);
    uint8_t head[5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
                       (uint8_t)(len >> 24), type};
    uint8_t check[S_CHECK_LEN];
    s_check(type, payload, len, check);
    bool summed = type != S_TYPE_TRAILER;
    int rc = s_write(w, head, sizeof head, summed);
    if (rc == 0)
        rc = s_write(w, payload, len, summed);
    if (rc == 0)
        rc = s_write(w, check, sizeof check, summed);
    return rc;
}

static void s_json_field(tc_buf_t *b, const char *key, const char *value)
{
    tc_buf_printf(b, ",\n \"%s\": ", key);
    tc_buf_json_str(b, value ? value : "");
}

int tc_set_writer_open(const char *path, const tc_set_header_t *h, tc_set_writer_t **out)
{
    *out = NULL;
    tc_set_writer_t *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path)) || !(w->partial = malloc(strlen(path) + 16))) {
        tc_set_writer_destroy(&w);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    sprintf(w->partial, "%s.partial", path);
    tc_sha256_init(&w->sum);
    w->f = fopen(w->partial, "wb");
    if (!w->f) {
        int rc = tc_fail(TC_EIO, "cannot create %s: %s", w->partial, strerror(errno));
        free(w->partial);
        w->partial = NULL; /* nothing of ours to remove */
        tc_set_writer_destroy(&w);
        return rc;
    }
    tc_buf_t b = {0};
    tc_buf_printf(&b, "{\"format\": \"%s\",\n \"format_version\": %d", TC_SET_FORMAT,
                  TC_SET_FORMAT_VERSION);
    s_json_field(&b, "set_id", h->set_id);
    s_json_field(&b, "source", h->source);
    s_json_field(&b, "traincast_version", h->traincast_version);
    tc_buf_printf(&b, ",\n \"schema_version\": %d,\n \"protocol_version\": %d",
                  h->schema_version, h->protocol_version);
    s_json_field(&b, "exported_at", h->exported_at);
    tc_buf_printf(&b, ",\n \"records\": %lld,\n \"devices\": %s,\n \"models\": %s}\n", h->records,
                  h->devices_json ? h->devices_json : "[]", h->models_json ? h->models_json : "[]");
    int rc = b.failed ? tc_fail(TC_ENOMEM, "out of memory") : 0;
    if (rc == 0)
        rc = s_write(w, s_magic, sizeof s_magic, true);
    if (rc == 0)
        rc = s_record(w, S_TYPE_HEADER, (const uint8_t *)b.data, b.len);
    tc_buf_free(&b);
    if (rc < 0) {
        tc_set_writer_destroy(&w);
        return rc;
    }
    *out = w;
    return 0;
}

int tc_set_writer_put(tc_set_writer_t *self, const tc_envelope_t *env)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc == 0)
        rc = s_record(self, S_TYPE_ENVELOPE, buf, len);
    free(buf);
    if (rc == 0)
        self->count++;
    return rc;
}

long long tc_set_writer_count(const tc_set_writer_t *self)
{
    return self->count;
}

int tc_set_writer_finish(tc_set_writer_t *self)
{
    char hex[65], trailer[160];
    tc_sha256_final_hex(&self->sum, hex);
    int n = snprintf(trailer, sizeof trailer, "{\"records\": %lld, \"sha256\": \"%s\"}\n",
                     self->count, hex);
    int rc = s_record(self, S_TYPE_TRAILER, (const uint8_t *)trailer, (size_t)n);
    if (rc == 0 && (fflush(self->f) != 0 || fsync(fileno(self->f)) != 0))
        rc = tc_fail(TC_EIO, "cannot write %s: %s", self->partial, strerror(errno));
    if (rc == 0 && fclose(self->f) != 0)
        rc = tc_fail(TC_EIO, "cannot write %s: %s", self->partial, strerror(errno));
    self->f = NULL;
    if (rc == 0 && rename(self->partial, self->path) != 0)
        rc = tc_fail(TC_EIO, "cannot rename %s to %s: %s", self->partial, self->path,
                     strerror(errno));
    if (rc == 0)
        self->finished = true;
    return rc;
}

void tc_set_writer_destroy(tc_set_writer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_set_writer_t *self = *self_p;
    if (self->f)
        fclose(self->f);
    if (!self->finished && self->partial)
        unlink(self->partial);
    free(self->path);
    free(self->partial);
    free(self);
    *self_p = NULL;
}

/* ---- reading ---- */

struct tc_set_reader {
    FILE *f;
    char *path;
    tc_json_t *header_doc;
    tc_set_header_t header;
    char *devices_json, *models_json, *devices_seen_json;
    tc_sha256_t sum;   /* of the bytes before the trailer */
    tc_sha256_t whole; /* of every byte */
    char whole_hex[65];
    long long record;  /* the last record read: 0 the header */
    long long envelopes;
    bool done;
};

/* Read exactly n bytes; *got short means the file ended. */
static int s_read(tc_set_reader_t *r, void *p, size_t n, size_t *got)
{
    *got = fread(p, 1, n, r->f);
    if (*got < n && ferror(r->f))
        return tc_fail(TC_EIO, "cannot read %s: %s", r->path, strerror(errno));
    tc_sha256_update(&r->whole, p, *got);
    return 0;
}

/* Where the set is bad, as "FILE: record N of M" (or the header). */
static void s_where(const tc_set_reader_t *r, long long record, char *buf, size_t size)
{
    if (record == 0)
        snprintf(buf, size, "%s: the header", r->path);
    else if (r->header.records > 0)
        snprintf(buf, size, "%s: record %lld of %lld", r->path, record, r->header.records);
    else
        snprintf(buf, size, "%s: record %lld", r->path, record);
}

/* One record: its type and payload (malloc'ed), checked. *type 0 at a
 * clean end of file (no bytes at all). */
static int s_next_record(tc_set_reader_t *r, uint8_t *type, uint8_t **payload, size_t *len)
{
    *type = 0;
    *payload = NULL;
    *len = 0;
    long long record = r->record + 1;
    char where[1200];
    s_where(r, record, where, sizeof where);
    uint8_t head[5];
    size_t got = 0;
    int rc = s_read(r, head, sizeof head, &got);
    if (rc < 0 || got == 0)
        return rc;
    if (got < sizeof head)
        return tc_fail(TC_EINVAL, "%s is cut short (the set is truncated; nothing was stored)",
                       where);
    size_t n = (size_t)head[0] | (size_t)head[1] << 8 | (size_t)head[2] << 16 |
               (size_t)head[3] << 24;
    uint8_t t = head[4];
    if (t != S_TYPE_HEADER && t != S_TYPE_ENVELOPE && t != S_TYPE_TRAILER)
        return tc_fail(TC_EINVAL, "%s is corrupt: unknown record type 0x%02x (nothing was "
                                  "stored)",
                       where, t);
    size_t cap = t == S_TYPE_ENVELOPE ? TC_MAX_MESSAGE_BYTES : TC_SET_MAX_HEADER;
    if (n > cap)
        return tc_fail(TC_EINVAL, "%s is corrupt: it claims %zu bytes, over the %zu byte limit "
                                  "(nothing was stored)",
                       where, n, cap);
    uint8_t *p = malloc(n + 1);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory reading %zu bytes", n);
    uint8_t check[S_CHECK_LEN], want[S_CHECK_LEN];
    rc = s_read(r, p, n, &got);
    if (rc == 0 && got < n)
        rc = tc_fail(TC_EINVAL, "%s is cut short after %zu of its %zu bytes (the set is "
                                "truncated; nothing was stored)",
                     where, got, n);
    if (rc == 0 && (rc = s_read(r, check, sizeof check, &got)) == 0 && got < sizeof check)
        rc = tc_fail(TC_EINVAL, "%s is cut short in its checksum (the set is truncated; "
                                "nothing was stored)",
                     where);
    if (rc == 0) {
        s_check(t, p, n, want);
        if (memcmp(check, want, sizeof want) != 0)
            rc = tc_fail(TC_EINVAL, "%s is corrupt: its checksum does not match its contents "
                                    "(nothing was stored)",
                         where);
    }
    if (rc < 0) {
        free(p);
        return rc;
    }
    p[n] = 0;
    if (t != S_TYPE_TRAILER) {
        tc_sha256_update(&r->sum, head, sizeof head);
        tc_sha256_update(&r->sum, p, n);
        tc_sha256_update(&r->sum, check, sizeof check);
    }
    r->record = record;
    *type = t;
    *payload = p;
    *len = n;
    return 0;
}

static const char *s_str(const tc_json_value_t *obj, const char *key)
{
    const char *v = tc_json_string(tc_json_get(obj, key));
    return v ? v : "";
}

static int s_int(const tc_json_value_t *obj, const char *key, long long *out)
{
    int64_t v = 0;
    if (!tc_json_int(tc_json_get(obj, key), &v))
        return -1;
    *out = v;
    return 0;
}

/* JSON text of member `key` (an array), re-serialized compactly enough for
 * the database's devices column: kept as the names only. */
static char *s_array_text(const tc_json_value_t *obj, const char *key)
{
    const tc_json_value_t *a = tc_json_get(obj, key);
    tc_buf_t b = {0};
    tc_buf_putc(&b, '[');
    for (size_t i = 0; a && tc_json_type(a) == TC_JSON_ARRAY && i < tc_json_len(a); i++) {
        const tc_json_value_t *e = tc_json_at(a, i);
        const char *s = tc_json_type(e) == TC_JSON_OBJECT ? tc_json_string(tc_json_get(e, "name"))
                                                          : tc_json_string(e);
        if (i)
            tc_buf_putc(&b, ',');
        tc_buf_json_str(&b, s ? s : "");
    }
    tc_buf_putc(&b, ']');
    char *out = b.failed ? NULL : strdup(tc_buf_str(&b));
    tc_buf_free(&b);
    return out;
}

/* "YYYY-MM-DDTHH:MM:SSZ", as the exporter writes it. */
static bool s_iso_time(const char *t)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(t) != sizeof pattern - 1)
        return false;
    for (size_t i = 0; pattern[i]; i++) {
        if (pattern[i] == 'd' ? !isdigit((unsigned char)t[i]) : t[i] != pattern[i])
            return false;
    }
    return true;
}

/* The header's devices that say when they were last seen, as
 * [{"uuid": ..., "last_seen": ...}, ...]. */
static char *s_seen_text(const tc_json_value_t *obj)
{
    const tc_json_value_t *a = tc_json_get(obj, "devices");
    tc_buf_t b = {0};
    tc_buf_putc(&b, '[');
    size_t k = 0;
    for (size_t i = 0; a && tc_json_type(a) == TC_JSON_ARRAY && i < tc_json_len(a); i++) {
        const tc_json_value_t *e = tc_json_at(a, i);
        const char *uuid = tc_json_string(tc_json_get(e, "uuid"));
        const char *seen = tc_json_string(tc_json_get(e, "last_seen"));
        if (!uuid || !seen || !s_iso_time(seen))
            continue;
        tc_buf_puts(&b, k++ ? ",{\"uuid\":" : "{\"uuid\":");
        tc_buf_json_str(&b, uuid);
        tc_buf_puts(&b, ",\"last_seen\":");
        tc_buf_json_str(&b, seen);
        tc_buf_putc(&b, '}');
    }
    tc_buf_putc(&b, ']');
    char *out = b.failed ? NULL : strdup(tc_buf_str(&b));
    tc_buf_free(&b);
    return out;
}

static int s_parse_header(tc_set_reader_t *r, const uint8_t *p, size_t n)
{
    char where[1200];
    s_where(r, 0, where, sizeof where);
    tc_json_limits_t lim = {.max_bytes = TC_SET_MAX_HEADER, .max_depth = 8,
                            .max_values = 1u << 20};
    int rc = tc_json_parse((const char *)p, n, &lim, &r->header_doc);
    if (rc < 0)
        return tc_fail(TC_EINVAL, "%s is not valid JSON: %s", where, tc_errmsg());
    const tc_json_value_t *h = tc_json_root(r->header_doc);
    if (tc_json_type(h) != TC_JSON_OBJECT || strcmp(s_str(h, "format"), TC_SET_FORMAT) != 0)
        return tc_fail(TC_EINVAL, "%s does not say \"format\": \"%s\"", where, TC_SET_FORMAT);
    long long v = 0;
    if (s_int(h, "format_version", &v) < 0 || v < 1)
        return tc_fail(TC_EINVAL, "%s has no valid format_version", where);
    r->header.format_version = (int)v;
    if (v > TC_SET_FORMAT_VERSION)
        return tc_fail(TC_EVERSION,
                       "%s is a benchmark set of format version %lld, written by traincast %s; "
                       "this traincast (%s) reads format version %d and older: upgrade "
                       "traincast to import it",
                       r->path, v, s_str(h, "traincast_version"), TRAINCAST_VERSION,
                       TC_SET_FORMAT_VERSION);
    r->header.set_id = s_str(h, "set_id");
    r->header.source = s_str(h, "source");
    r->header.traincast_version = s_str(h, "traincast_version");
    r->header.exported_at = s_str(h, "exported_at");
    if (s_int(h, "schema_version", &v) == 0)
        r->header.schema_version = (int)v;
    if (s_int(h, "protocol_version", &v) == 0)
        r->header.protocol_version = (int)v;
    if (s_int(h, "records", &r->header.records) < 0 || r->header.records < 0)
        return tc_fail(TC_EINVAL, "%s has no valid record count", where);
    if (!tc_msgid_valid(r->header.set_id))
        return tc_fail(TC_EINVAL, "%s has no valid set_id (a 26-character ULID)", where);
    if (!*r->header.source)
        return tc_fail(TC_EINVAL, "%s names no source", where);
    if (r->header.protocol_version != (int)TC_PROTOCOL_VERSION)
        return tc_fail(TC_EVERSION,
                       "%s holds messages of protocol version %d; this traincast (%s) speaks "
                       "version %u: %s",
                       r->path, r->header.protocol_version, TRAINCAST_VERSION,
                       TC_PROTOCOL_VERSION,
                       r->header.protocol_version > (int)TC_PROTOCOL_VERSION
                           ? "upgrade traincast to import it"
                           : "export it again with a newer traincast");
    r->devices_json = s_array_text(h, "devices");
    r->models_json = s_array_text(h, "models");
    r->devices_seen_json = s_seen_text(h);
    if (!r->devices_json || !r->models_json || !r->devices_seen_json)
        return tc_fail(TC_ENOMEM, "out of memory");
    r->header.devices_json = r->devices_json;
    r->header.models_json = r->models_json;
    r->header.devices_seen_json = r->devices_seen_json;
    return 0;
}

int tc_set_reader_open(const char *path, tc_set_reader_t **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open %s: %s", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return tc_fail(TC_EINVAL, "%s is a directory, not a file: give the path of a benchmark "
                                  "set (aggregator export --out FILE)",
                       path);
    }
    return tc_set_reader_open_stream(f, path, out);
}

int tc_set_reader_open_stream(FILE *f, const char *name, tc_set_reader_t **out)
{
    *out = NULL;
    tc_set_reader_t *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(name))) {
        free(r);
        fclose(f);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    r->f = f;
    tc_sha256_init(&r->sum);
    tc_sha256_init(&r->whole);
    int rc = 0;
    const char *path = r->path;
    uint8_t magic[sizeof s_magic];
    size_t got = 0;
    if (rc == 0)
        rc = s_read(r, magic, sizeof magic, &got);
    if (rc == 0 && (got < sizeof magic || memcmp(magic, s_magic, sizeof magic) != 0))
        rc = tc_fail(TC_EINVAL,
                     "%s is not a traincast benchmark set (it does not start with the set's "
                     "signature; 'aggregator export' writes them)",
                     path);
    if (rc == 0)
        tc_sha256_update(&r->sum, magic, sizeof magic);
    uint8_t type = 0, *p = NULL;
    size_t n = 0;
    r->record = -1; /* the header is record 0 */
    if (rc == 0)
        rc = s_next_record(r, &type, &p, &n);
    if (rc == 0 && type != S_TYPE_HEADER)
        rc = tc_fail(TC_EINVAL, "%s: the set %s (nothing was stored)", path,
                     type ? "does not begin with its header" : "ends before its header");
    r->record = 0;
    if (rc == 0)
        rc = s_parse_header(r, p, n);
    free(p);
    if (rc < 0) {
        tc_set_reader_destroy(&r);
        return rc;
    }
    *out = r;
    return 0;
}

const tc_set_header_t *tc_set_reader_header(const tc_set_reader_t *self)
{
    return &self->header;
}

long long tc_set_reader_record(const tc_set_reader_t *self)
{
    return self->record;
}

const char *tc_set_reader_sha256(const tc_set_reader_t *self)
{
    return self->whole_hex;
}

static int s_trailer(tc_set_reader_t *r, const uint8_t *p, size_t n)
{
    char where[1200];
    snprintf(where, sizeof where, "%s: the trailer", r->path);
    tc_json_t *doc = NULL;
    int rc = tc_json_parse((const char *)p, n, NULL, &doc);
    if (rc < 0)
        return tc_fail(TC_EINVAL, "%s is not valid JSON (nothing was stored)", where);
    const tc_json_value_t *t = tc_json_root(doc);
    long long count = -1;
    char hex[65];
    tc_sha256_final_hex(&r->sum, hex);
    if (s_int(t, "records", &count) < 0 || count != r->envelopes ||
        count != r->header.records)
        rc = tc_fail(TC_EINVAL, "%s counts %lld records, but the header announced %lld and "
                                "%lld were read (nothing was stored)",
                     where, count, r->header.records, r->envelopes);
    else if (strcmp(s_str(t, "sha256"), hex) != 0)
        rc = tc_fail(TC_EINVAL, "%s: the SHA-256 of the set does not match (records were "
                                "changed, reordered or removed; nothing was stored)",
                     where);
    tc_json_destroy(&doc);
    if (rc < 0)
        return rc;
    /* Nothing may follow. */
    uint8_t extra;
    size_t got = 0;
    rc = s_read(r, &extra, 1, &got);
    if (rc == 0 && got)
        return tc_fail(TC_EINVAL, "%s: bytes follow the trailer (nothing was stored)", r->path);
    tc_sha256_final_hex(&r->whole, r->whole_hex);
    r->done = true;
    return rc;
}

int tc_set_reader_next(tc_set_reader_t *self, tc_envelope_t **env)
{
    *env = NULL;
    if (self->done)
        return 0;
    uint8_t type = 0, *p = NULL;
    size_t n = 0;
    int rc = s_next_record(self, &type, &p, &n);
    char where[1200];
    s_where(self, self->record + (type ? 0 : 1), where, sizeof where);
    if (rc == 0 && type == 0)
        rc = tc_fail(TC_EINVAL,
                     "%s: the set ends after %lld of its %lld records, without its trailer (it "
                     "is truncated; nothing was stored)",
                     self->path, self->envelopes, self->header.records);
    else if (rc == 0 && type == S_TYPE_HEADER)
        rc = tc_fail(TC_EINVAL, "%s is a second header (nothing was stored)", where);
    else if (rc == 0 && type == S_TYPE_TRAILER)
        rc = s_trailer(self, p, n);
    else if (rc == 0) {
        if (self->envelopes >= self->header.records)
            rc = tc_fail(TC_EINVAL, "%s: more records than the %lld the header announced "
                                    "(nothing was stored)",
                         self->path, self->header.records);
        if (rc == 0 && tc_envelope_unpack(p, n, 0, env) < 0)
            rc = tc_fail(TC_EINVAL, "%s is not a valid message: %s (nothing was stored)", where,
                         tc_errmsg());
        if (rc == 0)
            self->envelopes++;
    }
    free(p);
    if (rc < 0)
        tc_envelope_free(env);
    return rc;
}

void tc_set_reader_destroy(tc_set_reader_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_set_reader_t *self = *self_p;
    if (self->f)
        fclose(self->f);
    tc_json_destroy(&self->header_doc);
    free(self->devices_json);
    free(self->models_json);
    free(self->devices_seen_json);
    free(self->path);
    free(self);
    *self_p = NULL;
}
