/* The journal's records on disk: framing one, parsing one, and reading
 * their bytes (journal.h has the format; journal.c walks the log). */
#include "journal_internal.h"

#include "tc_error.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void s_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

uint32_t tc_journal_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void tc_journal_frame(tc_buf_t *b, char type, const char *id, const char *name,
                      const void *payload, size_t payload_len)
{
    size_t name_len = type == TC_JREC_RESULT ? strlen(name ? name : "") : 0;
    size_t body = 1 + TC_MSGID_LEN + (type == TC_JREC_RESULT ? 2 + name_len : 0) + payload_len;
    size_t start = b->len;
    uint8_t head[TC_JOURNAL_HEAD] = {0};
    tc_buf_append(b, (const char *)head, sizeof head);
    tc_buf_putc(b, type);
    tc_buf_append(b, id, TC_MSGID_LEN);
    if (type == TC_JREC_RESULT) {
        uint8_t nl[2] = {(uint8_t)name_len, (uint8_t)(name_len >> 8)};
        tc_buf_append(b, (const char *)nl, 2);
        tc_buf_append(b, name ? name : "", name_len);
    }
    if (payload_len)
        tc_buf_append(b, payload, payload_len);
    if (b->failed)
        return;
    uint8_t *h = (uint8_t *)b->data + start;
    s_put_u32(h, (uint32_t)body);
    s_put_u32(h + 4, (uint32_t)crc32(0L, h + TC_JOURNAL_HEAD, (uInt)body));
}

int tc_journal_pread_some(const tc_journal_t *self, uint8_t *buf, size_t len, uint64_t off,
                          size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t r = pread(self->fd, buf + *got, len - *got, (off_t)(off + *got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return tc_fail(TC_EIO, "reading %s: %s", self->path, strerror(errno));
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    return 0;
}

int tc_journal_pread(const tc_journal_t *self, void *buf, size_t len, uint64_t off)
{
    size_t got = 0;
    int rc = tc_journal_pread_some(self, buf, len, off, &got);
    if (rc == 0 && got < len)
        rc = tc_fail(TC_EIO, "reading %s: it ends at byte %llu, inside a record", self->path,
                     (unsigned long long)(off + got));
    return rc;
}

bool tc_journal_parse(const uint8_t *p, size_t have, uint32_t body_len, uint64_t body_off,
                    tc_jrecord_t *r)
{
    if (have < 1 + TC_MSGID_LEN)
        return false;
    r->type = (char)p[0];
    memcpy(r->id, p + 1, TC_MSGID_LEN);
    r->id[TC_MSGID_LEN] = '\0';
    if (!tc_msgid_valid(r->id))
        return false;
    size_t at = 1 + TC_MSGID_LEN;
    r->name = "";
    r->name_len = 0;
    switch (r->type) {
    case TC_JREC_RESULT:
        if (have < at + 2)
            return false;
        r->name_len = (size_t)p[at] | (size_t)p[at + 1] << 8;
        at += 2;
        if (r->name_len > TC_JOURNAL_NAME_MAX || have < at + r->name_len)
            return false;
        r->name = (const char *)p + at;
        at += r->name_len;
        break;
    case TC_JREC_ACKED:
    case TC_JREC_REQUEUED:
        if (body_len != at)
            return false;
        break;
    case TC_JREC_REFUSED:
        break;
    default:
        return false;
    }
    if (body_len < at)
        return false;
    r->payload_off = body_off + at;
    r->payload_len = body_len - (uint32_t)at;
    return true;
}
