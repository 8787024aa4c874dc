/* What the aggregator refuses: agents whose key is not allowlisted, and
 * malformed, truncated, oversized, wrong-version, multi-frame and invalid
 * messages; and that it keeps serving well-behaved agents meanwhile. */
#include "tc_test.h"
#include "tc_test_gen.h"
#include "tc_test_transport.h"

#include "tc_error.h"
#include "tc_zmq.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define COUNT_CONV "SELECT count(*) FROM conv_results"

static void s_gen(const char *path, const char *agent, size_t n)
{
    tc_gen_opts_t o = tc_gen_defaults(agent);
    cr_assert_eq(tc_gen_write(path, &o, 0, n), 0, "generating %s", path);
}

Test(transport_security, unlisted_key_refused_until_allowlisted, .timeout = 300)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "allowlist", NULL);
    char good[1200], bad[1200], file[1200], log[1200], log2[1200];
    tc_bed_agent(&bed, "good", true, good, sizeof good);
    tc_bed_agent(&bed, "bad", false, bad, sizeof bad);
    tc_bed_start_server(&bed, NULL);
    snprintf(file, sizeof file, "%s/bad.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-bad.log", bed.dir);
    snprintf(log2, sizeof log2, "%s/push-bad2.log", bed.dir);
    s_gen(file, "bad-agent", 20);

    /* Refused: the push ends with an error instead of waiting. */
    int st = tc_test_wait(tc_bed_push(&bed, bad, file, log, NULL), 60000);
    cr_expect_eq(st, 1, "a refused agent should fail (exit 1), got %d (log %s)", st, log);
    cr_expect(tc_test_file_contains(log, "refused this agent's key"), "agent log %s", log);
    cr_expect(tc_test_file_contains(bed.server_log, "refused agent key"), "server log %s",
              bed.server_log);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages"), 0,
                 "a refused agent stored something");
    cr_expect_eq(tc_bed_waiting(bad), 20, "its messages stay in its journal");

    /* Allowlisted and SIGHUP: what waits goes through. */
    tc_bed_allow(&bed, bad, true);
    st = tc_test_wait(tc_bed_push(&bed, bad, NULL, log2, NULL), 120000);
    cr_expect_eq(st, 0, "push after allowlisting failed (log %s)", log2);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 20);
    tc_bed_fini(&bed);
}

/* A raw DEALER speaking CURVE with an allowlisted agent's keys. */
typedef struct {
    void *ctx, *sock;
} s_client_t;

static void s_client_open(s_client_t *c, tc_bed_t *bed, const char *state)
{
    char path[1300], server_key[TC_KEY_Z85_LEN + 1];
    tc_keypair_t kp;
    snprintf(path, sizeof path, "%s/agent.key", state);
    cr_assert_eq(tc_keypair_read(path, &kp), 0, "%s", tc_errmsg());
    snprintf(path, sizeof path, "%s/aggregator.pub", bed->keys);
    cr_assert_eq(tc_pubkey_read(path, server_key), 0, "%s", tc_errmsg());
    c->ctx = zmq_ctx_new();
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    int linger = 0, timeout = 15000;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(c->sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(c->sock, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(c->sock, ZMQ_CURVE_SERVERKEY, server_key, TC_KEY_Z85_LEN + 1);
    zmq_setsockopt(c->sock, ZMQ_CURVE_PUBLICKEY, kp.public_z85, TC_KEY_Z85_LEN + 1);
    zmq_setsockopt(c->sock, ZMQ_CURVE_SECRETKEY, kp.secret_z85, TC_KEY_Z85_LEN + 1);
    cr_assert_eq(zmq_connect(c->sock, bed->endpoint), 0);
}

static void s_client_close(s_client_t *c)
{
    zmq_close(c->sock);
    zmq_ctx_term(c->ctx);
}

/* Receive the next Nack or Ack (skipping heartbeats) within the socket's
 * timeout. NULL when nothing came. */
static tc_envelope_t *s_reply(s_client_t *c)
{
    for (int i = 0; i < 20; i++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, c->sock, 0) < 0) {
            zmq_msg_close(&m);
            return NULL;
        }
        tc_envelope_t *env = NULL;
        int rc = tc_envelope_unpack(zmq_msg_data(&m), zmq_msg_size(&m), 0, &env);
        zmq_msg_close(&m);
        cr_assert_eq(rc, 0, "the aggregator sent something undecodable");
        if (env->body_case == TRAINCAST__V1__ENVELOPE__BODY_NACK ||
            env->body_case == TRAINCAST__V1__ENVELOPE__BODY_ACK)
            return env;
        tc_envelope_free(&env);
    }
    return NULL;
}

static void s_expect_nack(s_client_t *c, const char *what, const char *reason_part,
                          const char *msg_id)
{
    tc_envelope_t *env = s_reply(c);
    cr_assert_not_null(env, "%s: no answer from the aggregator", what);
    cr_assert_eq(env->body_case, TRAINCAST__V1__ENVELOPE__BODY_NACK, "%s: expected a Nack, got %s",
                 what, tc_body_name(env));
    cr_expect(env->nack->permanent, "%s: the Nack should be permanent", what);
    cr_expect(strstr(env->nack->reason, reason_part) != NULL, "%s: reason '%s' lacks '%s'", what,
              env->nack->reason, reason_part);
    if (msg_id)
        cr_expect_str_eq(env->nack->message_id, msg_id, "%s: Nack for the wrong id", what);
    tc_envelope_free(&env);
}

static void s_send(s_client_t *c, const void *data, size_t len)
{
    cr_assert_eq(zmq_send(c->sock, data, len, 0), (int)len, "send: %s",
                 zmq_strerror(zmq_errno()));
}

Test(transport_security, hostile_frames_refused_and_others_served, .timeout = 300)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "hostile", NULL);
    char raw[1200], good[1200];
    tc_bed_agent(&bed, "raw", true, raw, sizeof raw);
    tc_bed_agent(&bed, "good", true, good, sizeof good);
    const char *extra[] = {"--max-message-bytes", "65536", NULL};
    tc_bed_start_server(&bed, extra);
    s_client_t c;
    s_client_open(&c, &bed, raw);

    /* Garbage. */
    const char garbage[] = "\xff\xfe this is not a protobuf message at all \x01\x02";
    s_send(&c, garbage, sizeof garbage);
    s_expect_nack(&c, "garbage", "cannot decode", "");

    /* A valid message, truncated. */
    tc_gen_opts_t o = tc_gen_defaults("raw-agent");
    o.results_per_message = 4;
    uint8_t *buf = NULL;
    size_t len = 0;
    char id[TC_MSGID_LEN + 1];
    cr_assert_eq(tc_gen_pack(&o, 0, &buf, &len, id), 0);
    s_send(&c, buf, len / 2);
    s_expect_nack(&c, "truncated", "cannot decode", "");
    free(buf);

    /* Over the aggregator's limit (but within what ZeroMQ lets through). */
    size_t big = 100 * 1024;
    uint8_t *large = calloc(1, big);
    s_send(&c, large, big);
    s_expect_nack(&c, "oversized", "exceeds the 65536 byte limit", "");

    /* A protocol version this aggregator does not speak. */
    tc_envelope_t *env = NULL;
    cr_assert_eq(tc_gen_pack(&o, 1, &buf, &len, id), 0);
    cr_assert_eq(tc_envelope_unpack(buf, len, 0, &env), 0);
    free(buf);
    env->protocol_version = 99;
    cr_assert_eq(tc_envelope_pack(env, &buf, &len), 0);
    s_send(&c, buf, len);
    s_expect_nack(&c, "wrong version", "protocol_version", env->message_id);
    free(buf);

    /* Two frames. */
    cr_assert_eq(zmq_send(c.sock, "a", 1, ZMQ_SNDMORE), 1);
    s_send(&c, "b", 1);
    s_expect_nack(&c, "two frames", "one frame", "");

    /* Well-formed but invalid: a negative time. */
    env->protocol_version = TC_PROTOCOL_VERSION;
    env->conv_results->results[0]->median_ms = -1;
    cr_assert_eq(tc_envelope_pack(env, &buf, &len), 0);
    s_send(&c, buf, len);
    s_expect_nack(&c, "invalid value", "median_ms", env->message_id);
    free(buf);
    tc_envelope_free(&env);

    /* Far over the limit: ZeroMQ cuts the connection; nothing comes back. */
    size_t huge = 3u << 20;
    uint8_t *hb = calloc(1, huge);
    s_send(&c, hb, huge);
    int short_wait = 3000;
    zmq_setsockopt(c.sock, ZMQ_RCVTIMEO, &short_wait, sizeof short_wait);
    tc_envelope_t *none = s_reply(&c);
    cr_expect_null(none, "a frame over the transport limit should get no answer");
    tc_envelope_free(&none);
    free(hb);
    free(large);
    s_client_close(&c);

    /* Meanwhile a well-behaved agent is served. */
    char file[1200], log[1200];
    snprintf(file, sizeof file, "%s/good.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-good.log", bed.dir);
    s_gen(file, "good-agent", 50);
    cr_expect_eq(tc_test_wait(tc_bed_push(&bed, good, file, log, NULL), 120000), 0,
                 "a good agent was not served (log %s)", log);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 50);
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages WHERE agent_id = "
                                    "'raw-agent'"),
                 0, "something from the hostile client was stored");
    cr_expect(tc_test_file_contains(bed.server_log, "cannot decode"), "log %s", bed.server_log);
    cr_expect(tc_test_file_contains(bed.server_log, "exceeds the 65536 byte limit"));
    cr_expect(tc_test_file_contains(bed.server_log, "protocol_version"));
    cr_expect(tc_test_file_contains(bed.server_log, "median_ms"));
    cr_expect(tc_test_file_contains(bed.server_log, "closed"),
              "the cut connection should be logged (log %s)", bed.server_log);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0);
    tc_bed_fini(&bed);
}

Test(transport_security, insecure_agent_cannot_reach_curve_server, .timeout = 120)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "mismatch", NULL);
    char state[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "a", true, state, sizeof state);
    tc_bed_start_server(&bed, NULL);
    snprintf(file, sizeof file, "%s/r.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    s_gen(file, "insecure-agent", 5);
    const char *extra[] = {"--insecure", "--timeout", "8", NULL};
    int st = tc_test_wait(tc_bed_push(&bed, state, file, log, extra), 60000);
    cr_expect_eq(st, 1, "an --insecure agent must not get through (exit %d, log %s)", st, log);
    cr_expect(tc_test_file_contains(log, "INSECURE"), "the agent must warn loudly");
    cr_expect_eq(tc_bed_count(&bed, "SELECT count(*) FROM received_messages"), 0);
    tc_bed_fini(&bed);
}

Test(transport_security, insecure_on_both_sides_works_and_warns, .timeout = 120)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "insecure", NULL);
    char state[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "a", false, state, sizeof state);
    const char *srv[] = {"--insecure", NULL};
    tc_bed_start_server(&bed, srv);
    cr_expect(tc_test_file_contains(bed.server_log, "INSECURE"), "the aggregator must warn");
    snprintf(file, sizeof file, "%s/r.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push.log", bed.dir);
    s_gen(file, "insecure-agent", 20);
    const char *extra[] = {"--insecure", NULL};
    cr_expect_eq(tc_test_wait(tc_bed_push(&bed, state, file, log, extra), 60000), 0, "log %s",
                 log);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 20);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0);
    tc_bed_fini(&bed);
}

/* An agent id belongs to the key that first stored under it: another
 * allowlisted key is refused for results and for session messages, and
 * the refusal names both keys. */
Test(transport_security, agent_id_bound_to_its_key, .timeout = 300)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "identity", NULL);
    char owner[1200], thief[1200], file[1200], log[1200];
    tc_bed_agent(&bed, "owner", true, owner, sizeof owner);
    tc_bed_agent(&bed, "thief", true, thief, sizeof thief);
    tc_bed_start_server(&bed, NULL);

    snprintf(file, sizeof file, "%s/owner.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-owner.log", bed.dir);
    s_gen(file, "shared-id", 5);
    cr_assert_eq(tc_test_wait(tc_bed_push(&bed, owner, file, log, NULL), 120000), 0, "log %s",
                 log);
    cr_assert_eq(tc_bed_count(&bed, COUNT_CONV), 5);
    char owner_key[TC_KEY_Z85_LEN + 1], path[1300];
    snprintf(path, sizeof path, "%s/agent.pub", owner);
    cr_assert_eq(tc_pubkey_read(path, owner_key), 0, "%s", tc_errmsg());
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM agent_keys WHERE agent_id = 'shared-id' AND public_key = '%s'",
             owner_key);
    cr_expect_eq(tc_bed_count(&bed, sql), 1, "the id is bound to the first key");

    /* Results under the owner's id from another key: refused, kept. */
    snprintf(file, sizeof file, "%s/thief.bin", bed.dir);
    snprintf(log, sizeof log, "%s/push-thief.log", bed.dir);
    s_gen(file, "shared-id", 3);
    int st = tc_test_wait(tc_bed_push(&bed, thief, file, log, NULL), 120000);
    cr_expect_eq(st, 2, "the thief's push should end with its messages refused (log %s)", log);
    cr_expect(tc_test_file_contains(log, "belongs to the agent with key"), "log %s", log);
    cr_expect(tc_test_file_contains(bed.server_log, "belongs to the agent with key"),
              "the refusal is logged (log %s)", bed.server_log);
    cr_expect_eq(tc_bed_count(&bed, COUNT_CONV), 5, "nothing of the thief's was stored");
    cr_expect_eq(tc_bed_refused(thief), 3);

    /* A session message (a heartbeat) under the owner agent's own id. */
    char owner_id[300] = "";
    snprintf(path, sizeof path, "%s/agent_id", owner);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(owner_id, sizeof owner_id, f));
    fclose(f);
    owner_id[strcspn(owner_id, "\n")] = '\0';
    s_client_t c;
    s_client_open(&c, &bed, thief);
    Traincast__V1__Heartbeat hb = TRAINCAST__V1__HEARTBEAT__INIT;
    tc_envelope_t env = TRAINCAST__V1__ENVELOPE__INIT;
    env.body_case = TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    char id[TC_MSGID_LEN + 1];
    tc_envelope_stamp(&env, owner_id, id);
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(tc_envelope_pack(&env, &buf, &len), 0);
    s_send(&c, buf, len);
    free(buf);
    s_expect_nack(&c, "heartbeat under another agent's id", "belongs to another agent's key", id);
    s_client_close(&c);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}

/* A client cycling through unknown keys cannot write a log line per
 * attempt: refusals are capped per minute whatever the keys. */
Test(transport_security, refusals_of_many_keys_do_not_flood_the_log, .timeout = 120)
{
    tc_bed_t bed;
    tc_bed_init(&bed, "flood", NULL);
    tc_bed_start_server(&bed, NULL);
    char server_key[TC_KEY_Z85_LEN + 1], path[1300];
    snprintf(path, sizeof path, "%s/aggregator.pub", bed.keys);
    cr_assert_eq(tc_pubkey_read(path, server_key), 0, "%s", tc_errmsg());
    void *ctx = zmq_ctx_new();
    enum { N = 80 };
    void *socks[N];
    for (int i = 0; i < N; i++) {
        char pub[TC_KEY_Z85_LEN + 1], sec[TC_KEY_Z85_LEN + 1];
        cr_assert_eq(zmq_curve_keypair(pub, sec), 0);
        socks[i] = zmq_socket(ctx, ZMQ_DEALER);
        int linger = 0;
        zmq_setsockopt(socks[i], ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(socks[i], ZMQ_CURVE_SERVERKEY, server_key, TC_KEY_Z85_LEN + 1);
        zmq_setsockopt(socks[i], ZMQ_CURVE_PUBLICKEY, pub, TC_KEY_Z85_LEN + 1);
        zmq_setsockopt(socks[i], ZMQ_CURVE_SECRETKEY, sec, TC_KEY_Z85_LEN + 1);
        cr_assert_eq(zmq_connect(socks[i], bed.endpoint), 0);
    }
    /* Wait until the aggregator has seen (and refused) them all. */
    int lines = 0;
    for (int waited = 0; waited < 10000; waited += 200) {
        tc_test_sleep_ms(200);
        char cmd[1400], out[64];
        snprintf(cmd, sizeof cmd, "grep -c 'refused agent key' '%s'", bed.server_log);
        tc_test_run(cmd, out, sizeof out);
        lines = atoi(out);
        if (lines >= 10)
            break;
    }
    tc_test_sleep_ms(2000); /* the rest of the attempts */
    for (int i = 0; i < N; i++)
        zmq_close(socks[i]);
    zmq_ctx_term(ctx);
    char cmd[1400], out[64];
    snprintf(cmd, sizeof cmd, "grep -c 'refused agent key' '%s'", bed.server_log);
    tc_test_run(cmd, out, sizeof out);
    lines = atoi(out);
    cr_expect_geq(lines, 1, "refusals should be logged at all (log %s)", bed.server_log);
    cr_expect_leq(lines, 10, "%d refusal lines for %d keys: not capped (log %s)", lines, N,
                  bed.server_log);
    cr_expect_eq(tc_bed_stop_server(&bed, SIGTERM), 0, "log %s", bed.server_log);
    tc_bed_fini(&bed);
}
