#include "tc_wire.h"

#include "tc_error.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const char s_b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int64_t tc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void s_random_bytes(uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    /* getrandom cannot fail on Linux >= 3.17 for small requests; fall back
     * to a clock-seeded generator rather than leaving bytes unset. */
    for (; got < n; got++)
        buf[got] = (uint8_t)(rand() ^ (int)tc_now_us());
}

void tc_msgid_new(char out[TC_MSGID_LEN + 1])
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static uint64_t last_ms;
    static uint8_t last_rand[10];

    uint8_t rnd[10];
    uint64_t ms = (uint64_t)(tc_now_us() / 1000);
    pthread_mutex_lock(&lock);
    if (ms <= last_ms) {
        /* Same millisecond (or clock went back): increment the random part
         * so ids stay strictly ordered within this process. */
        ms = last_ms;
        memcpy(rnd, last_rand, sizeof rnd);
        for (int i = 9; i >= 0; i--) {
            if (++rnd[i] != 0)
                break;
        }
    } else {
        s_random_bytes(rnd, sizeof rnd);
        rnd[0] &= 0x7f; /* headroom for increments */
    }
    last_ms = ms;
    memcpy(last_rand, rnd, sizeof rnd);
    pthread_mutex_unlock(&lock);

    /* 48-bit time -> 10 chars, 80-bit random -> 16 chars. */
    for (int i = 9; i >= 0; i--) {
        out[i] = s_b32[ms & 31];
        ms >>= 5;
    }
    /* Pack 80 bits into 16 base32 digits. */
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 2; i++)
        hi = (hi << 8) | rnd[i];
    for (int i = 2; i < 10; i++)
        lo = (lo << 8) | rnd[i];
    for (int i = 25; i >= 10; i--) {
        out[i] = s_b32[lo & 31];
        lo = (lo >> 5) | ((hi & 31) << 59);
        hi >>= 5;
    }
    out[TC_MSGID_LEN] = '\0';
}

int tc_msgid_valid(const char *id)
{
    if (!id || strlen(id) != TC_MSGID_LEN)
        return 0;
    for (const char *p = id; *p; p++) {
        if (!strchr(s_b32, *p))
            return 0;
    }
    return id[0] <= '7';
}

void tc_envelope_stamp(tc_envelope_t *env, const char *agent_id, char id_buf[TC_MSGID_LEN + 1])
{
    tc_msgid_new(id_buf);
    env->protocol_version = TC_PROTOCOL_VERSION;
    env->message_id = id_buf;
    env->agent_id = (char *)agent_id;
    env->sent_at_us = tc_now_us();
}

int tc_envelope_pack(const tc_envelope_t *env, uint8_t **buf, size_t *len)
{
    size_t n = traincast__v1__envelope__get_packed_size(env);
    if (n > TC_MAX_MESSAGE_BYTES)
        return tc_fail(TC_ELIMIT, "message of %zu bytes exceeds the %u byte limit; send fewer results per message",
                       n, TC_MAX_MESSAGE_BYTES);
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return tc_fail(TC_ENOMEM, "out of memory packing a %zu byte message", n);
    size_t w = traincast__v1__envelope__pack(env, b);
    if (w != n) {
        free(b);
        return tc_fail(TC_ELIB, "protobuf-c packed %zu bytes, expected %zu", w, n);
    }
    *buf = b;
    *len = n;
    return 0;
}

int tc_envelope_unpack(const uint8_t *buf, size_t len, size_t max_bytes, tc_envelope_t **out)
{
    *out = NULL;
    if (!max_bytes)
        max_bytes = TC_MAX_MESSAGE_BYTES;
    if (len > max_bytes)
        return tc_fail(TC_ELIMIT, "message of %zu bytes exceeds the %zu byte limit", len, max_bytes);
    tc_envelope_t *env = traincast__v1__envelope__unpack(NULL, len, buf);
    if (!env)
        return tc_fail(TC_EPARSE, "message of %zu bytes is not a valid traincast.v1.Envelope", len);
    *out = env;
    return 0;
}

void tc_envelope_free(tc_envelope_t **env_p)
{
    if (!env_p || !*env_p)
        return;
    traincast__v1__envelope__free_unpacked(*env_p, NULL);
    *env_p = NULL;
}

const char *tc_body_name(const tc_envelope_t *env)
{
    switch (env->body_case) {
    case TRAINCAST__V1__ENVELOPE__BODY_HELLO: return "hello";
    case TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS: return "conv_results";
    case TRAINCAST__V1__ENVELOPE__BODY_MODEL_GRAPH: return "model_graph";
    case TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE: return "train_trace";
    case TRAINCAST__V1__ENVELOPE__BODY_HEARTBEAT: return "heartbeat";
    case TRAINCAST__V1__ENVELOPE__BODY_ACK: return "ack";
    case TRAINCAST__V1__ENVELOPE__BODY_NACK: return "nack";
    case TRAINCAST__V1__ENVELOPE__BODY_BENCH_REQUEST: return "bench_request";
    case TRAINCAST__V1__ENVELOPE__BODY_TRACE_REQUEST: return "trace_request";
    case TRAINCAST__V1__ENVELOPE__BODY_JOB_PROGRESS: return "job_progress";
    default: return "none";
    }
}

typedef struct {
    int value;
    const char *name;
} s_name_t;

static const s_name_t s_directions[] = {{TRAINCAST__V1__DIRECTION__DIRECTION_FWD, "fwd"},
                                        {TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA, "bwd_data"},
                                        {TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER, "bwd_filter"},
                                        {0, NULL}};
static const s_name_t s_policies[] = {{TRAINCAST__V1__POLICY__POLICY_HEURISTIC, "heuristic"},
                                      {TRAINCAST__V1__POLICY__POLICY_EXHAUSTIVE, "exhaustive"},
                                      {0, NULL}};
static const s_name_t s_dtypes[] = {{TRAINCAST__V1__DTYPE__DTYPE_FP32, "fp32"},
                                    {TRAINCAST__V1__DTYPE__DTYPE_TF32, "tf32"},
                                    {TRAINCAST__V1__DTYPE__DTYPE_FP16, "fp16"},
                                    {TRAINCAST__V1__DTYPE__DTYPE_BF16, "bf16"},
                                    {TRAINCAST__V1__DTYPE__DTYPE_FP32_STRICT, "fp32_strict"},
                                    {0, NULL}};
static const s_name_t s_layouts[] = {{TRAINCAST__V1__LAYOUT__LAYOUT_NCHW, "nchw"},
                                     {TRAINCAST__V1__LAYOUT__LAYOUT_NHWC, "nhwc"},
                                     {0, NULL}};
static const s_name_t s_kinds[] = {{TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU, "cpu"},
                                   {TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA, "cuda"},
                                   {0, NULL}};
static const s_name_t s_algo_status[] = {
    {TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK, "ok"},
    {TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_NOT_SUPPORTED, "not_supported"},
    {TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_WORKSPACE_TOO_LARGE, "workspace_too_large"},
    {TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_FAILED, "failed"},
    {TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_SKIPPED, "skipped"},
    {0, NULL}};
static const s_name_t s_trace_status[] = {{TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK, "ok"},
                                          {TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OOM, "oom"},
                                          {TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_FAILED, "failed"},
                                          {0, NULL}};

static const char *s_lookup(const s_name_t *table, int value)
{
    for (; table->name; table++) {
        if (table->value == value)
            return table->name;
    }
    return "unspecified";
}

static int s_parse(const s_name_t *table, const char *s, int *out, const char *what)
{
    char choices[128] = "";
    for (const s_name_t *t = table; t->name; t++) {
        if (s && !strcmp(s, t->name)) {
            *out = t->value;
            return 0;
        }
        strncat(choices, t->name, sizeof choices - strlen(choices) - 3);
        if (t[1].name)
            strcat(choices, ", ");
    }
    return tc_fail(TC_EINVAL, "unknown %s '%s' (choose one of: %s)", what, s ? s : "", choices);
}

const char *tc_direction_name(Traincast__V1__Direction d) { return s_lookup(s_directions, d); }
const char *tc_policy_name(Traincast__V1__Policy p) { return s_lookup(s_policies, p); }
const char *tc_dtype_name(Traincast__V1__DType t) { return s_lookup(s_dtypes, t); }
const char *tc_layout_name(Traincast__V1__Layout l) { return s_lookup(s_layouts, l); }
const char *tc_device_kind_name(Traincast__V1__DeviceKind k) { return s_lookup(s_kinds, k); }
const char *tc_algo_status_name(Traincast__V1__AlgoStatus s) { return s_lookup(s_algo_status, s); }
const char *tc_trace_status_name(Traincast__V1__TraceStatus s) { return s_lookup(s_trace_status, s); }

int tc_direction_parse(const char *s, Traincast__V1__Direction *out)
{
    int v;
    int rc = s_parse(s_directions, s, &v, "direction");
    if (rc == 0)
        *out = (Traincast__V1__Direction)v;
    return rc;
}

int tc_policy_parse(const char *s, Traincast__V1__Policy *out)
{
    int v;
    int rc = s_parse(s_policies, s, &v, "policy");
    if (rc == 0)
        *out = (Traincast__V1__Policy)v;
    return rc;
}

int tc_dtype_parse(const char *s, Traincast__V1__DType *out)
{
    int v;
    int rc = s_parse(s_dtypes, s, &v, "dtype");
    if (rc == 0)
        *out = (Traincast__V1__DType)v;
    return rc;
}

int tc_layout_parse(const char *s, Traincast__V1__Layout *out)
{
    int v;
    int rc = s_parse(s_layouts, s, &v, "layout");
    if (rc == 0)
        *out = (Traincast__V1__Layout)v;
    return rc;
}
