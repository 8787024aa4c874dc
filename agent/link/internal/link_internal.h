/* Private to the link (link.c: lifecycle, sockets, connection events,
 * stepping; link_io.c: sending and the aggregator's answers). */
#ifndef TC_LINK_INTERNAL_H
#define TC_LINK_INTERNAL_H

#include "link.h"

#include <stdio.h>
#include <zmq.h>

#define TC_LINK_MAX_ENDPOINTS 16

typedef struct {
    char id[TC_MSGID_LEN + 1];
    int64_t due_ms;     /* when to send (again) */
    int64_t backoff_ms; /* wait after the next send */
    unsigned sends;
    int64_t first_sent_us, first_sent_wall_us; /* monotonic and epoch; for the ack log */
} tc_link_flight_t;

struct tc_link {
    tc_link_opts_t opts;
    char *endpoint;      /* as given: one endpoint, or several separated by commas */
    char **endpoints;    /* each of them */
    size_t n_endpoints;
    /* The aggregators connected now (handshake done, not lost since), by
     * the address their monitor events name. */
    char up[TC_LINK_MAX_ENDPOINTS][256];
    size_t peers_up;
    char *agent_id;
    char server_key[TC_KEY_Z85_LEN + 1];
    tc_keypair_t keys;
    tc_journal_t *journal;
    void *ctx;
    void *sock;
    void *mon;
    unsigned generation; /* sockets created so far (monitor endpoint names) */

    tc_link_flight_t *flight; /* opts.window entries */
    size_t n_flight;

    uint8_t *hello_body; /* packed Hello */
    size_t hello_len;
    char hello_id[TC_MSGID_LEN + 1];
    bool hello_pending;
    int64_t hello_due_ms, hello_backoff_ms;

    char running_job[72]; /* reported in heartbeats */
    int64_t started_ms, last_rx_ms, last_hb_ms;
    bool warned_refused;
    tc_link_stats_t stats;
    FILE *ack_log; /* TRAINCAST_ACK_LOG, or NULL */
};

/* link_io.c */
int tc_link_send_heartbeat(tc_link_t *self);
/* Send what is due: the Hello, waiting messages up to the window. */
int tc_link_pump(tc_link_t *self);
/* Handle every message waiting on the socket. */
int tc_link_receive(tc_link_t *self);

#endif
