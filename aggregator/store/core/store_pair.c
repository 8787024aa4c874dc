/* One statement run on two connections at once (tc_store_query_pair): the
 * store's own and a second one, opened by a thread of its own
 * (tc_store_side_begin) so that its start overlaps other work, and kept
 * until the store is destroyed. The statements themselves are sent and read
 * with libpq's asynchronous calls and poll(2) on the calling thread. */
#include "store_internal.h"

#include "tc_error.h"
#include "tc_log.h"

#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <string.h>

/* The second connection: opened by a thread (tid, while thread) that
 * returns it, then kept in side; failed when it could not be opened. */
typedef struct {
    PGconn *side;
    pthread_t tid;
    bool thread, failed;
} s_side_t;

static void *s_side_open(void *arg)
{
    const tc_store_t *s = arg;
    const char *keys[] = {"dbname", "application_name", NULL};
    const char *vals[] = {s->dsn, "traincast", NULL};
    return PQconnectdbParams(keys, vals, 1);
}

/* Wait for the opening thread, if any: what it opened becomes the side
 * connection. */
static void s_side_join(s_side_t *st)
{
    if (!st->thread)
        return;
    void *conn = NULL;
    pthread_join(st->tid, &conn);
    st->thread = false;
    st->side = conn;
    if (conn)
        PQsetNoticeProcessor(conn, tc_store_notice, NULL);
}

/* Close the second connection (waiting for its thread, if opening). */
static void s_side_end(void *state)
{
    s_side_t *st = state;
    s_side_join(st);
    PQfinish(st->side);
    st->side = NULL;
}

static void s_side_reset(void *state)
{
    s_side_end(state);
    ((s_side_t *)state)->failed = false;
}

static const tc_store_part_t s_part = {
    .size = sizeof(s_side_t), .reset = s_side_reset, .release = s_side_end};

void tc_store_side_begin(tc_store_t *s)
{
    s_side_t *st = tc_store_part_state(s, &s_part);
    if (!st || st->side || st->thread || st->failed)
        return;
    if (pthread_create(&st->tid, NULL, s_side_open, s) == 0)
        st->thread = true;
}

/* The side connection, once its thread is done; NULL when it could not be
 * opened (then statements run on one connection). */
static PGconn *s_side(tc_store_t *s)
{
    s_side_t *st = tc_store_part_state(s, &s_part);
    if (!st)
        return NULL;
    if (st->side && PQstatus(st->side) != CONNECTION_OK)
        s_side_end(st); /* known lost: open a new one */
    tc_store_side_begin(s);
    s_side_join(st);
    if (st->side && PQstatus(st->side) != CONNECTION_OK) {
        tc_log_debug("a second database connection could not be opened (%s); statements run "
                     "on one",
                     PQerrorMessage(st->side));
        PQfinish(st->side);
        st->side = NULL;
        st->failed = true;
    }
    return st->side;
}

/* One connection's share: `res` its first result, `rc` its failure;
 * `sending` while libpq still holds part of the statement (the connection
 * is nonblocking until it is done, so that neither share waits for the
 * other's to be sent: a large parameter fills the socket's buffer). */
typedef struct {
    PGconn *conn;
    bool done, sending;
    PGresult *res;
    int rc;
} s_leg_t;

static void s_leg_fail(s_leg_t *l, PGresult *res, const char *what)
{
    if (l->rc == 0)
        l->rc = tc_store_fail_conn(l->conn, res, what, __FILE__, __LINE__);
    else
        PQclear(res);
}

/* Send what libpq still holds: done, or wait for the socket. */
static void s_leg_flush(s_leg_t *l, const char *what)
{
    int r = PQflush(l->conn);
    if (r < 0) {
        s_leg_fail(l, NULL, what);
        l->done = true;
    }
    l->sending = r == 1;
}

static void s_leg_send(s_leg_t *l, const char *what, const char *sql, const char *param)
{
    const char *params[] = {param};
    if (PQsetnonblocking(l->conn, 1) != 0 ||
        !PQsendQueryParams(l->conn, sql, 1, NULL, params, NULL, NULL, 1)) {
        s_leg_fail(l, NULL, what);
        l->done = true;
        return;
    }
    s_leg_flush(l, what);
}

/* Read what arrived; the leg is done when libpq has no more results. */
static void s_leg_read(s_leg_t *l, const char *what)
{
    if (!PQconsumeInput(l->conn)) {
        s_leg_fail(l, NULL, what);
        l->done = true;
        return;
    }
    while (!l->done && !PQisBusy(l->conn)) {
        PGresult *r = PQgetResult(l->conn);
        if (!r)
            l->done = true;
        else if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
            s_leg_fail(l, r, what);
        else if (!l->res)
            l->res = r;
        else
            PQclear(r);
    }
}

/* Send and read both legs until both are done; the connections are
 * blocking again afterwards. */
static int s_read_both(s_leg_t legs[2], const char *what)
{
    int rc = 0;
    while (rc == 0 && (!legs[0].done || !legs[1].done)) {
        struct pollfd fds[2];
        s_leg_t *of[2];
        nfds_t n = 0;
        for (int i = 0; i < 2; i++)
            if (!legs[i].done) {
                short ev = (short)(POLLIN | (legs[i].sending ? POLLOUT : 0));
                fds[n] = (struct pollfd){.fd = PQsocket(legs[i].conn), .events = ev};
                of[n++] = &legs[i];
            }
        if (poll(fds, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            rc = tc_fail(TC_EIO, "database: %s: waiting for the server: %s", what,
                         strerror(errno));
            break;
        }
        for (nfds_t k = 0; k < n; k++) {
            if (!fds[k].revents)
                continue;
            if (fds[k].revents & (POLLIN | POLLERR | POLLHUP))
                s_leg_read(of[k], what);
            if (of[k]->sending && !of[k]->done)
                s_leg_flush(of[k], what);
        }
    }
    for (int i = 0; i < 2; i++) {
        if (rc < 0) /* the connections stay usable */
            for (PGresult *r; !legs[i].done && (r = PQgetResult(legs[i].conn));)
                PQclear(r);
        PQsetnonblocking(legs[i].conn, 0);
    }
    if (rc < 0)
        return rc;
    return legs[0].rc ? legs[0].rc : legs[1].rc;
}

/* The second share on the store's connection, the first's result already
 * in out[0]; on failure neither is returned. */
static int s_second_here(tc_store_t *s, const char *what, const char *sql,
                         const char *params[2], PGresult *out[2])
{
    int rc = tc_store_query_binary(s, &out[1], what, sql, 1, &params[1]);
    if (rc < 0) {
        PQclear(out[0]);
        out[0] = NULL;
    }
    return rc;
}

int tc_store_query_pair(tc_store_t *s, const char *what, const char *sql, const char *params[2],
                        PGresult *out[2])
{
    out[0] = out[1] = NULL;
    /* Inside a transaction the second connection would not see its data. */
    PGconn *side = PQtransactionStatus(s->conn) == PQTRANS_IDLE ? s_side(s) : NULL;
    if (!side) {
        int rc = tc_store_query_binary(s, &out[0], what, sql, 1, &params[0]);
        return rc < 0 ? rc : s_second_here(s, what, sql, params, out);
    }
    s_leg_t legs[2] = {{.conn = s->conn}, {.conn = side}};
    s_leg_send(&legs[0], what, sql, params[0]);
    s_leg_send(&legs[1], what, sql, params[1]);
    int rc = s_read_both(legs, what);
    if (rc < 0 && legs[0].rc == 0 && PQstatus(side) != CONNECTION_OK) {
        /* The second connection was lost (its server process ended): its
         * share runs on the store's own, and a new one opens next time. */
        tc_log_debug("%s: the second connection was lost (%s); its share runs on the first",
                     what, tc_errmsg());
        s_side_end(tc_store_part_state(s, &s_part));
        PQclear(legs[1].res);
        out[0] = legs[0].res;
        return s_second_here(s, what, sql, params, out);
    }
    for (int i = 0; i < 2; i++) {
        if (rc == 0)
            out[i] = legs[i].res;
        else
            PQclear(legs[i].res);
    }
    return rc;
}
