/* A transport test bed: a fresh database, an aggregator (the real binary)
 * with its keys and allowlist, and agents (real binaries) with their own
 * state directories, all on 127.0.0.1. */
#ifndef TC_TEST_TRANSPORT_H
#define TC_TEST_TRANSPORT_H

#include "journal.h"
#include "tc_test_proc.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    char name[64];
    char dir[1024];      /* everything of this test */
    char dsn[1024];
    char keys[1100];     /* aggregator key directory (allowlist inside) */
    char endpoint[64];   /* tcp://127.0.0.1:PORT */
    char server_log[1100];
    pid_t server;
} tc_bed_t;

/* Fresh database `name` (migrated) on the suite's cluster, or on the cluster
 * whose admin connection string is `admin_dsn` when not NULL; aggregator
 * keys; a free port. */
void tc_bed_init(tc_bed_t *bed, const char *name, const char *admin_dsn);

/* Start `aggregator serve` (extra arguments NULL-terminated, may be NULL)
 * and wait until it listens. */
void tc_bed_start_server(tc_bed_t *bed, const char *const *extra);
/* Start it without waiting (e.g. while its database is down); then
 * tc_bed_wait_listening(bed, count before, timeout) waits for its
 * "listening on" line, the count of which tc_bed_listening_count gives. */
void tc_bed_spawn_server(tc_bed_t *bed, const char *const *extra);
int tc_bed_listening_count(const tc_bed_t *bed);
void tc_bed_wait_listening(tc_bed_t *bed, int before, int timeout_ms);
/* Stop it with `sig`; returns its exit status. */
int tc_bed_stop_server(tc_bed_t *bed, int sig);

/* An agent state directory with a key pair and the aggregator's public
 * key; its key is added to the allowlist unless `allow` is false. */
void tc_bed_agent(tc_bed_t *bed, const char *name, bool allow, char *state, size_t size);

/* Add the agent key of state directory `state` to the allowlist, or remove
 * it, then SIGHUP the server and wait for its "reloaded" line. */
void tc_bed_allow(tc_bed_t *bed, const char *state, bool allow);

/* Start `agent push` for `state` with the given file (NULL: only what waits)
 * and extra arguments (NULL-terminated, may be NULL), logging to `log`. */
pid_t tc_bed_push(tc_bed_t *bed, const char *state, const char *file, const char *log,
                  const char *const *extra);

/* The journal of the agent state directory `state`, read as `agent status`
 * reads it: messages waiting, messages refused, and the reason given for
 * refused message `id` ("" when it is not refused). */
size_t tc_bed_waiting(const char *state);
size_t tc_bed_refused(const char *state);
void tc_bed_refused_reason(const char *state, const char *id, char *out, size_t size);

/* Message `id` of an open journal, read and unpacked (asserting both);
 * free with tc_envelope_free. */
tc_envelope_t *tc_test_journal_envelope(tc_journal_t *j, const char *id);

/* Count from the bed's database. */
long long tc_bed_count(tc_bed_t *bed, const char *sql);

/* Wait until `sql` counts at least `want` (or timeout_ms passes); returns the
 * last count. */
long long tc_bed_wait_count(tc_bed_t *bed, const char *sql, long long want, int timeout_ms);

void tc_bed_fini(tc_bed_t *bed);

/* A PostgreSQL cluster of the test's own (deploy/pg-local.sh) in a fresh
 * directory `name`, for tests that stop and start it: its directory goes to
 * pgdir and its admin connection string to admin. */
void tc_cluster_start(const char *name, char *pgdir, size_t pgsize, char *admin, size_t asize);
/* deploy/pg-local.sh VERB PGDIR ("start", "stop"); its output to out (may be
 * NULL). Returns the exit status. */
int tc_cluster(const char *pgdir, const char *verb, char *out, size_t size);

#endif
