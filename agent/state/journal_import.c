/* Result files (common/wire/tc_resultfile.h) into the journal: what
 * `agent push FILE` sends. */
#include "journal.h"

#include "tc_error.h"

#include <stdlib.h>
#include <string.h>

#define S_CHUNK_RECORDS 256
#define S_CHUNK_BYTES (32u << 20)

typedef struct {
    tc_journal_t *journal;
    const char *agent_id;
    char ids[S_CHUNK_RECORDS][TC_MSGID_LEN + 1];
    const char *idp[S_CHUNK_RECORDS];
    uint8_t *data[S_CHUNK_RECORDS];
    const uint8_t *datap[S_CHUNK_RECORDS];
    size_t lens[S_CHUNK_RECORDS];
    size_t n, bytes, records, added;
} s_import_t;

static int s_flush(s_import_t *im)
{
    size_t added = 0;
    int rc = im->n ? tc_journal_put_many(im->journal, im->n, im->idp, im->datap, im->lens, &added)
                   : 0;
    for (size_t i = 0; i < im->n; i++)
        free(im->data[i]);
    im->added += added;
    im->n = 0;
    im->bytes = 0;
    return rc;
}

static int s_record(const tc_envelope_t *env, void *arg)
{
    s_import_t *im = arg;
    im->records++;
    if (!tc_msgid_valid(env->message_id))
        return tc_fail(TC_EINVAL, "record %zu has no valid message id", im->records);
    tc_envelope_t copy = *env;
    if (!copy.agent_id || !*copy.agent_id)
        copy.agent_id = (char *)im->agent_id;
    int rc = tc_envelope_pack(&copy, &im->data[im->n], &im->lens[im->n]);
    if (rc < 0)
        return rc;
    memcpy(im->ids[im->n], env->message_id, TC_MSGID_LEN + 1);
    im->idp[im->n] = im->ids[im->n];
    im->datap[im->n] = im->data[im->n];
    im->bytes += im->lens[im->n];
    im->n++;
    if (im->n == S_CHUNK_RECORDS || im->bytes >= S_CHUNK_BYTES)
        return s_flush(im);
    return 0;
}

int tc_journal_import(tc_journal_t *self, const char *path, const char *agent_id,
                      size_t *records, size_t *added)
{
    s_import_t *im = calloc(1, sizeof *im);
    if (!im)
        return tc_fail(TC_ENOMEM, "out of memory");
    im->journal = self;
    im->agent_id = agent_id;
    int rc = tc_resultfile_read(path, false, s_record, im, NULL);
    int frc = s_flush(im);
    if (rc == 0)
        rc = frc;
    if (records)
        *records = im->records;
    if (added)
        *added = im->added;
    free(im);
    return rc;
}
