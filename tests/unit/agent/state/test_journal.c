/* The agent's journal and identity, without a network. */
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_proc.h"
#include "tc_test_transport.h"

#include "identity.h"
#include "jobs.h"
#include "journal.h"
#include "tc_error.h"
#include "tc_resultfile.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void s_put(tc_journal_t *j, char id[TC_MSGID_LEN + 1], const char *text)
{
    tc_msgid_new(id);
    bool added = false;
    cr_assert_eq(tc_journal_put(j, id, (const uint8_t *)text, strlen(text), &added), 0, "%s",
                 tc_errmsg());
    cr_assert(added);
}

typedef struct {
    size_t n;
    char id[4][TC_MSGID_LEN + 1];
    char reason[4][64];
} s_refused_t;

static int s_on_refused(void *arg, const char *id, const char *reason, const uint8_t *data,
                        size_t len)
{
    s_refused_t *r = arg;
    cr_expect_gt(len, 0);
    cr_expect_not_null(data);
    if (r->n < 4) {
        snprintf(r->id[r->n], sizeof r->id[r->n], "%s", id);
        snprintf(r->reason[r->n], sizeof r->reason[r->n], "%s", reason);
    }
    r->n++;
    return 0;
}

static off_t s_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

Test(journal, put_read_ack_reject_in_age_order, .timeout = 30)
{
    char dir[1200], path[1400];
    tc_test_tmpdir("journal-order", dir, sizeof dir);
    strcat(dir, "/journal");
    tc_journal_t *j = NULL;
    cr_assert_eq(tc_journal_open(dir, &j), 0, "%s", tc_errmsg());
    char ids[5][TC_MSGID_LEN + 1];
    for (int i = 0; i < 5; i++) {
        char text[32];
        snprintf(text, sizeof text, "message %d", i);
        s_put(j, ids[i], text);
    }
    cr_expect_eq(tc_journal_waiting(j), 5);
    /* The same id again is not a second message. */
    bool added = true;
    cr_expect_eq(tc_journal_put(j, ids[2], (const uint8_t *)"other", 5, &added), 0);
    cr_expect(!added);
    cr_expect_eq(tc_journal_waiting(j), 5);

    char oldest[3][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(j, oldest, 3), 3);
    for (int i = 0; i < 3; i++)
        cr_expect_str_eq(oldest[i], ids[i]);

    uint8_t *data = NULL;
    size_t len = 0;
    cr_assert_eq(tc_journal_read(j, ids[3], &data, &len), 0);
    cr_expect_eq(len, 9);
    cr_expect(memcmp(data, "message 3", 9) == 0);
    free(data);

    cr_expect_eq(tc_journal_ack(j, ids[0]), 0);
    cr_expect_eq(tc_journal_ack(j, ids[0]), 0, "acknowledging twice is harmless");
    cr_expect_eq(tc_journal_read(j, ids[0], &data, &len), TC_ENOTFOUND);
    cr_expect_eq(tc_journal_reject(j, ids[1], "bad median"), 0);
    cr_expect_eq(tc_journal_waiting(j), 3);
    cr_expect_eq(tc_journal_rejected_count(j), 1);
    tc_journal_destroy(&j);
    cr_expect_null(j);

    /* What is on disk is what a new process finds, oldest first; a write
     * cut short by a crash is kept aside and cut off. */
    snprintf(path, sizeof path, "%s/log", dir);
    off_t whole = s_size(path);
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    fwrite("\x40\x00\x00\x00half a record", 1, 17, f);
    fclose(f);
    cr_assert_eq(tc_journal_open(dir, &j), 0, "%s", tc_errmsg());
    cr_expect_eq(s_size(path), whole, "the torn tail should be cut");
    snprintf(path, sizeof path, "%s/log.damaged-%lld", dir, (long long)whole);
    cr_expect_eq(s_size(path), 17, "the torn tail should be kept aside");
    cr_expect_eq(tc_journal_waiting(j), 3);
    cr_expect_eq(tc_journal_rejected_count(j), 1);
    cr_assert_eq(tc_journal_oldest(j, oldest, 3), 3);
    cr_expect_str_eq(oldest[0], ids[2]);
    cr_expect_str_eq(oldest[2], ids[4]);
    cr_expect(tc_journal_is_waiting(j, ids[3]));
    cr_expect(!tc_journal_is_waiting(j, ids[1]));

    /* Read without opening: what status shows next to a running agent. */
    tc_journal_summary_t sum;
    s_refused_t refused = {0};
    cr_assert_eq(tc_journal_summary(dir, &sum, s_on_refused, &refused), 0, "%s", tc_errmsg());
    cr_expect_eq(sum.waiting, 3);
    cr_expect_eq(sum.records, 5);
    cr_expect_str_eq(sum.oldest, ids[2]);
    cr_assert_eq(refused.n, 1);
    cr_expect_str_eq(refused.id[0], ids[1]);
    cr_expect_str_eq(refused.reason[0], "bad median");

    /* Requeued, the refused one waits again with its bytes. */
    size_t moved = 0;
    cr_assert_eq(tc_journal_requeue_rejected(j, &moved), 0);
    cr_expect_eq(moved, 1);
    cr_expect_eq(tc_journal_rejected_count(j), 0);
    cr_assert_eq(tc_journal_read(j, ids[1], &data, &len), 0);
    cr_expect(len == 9 && memcmp(data, "message 1", 9) == 0);
    free(data);
    tc_journal_destroy(&j);
    cr_assert_eq(tc_journal_summary(dir, &sum, NULL, NULL), 0);
    cr_expect_eq(sum.waiting, 4);
    cr_expect_eq(sum.rejected, 0);
}

Test(journal, older_ids_go_first_and_bad_ids_are_refused, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("journal-ids", dir, sizeof dir);
    tc_journal_t *j = NULL;
    cr_assert_eq(tc_journal_open(dir, &j), 0);
    char late[TC_MSGID_LEN + 1];
    s_put(j, late, "late");
    /* An id from a file written earlier sorts before. */
    const char *early = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    cr_assert_eq(tc_journal_put(j, early, (const uint8_t *)"early", 5, NULL), 0);
    char first[1][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(j, first, 1), 1);
    cr_expect_str_eq(first[0], early);
    cr_expect_eq(tc_journal_put(j, "../../etc/passwd", (const uint8_t *)"x", 1, NULL), TC_EINVAL);
    cr_expect_eq(tc_journal_put(j, "", (const uint8_t *)"x", 1, NULL), TC_EINVAL);
    tc_journal_destroy(&j);

    /* Not a journal: refused, named, left alone. */
    char path[1300];
    snprintf(path, sizeof path, "%s/log", dir);
    FILE *f = fopen(path, "wb");
    fputs("something else entirely", f);
    fclose(f);
    cr_expect_eq(tc_journal_open(dir, &j), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "is not a traincast agent journal") != NULL, "%s", tc_errmsg());
    cr_expect_eq(s_size(path), 23);
}

/* Append generated result `index` (a stamped ConvResults) to `j` as a
 * result of `name`; its id goes to `id`. */
typedef struct {
    tc_journal_t *j;
    const char *name;
    char *id;
} s_append_t;

static int s_append_one(const tc_envelope_t *env, void *arg)
{
    s_append_t *a = arg;
    bool added = false;
    int rc = tc_journal_append(a->j, a->name, env, &added);
    cr_expect(added);
    snprintf(a->id, TC_MSGID_LEN + 1, "%s", env->message_id);
    return rc;
}

static void s_append_generated(tc_journal_t *j, const char *name, const char *file, size_t index,
                               char id[TC_MSGID_LEN + 1])
{
    tc_gen_opts_t o = tc_gen_defaults("agent-n");
    unlink(file);
    cr_assert_eq(tc_gen_write(file, &o, index, 1), 0);
    s_append_t a = {.j = j, .name = name, .id = id};
    cr_assert_eq(tc_resultfile_read(file, false, s_append_one, &a, NULL), 0, "%s", tc_errmsg());
}

typedef struct {
    size_t n;
    char ids[8][TC_MSGID_LEN + 1];
} s_seen_t;

static int s_seen(const tc_envelope_t *env, void *arg)
{
    s_seen_t *s = arg;
    if (s->n < 8)
        snprintf(s->ids[s->n], TC_MSGID_LEN + 1, "%s", env->message_id);
    s->n++;
    return 0;
}

Test(journal, named_results_are_kept_after_delivery_and_sent_again_on_request, .timeout = 60)
{
    char dir[1200], file[1300], path[1400];
    tc_test_tmpdir("journal-named", dir, sizeof dir);
    snprintf(file, sizeof file, "%s/one.bin", dir);
    strcat(dir, "/journal");
    tc_journal_t *j = NULL;
    cr_assert_eq(tc_journal_open(dir, &j), 0);
    char ids[3][TC_MSGID_LEN + 1];
    for (int i = 0; i < 3; i++)
        s_append_generated(j, i < 2 ? "bench-a" : "trace-b", file, (size_t)i, ids[i]);
    cr_expect_eq(tc_journal_count(j, "bench-a"), 2);
    cr_expect_eq(tc_journal_count(j, "trace-b"), 1);
    cr_expect_eq(tc_journal_count(j, "nothing"), 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tc_journal_ack(j, ids[i]), 0);
    cr_expect_eq(tc_journal_waiting(j), 0);

    /* Delivered results are still the job's, in order. */
    s_seen_t seen = {0};
    cr_assert_eq(tc_journal_each(j, "bench-a", s_seen, &seen), 0, "%s", tc_errmsg());
    cr_assert_eq(seen.n, 2);
    cr_expect_str_eq(seen.ids[0], ids[0]);
    cr_expect_str_eq(seen.ids[1], ids[1]);

    /* Asked for again: it waits again, no second copy is written. */
    off_t before = s_size(tc_journal_path(j));
    uint8_t *data = NULL;
    size_t len = 0;
    bool added = false;
    cr_assert_eq(tc_journal_put(j, ids[1], (const uint8_t *)"ignored", 7, &added), 0);
    cr_expect(added);
    cr_expect(tc_journal_is_waiting(j, ids[1]));
    cr_expect_lt(s_size(tc_journal_path(j)) - before, 64, "a requeue record, not a copy");
    cr_assert_eq(tc_journal_read(j, ids[1], &data, &len), 0);
    tc_envelope_t *back = NULL;
    cr_assert_eq(tc_envelope_unpack(data, len, 0, &back), 0);
    cr_expect_str_eq(back->message_id, ids[1]);
    tc_envelope_free(&back);
    free(data);
    tc_journal_destroy(&j);

    /* The cursor: the offset below which everything was settled. */
    snprintf(path, sizeof path, "%s/cursor", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "the cursor should be written on close");
    unsigned long long cursor = 0;
    cr_expect_eq(fscanf(f, "%llu", &cursor), 1);
    fclose(f);
    cr_expect_gt(cursor, 8, "the first result is settled");
    cr_expect_lt(cursor, (unsigned long long)before, "the second waits again");

    /* Reopened (checking only from the cursor on), the same state. */
    cr_assert_eq(tc_journal_open(dir, &j), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_journal_waiting(j), 1);
    cr_expect(tc_journal_is_waiting(j, ids[1]));
    cr_expect_eq(tc_journal_count(j, "bench-a"), 2);
    seen.n = 0;
    cr_assert_eq(tc_journal_each(j, "trace-b", s_seen, &seen), 0);
    cr_assert_eq(seen.n, 1);
    cr_expect_str_eq(seen.ids[0], ids[2]);
    tc_journal_destroy(&j);
}

Test(identity, agent_id_is_stable_and_the_directory_locked, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("identity", dir, sizeof dir);
    strcat(dir, "/state");
    tc_identity_t *a = NULL, *b = NULL;
    cr_assert_eq(tc_identity_open(dir, false, &a), 0, "%s", tc_errmsg());
    char id[TC_AGENT_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", tc_identity_agent_id(a));
    cr_expect(strlen(id) > 7);
    cr_expect_null(tc_identity_keys(a));
    /* A second user of the same directory is refused with the pid. */
    cr_expect_eq(tc_identity_open(dir, false, &b), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "another agent process") != NULL, "%s", tc_errmsg());
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d", (int)getpid());
    cr_expect(strstr(tc_errmsg(), pid) != NULL, "%s", tc_errmsg());

    cr_assert_eq(tc_identity_keygen(a, false), 0, "%s", tc_errmsg());
    cr_assert_not_null(tc_identity_keys(a));
    cr_expect_eq(tc_identity_keygen(a, false), TC_EINVAL, "keygen must not replace keys");
    char path[1400];
    struct stat st;
    snprintf(path, sizeof path, "%s/agent.key", dir);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    tc_identity_destroy(&a);

    /* Reopened: same id, same keys; keys required now present. */
    cr_assert_eq(tc_identity_open(dir, true, &b), 0, "%s", tc_errmsg());
    cr_expect_str_eq(tc_identity_agent_id(b), id);
    char rid[TC_AGENT_ID_MAX + 1];
    cr_expect_eq(tc_identity_read_agent_id(dir, rid, sizeof rid), 0);
    cr_expect_str_eq(rid, id);
    char key[TC_KEY_Z85_LEN + 1];
    cr_expect_eq(tc_identity_server_key(b, NULL, key), TC_EINVAL, "no aggregator.pub yet");
    cr_expect(strstr(tc_errmsg(), "aggregator.pub") != NULL);
    tc_identity_destroy(&b);

    /* A secret key readable by others is refused. */
    chmod(path, 0644);
    cr_expect_eq(tc_identity_open(dir, true, &b), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "chmod 600") != NULL, "%s", tc_errmsg());
}

Test(identity, missing_keys_say_what_to_run, .timeout = 30)
{
    char dir[1200];
    tc_test_tmpdir("identity-nokeys", dir, sizeof dir);
    tc_identity_t *a = NULL;
    cr_expect_eq(tc_identity_open(dir, true, &a), TC_EINVAL);
    cr_expect(strstr(tc_errmsg(), "agent keygen") != NULL, "%s", tc_errmsg());
}

Test(journal, import_result_file_in_chunks_keeps_ids, .timeout = 60)
{
    char dir[1200], file[1300];
    tc_test_tmpdir("journal-import", dir, sizeof dir);
    snprintf(file, sizeof file, "%s/results.bin", dir);
    tc_gen_opts_t o = tc_gen_defaults("");
    cr_assert_eq(tc_gen_write(file, &o, 0, 600), 0); /* more than one chunk */
    strcat(dir, "/journal");
    tc_journal_t *sp = NULL;
    cr_assert_eq(tc_journal_open(dir, &sp), 0);
    size_t records = 0, added = 0;
    cr_assert_eq(tc_journal_import(sp, file, "importer", &records, &added), 0, "%s", tc_errmsg());
    cr_expect_eq(records, 600);
    cr_expect_eq(added, 600);
    cr_expect_eq(tc_journal_waiting(sp), 600);
    /* Again: nothing new. */
    cr_assert_eq(tc_journal_import(sp, file, "importer", &records, &added), 0);
    cr_expect_eq(added, 0);
    cr_expect_eq(tc_journal_waiting(sp), 600);
    tc_journal_destroy(&sp);
    /* On disk for the next process. */
    cr_assert_eq(tc_journal_open(dir, &sp), 0);
    cr_expect_eq(tc_journal_waiting(sp), 600);
    char first[1][TC_MSGID_LEN + 1];
    cr_assert_eq(tc_journal_oldest(sp, first, 1), 1);
    tc_envelope_t *env = tc_test_journal_envelope(sp, first[0]);
    cr_expect_str_eq(env->message_id, first[0]);
    cr_expect_str_eq(env->agent_id, "importer");
    tc_envelope_free(&env);
    tc_journal_destroy(&sp);
}

/* ---- the layout before the journal ---- */

static int s_collect_ids(const tc_envelope_t *env, void *arg)
{
    return s_seen(env, arg);
}

static int s_agent_is_m(const tc_envelope_t *env, void *arg)
{
    (*(size_t *)arg)++;
    cr_expect_str_eq(env->agent_id, "agent-m");
    return 0;
}

Test(journal, an_older_state_directory_is_moved_in_once, .timeout = 60)
{
    char state[1200], path[1600], jdir[1300];
    tc_test_tmpdir("journal-migrate", state, sizeof state);
    snprintf(path, sizeof path, "%s/results", state);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/spool", state);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/spool/rejected", state);
    cr_assert_eq(mkdir(path, 0700), 0);

    /* bench-x.tcr: three records; the mark says two went to the spool, and
     * the second of them is still there unacknowledged. */
    snprintf(path, sizeof path, "%s/results/bench-x.tcr", state);
    tc_gen_opts_t o = tc_gen_defaults("");
    cr_assert_eq(tc_gen_write(path, &o, 0, 3), 0);
    s_seen_t rec = {0};
    cr_assert_eq(tc_resultfile_read(path, false, s_collect_ids, &rec, NULL), 0);
    cr_assert_eq(rec.n, 3);
    char mark[100];
    snprintf(mark, sizeof mark, "2 %s\n", rec.ids[1]);
    snprintf(path, sizeof path, "%s/results/bench-x.tcr.spooled", state);
    tc_test_write_file(path, mark);
    snprintf(path, sizeof path, "%s/spool/%s.msg", state, rec.ids[1]);
    tc_test_write_file(path, "the spool's copy");
    const char *pushed = "01ARZ3NDEKTSV4RRFFQ69G5FAV", *refused = "01ARZ3NDEKTSV4RRFFQ69G5FAW";
    snprintf(path, sizeof path, "%s/spool/%s.msg", state, pushed);
    tc_test_write_file(path, "pushed");
    snprintf(path, sizeof path, "%s/spool/rejected/%s.msg", state, refused);
    tc_test_write_file(path, "refused");
    snprintf(path, sizeof path, "%s/spool/rejected/%s.reason", state, refused);
    tc_test_write_file(path, "bad median\n");

    bool found = false;
    cr_assert_eq(tc_journal_migrate(state, "agent-m", true, &found), 0);
    cr_expect(found, "a dry look finds the older layout");
    cr_assert_eq(tc_journal_migrate(state, "agent-m", false, &found), 0, "%s", tc_errmsg());
    snprintf(path, sizeof path, "%s/results", state);
    cr_expect_eq(access(path, F_OK), -1, "results/ should have moved away");
    snprintf(path, sizeof path, "%s/spool", state);
    cr_expect_eq(access(path, F_OK), -1, "spool/ should have moved away");

    snprintf(jdir, sizeof jdir, "%s/journal", state);
    tc_journal_t *j = NULL;
    cr_assert_eq(tc_journal_open(jdir, &j), 0, "%s", tc_errmsg());
    cr_expect_eq(tc_journal_count(j, "bench-x"), 3, "the job's results, to resume from");
    cr_expect(!tc_journal_is_waiting(j, rec.ids[0]), "spooled and gone from the spool: delivered");
    cr_expect(tc_journal_is_waiting(j, rec.ids[1]), "still in the spool: waiting");
    cr_expect(tc_journal_is_waiting(j, rec.ids[2]), "after the mark: never spooled, waiting");
    cr_expect(tc_journal_is_waiting(j, pushed));
    cr_expect_eq(tc_journal_waiting(j), 3);
    cr_expect_eq(tc_journal_rejected_count(j), 1);
    uint8_t *data = NULL;
    size_t len = 0;
    cr_assert_eq(tc_journal_read(j, pushed, &data, &len), 0);
    cr_expect(len == 6 && !memcmp(data, "pushed", 6));
    free(data);
    /* Records without an agent id get this agent's. */
    size_t n_kept = 0;
    cr_assert_eq(tc_journal_each(j, "bench-x", s_agent_is_m, &n_kept), 0);
    cr_expect_eq(n_kept, 3);
    tc_journal_destroy(&j);
    tc_journal_summary_t sum;
    s_refused_t r = {0};
    cr_assert_eq(tc_journal_summary(jdir, &sum, s_on_refused, &r), 0);
    cr_assert_eq(r.n, 1);
    cr_expect_str_eq(r.reason[0], "bad median");

    /* The old files are kept aside, and nothing is left to migrate. */
    snprintf(path, sizeof path, "%s/migrated-", state);
    char cmd[1700];
    snprintf(cmd, sizeof cmd, "test -f %s*/results/bench-x.tcr", path);
    cr_expect_eq(system(cmd), 0, "the old result file should be kept");
    cr_assert_eq(tc_journal_migrate(state, "agent-m", false, &found), 0);
    cr_expect(!found);
}

Test(journal, an_unreadable_older_state_is_left_untouched_and_named, .timeout = 60)
{
    char state[1200], path[1600];
    tc_test_tmpdir("journal-migrate-bad", state, sizeof state);
    snprintf(path, sizeof path, "%s/results", state);
    cr_assert_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/results/bad.tcr", state);
    tc_test_write_file(path, "\xff\xff\xff\x7fnot a result file");
    cr_expect_lt(tc_journal_migrate(state, "agent-m", false, NULL), 0);
    cr_expect(strstr(tc_errmsg(), "bad.tcr") != NULL, "%s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "Nothing was changed") != NULL, "%s", tc_errmsg());
    cr_expect_eq(access(path, F_OK), 0, "the file stays where it was");
    snprintf(path, sizeof path, "%s/journal/log", state);
    cr_expect_eq(access(path, F_OK), -1, "no journal is started");
}
