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
    char spool[1300];
    snprintf(spool, sizeof spool, "%s/spool", bad);
    cr_expect_eq(tc_test_dir_count_suffix(spool, ".msg"), 20, "its messages stay spooled");

    /* Allowlisted and SIGHUP: the spool goes through. */
    char cmd[2600], out[1024];
    snprintf(cmd, sizeof cmd, "cat %s/agent.pub >> %s/allowlist", bad, bed.keys);
    cr_assert_eq(tc_test_run(cmd, out, sizeof out), 0, "%s", out);
    kill(bed.server, SIGHUP);
    for (int i = 0; i < 100 && !tc_test_file_contains(bed.server_log, "reloaded"); i++)
        tc_test_sleep_ms(100);
    cr_expect(tc_test_file_contains(bed.server_log, "reloaded"), "no reload in %s",
              bed.server_log);
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
