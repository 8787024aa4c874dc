#include "fw_conv.h"

#include "tc_error.h"
#include "tc_json.h"
#include "tc_log.h"
#include "tc_paths.h"
#include "tc_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long an answer may take: starting (import torch, CUDA context),
 * planning (filling tensors, cuDNN initialisation) and everything else. */
#define S_START_MS 180000
#define S_PLAN_MS 120000
#define S_RUN_MS 60000
#define S_MAX_LINE (256u << 20) /* a "read" answer carries a whole tensor */

struct tc_fw {
    pid_t pid;
    int in_w, out_r;       /* the helper's stdin and stdout */
    char err_path[256];    /* its stderr, for error messages */
    char *buf;             /* what was read and not yet consumed */
    size_t len, cap;
    char version[64];
    unsigned long plan_seq;   /* the plan the helper holds */
    unsigned long next_seq;
    bool dead;
};

typedef struct {
    tc_fw_t *fw;
    tc_conv_spec_t spec;
    unsigned long seq;
    tc_algo_t cand;
    char route[32];
    bool selected;
} s_plan_t;

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The last lines of the helper's stderr, for a message. */
static void s_err_tail(const tc_fw_t *fw, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(fw->err_path, "r");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    long start = end > (long)size - 1 ? end - (long)size + 1 : 0;
    fseek(f, start, SEEK_SET);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static int s_dead(tc_fw_t *fw, const char *what)
{
    char tail[600];
    fw->dead = true;
    s_err_tail(fw, tail, sizeof tail);
    return tc_fail(TC_ECHILD, "the framework helper (agent/harness/gpu_env.py) %s%s%s", what,
                   tail[0] ? "; its last words: " : "", tail);
}

static int s_send(tc_fw_t *fw, const char *line)
{
    if (fw->dead)
        return tc_fail(TC_ECHILD, "the framework helper is gone");
    size_t n = strlen(line), off = 0;
    while (off < n) {
        ssize_t w = write(fw->in_w, line + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return s_dead(fw, "stopped reading requests");
        off += (size_t)w;
    }
    return 0;
}

/* One answer line (NUL-terminated in fw->buf, `*n` bytes), within
 * `timeout_ms`. */
static int s_line(tc_fw_t *fw, int timeout_ms, size_t *n)
{
    int64_t until = s_now_ms() + timeout_ms;
    for (;;) {
        char *nl = fw->len ? memchr(fw->buf, '\n', fw->len) : NULL;
        if (nl) {
            *nl = '\0';
            *n = (size_t)(nl - fw->buf);
            return 0;
        }
        if (fw->len >= S_MAX_LINE)
            return s_dead(fw, "answered with a line that is too long");
        if (fw->cap - fw->len < 65536) {
            size_t cap = fw->cap ? fw->cap * 2 : 1 << 16;
            char *b = realloc(fw->buf, cap);
            if (!b)
                return tc_fail(TC_ENOMEM, "out of memory reading the framework helper");
            fw->buf = b;
            fw->cap = cap;
        }
        int64_t left = until - s_now_ms();
        if (left <= 0) {
            fw->dead = true;
            kill(fw->pid, SIGKILL);
            return tc_fail(TC_ETIMEOUT, "the framework helper did not answer within %d s",
                           timeout_ms / 1000);
        }
        struct pollfd p = {.fd = fw->out_r, .events = POLLIN};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        ssize_t got = read(fw->out_r, fw->buf + fw->len, fw->cap - fw->len - 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return s_dead(fw, "exited");
        fw->len += (size_t)got;
    }
}

static void s_consume(tc_fw_t *fw, size_t n)
{
    size_t used = n + 1;
    memmove(fw->buf, fw->buf + used, fw->len - used);
    fw->len -= used;
}

/* Send `req` and parse the answer into *doc; an "error" answer fails with
 * its message (TC_ENOMEM when the framework ran out of memory). */
static int s_ask(tc_fw_t *fw, const char *req, int timeout_ms, const char *want, tc_json_t **doc)
{
    *doc = NULL;
    int rc = s_send(fw, req);
    size_t n = 0;
    if (rc == 0)
        rc = s_line(fw, timeout_ms, &n);
    if (rc < 0)
        return rc;
    tc_json_limits_t lim = {S_MAX_LINE, 8, 256};
    rc = tc_json_parse(fw->buf, n, &lim, doc);
    if (rc < 0) {
        rc = tc_fail(TC_EPARSE, "the framework helper answered something that is not JSON: "
                                "%.200s",
                     fw->buf);
        s_consume(fw, n);
        return rc;
    }
    s_consume(fw, n);
    const tc_json_value_t *root = tc_json_root(*doc);
    const char *type = tc_json_string(tc_json_get(root, "type"));
    if (type && !strcmp(type, "error")) {
        const char *msg = tc_json_string(tc_json_get(root, "message"));
        rc = tc_fail(tc_json_bool(tc_json_get(root, "oom")) ? TC_ENOMEM : TC_ELIB,
                     "PyTorch: %s", msg ? msg : "failed");
        tc_json_destroy(doc);
        return rc;
    }
    if (!type || strcmp(type, want) != 0) {
        tc_json_destroy(doc);
        return tc_fail(TC_EPARSE, "the framework helper answered '%s' where '%s' was due",
                       type ? type : "?", want);
    }
    return 0;
}

int tc_fw_open(const char *device, tc_fw_t **out)
{
    *out = NULL;
    const char *python = tc_python();
    if (access(python, X_OK) != 0)
        return tc_fail(TC_ENOTFOUND, "no Python at %s (set TRAINCAST_PYTHON to a Python with "
                                     "PyTorch)",
                       python);
    char dir[1024], script[1100];
    snprintf(script, sizeof script, "%s/gpu_env.py",
             tc_resource_dir(TC_DIR_HARNESS, dir, sizeof dir));
    tc_fw_t *fw = calloc(1, sizeof *fw);
    if (!fw)
        return tc_fail(TC_ENOMEM, "out of memory starting the framework helper");
    fw->in_w = fw->out_r = -1;
    fw->pid = -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(fw->err_path, sizeof fw->err_path, "%s/traincast-fw-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    int err_fd = mkstemp(fw->err_path);
    int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
    if (err_fd < 0 || pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0) {
        int e = errno;
        if (err_fd >= 0)
            close(err_fd);
        for (int i = 0; i < 2; i++) {
            if (to_child[i] >= 0)
                close(to_child[i]);
            if (from_child[i] >= 0)
                close(from_child[i]);
        }
        unlink(fw->err_path);
        free(fw);
        return tc_fail(TC_EIO, "starting the framework helper: %s", strerror(e));
    }
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        dup2(to_child[0], STDIN_FILENO);
        dup2(from_child[1], STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        char *argv[] = {(char *)python, script, "--serve", "--device", (char *)device, NULL};
        execv(python, argv);
        dprintf(STDERR_FILENO, "cannot run %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    close(err_fd);
    fw->pid = pid;
    fw->in_w = to_child[1];
    fw->out_r = from_child[0];
    if (pid < 0) {
        int e = errno;
        tc_fw_close(&fw);
        return tc_fail(TC_EIO, "starting the framework helper: fork: %s", strerror(e));
    }
    size_t n = 0;
    int rc = s_line(fw, S_START_MS, &n);
    tc_json_t *doc = NULL;
    if (rc == 0 && tc_json_parse(fw->buf, n, NULL, &doc) < 0)
        rc = tc_fail(TC_EPARSE, "the framework helper started with: %.200s", fw->buf);
    if (rc == 0) {
        const tc_json_value_t *root = tc_json_root(doc);
        const char *type = tc_json_string(tc_json_get(root, "type"));
        const char *msg = tc_json_string(tc_json_get(root, "message"));
        if (type && !strcmp(type, "error"))
            rc = tc_fail(msg && strstr(msg, "import torch") ? TC_ENOTFOUND : TC_ENODEV,
                         "%s: %s", python, msg ? msg : "the framework helper failed");
        else if (!type || strcmp(type, "ready") != 0)
            rc = tc_fail(TC_EPARSE, "the framework helper started with '%s'", type ? type : "?");
        else
            snprintf(fw->version, sizeof fw->version, "%s",
                     tc_json_string(tc_json_get(root, "framework_version"))
                         ? tc_json_string(tc_json_get(root, "framework_version"))
                         : "");
        s_consume(fw, n);
    }
    tc_json_destroy(&doc);
    if (rc < 0) {
        tc_fw_close(&fw);
        return rc;
    }
    *out = fw;
    return 0;
}

void tc_fw_close(tc_fw_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_fw_t *fw = *self_p;
    if (fw->in_w >= 0) {
        if (!fw->dead) {
            const char *quit = "{\"op\": \"quit\"}\n";
            (void)!write(fw->in_w, quit, strlen(quit));
        }
        close(fw->in_w);
    }
    if (fw->pid > 0) {
        /* A helper that does not leave within two seconds is killed. */
        int status;
        for (int i = 0; i < 200 && waitpid(fw->pid, &status, WNOHANG) == 0; i++) {
            if (i == 199) {
                kill(fw->pid, SIGKILL);
                waitpid(fw->pid, &status, 0);
            }
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    if (fw->out_r >= 0)
        close(fw->out_r);
    unlink(fw->err_path);
    free(fw->buf);
    free(fw);
    *self_p = NULL;
}

const char *tc_fw_version(const tc_fw_t *self) { return self->version; }

/* The conv as the helper reads it. */
static void s_conv_json(const tc_conv_config_t *c, char *buf, size_t size)
{
    snprintf(buf, size,
             "{\"n\": %u, \"c\": %u, \"h\": %u, \"w\": %u, \"k\": %u, \"r\": %u, \"s\": %u, "
             "\"pad_h\": %u, \"pad_w\": %u, \"stride_h\": %u, \"stride_w\": %u, \"dil_h\": %u, "
             "\"dil_w\": %u, \"groups\": %u, \"bias\": %s, \"dtype\": \"%s\", \"layout\": \"%s\"}",
             c->n, c->c, c->h, c->w, c->k, c->r, c->s, c->pad_h, c->pad_w, c->stride_h,
             c->stride_w, c->dilation_h, c->dilation_w, c->groups, c->bias ? "true" : "false",
             tc_dtype_name(c->dtype), tc_layout_name(c->layout));
}

int tc_fw_select(tc_fw_t *self, const tc_conv_config_t *c, char *backend, size_t size)
{
    char conv[512], req[640];
    s_conv_json(c, conv, sizeof conv);
    snprintf(req, sizeof req, "{\"op\": \"select\", \"conv\": %s}\n", conv);
    tc_json_t *doc = NULL;
    int rc = s_ask(self, req, S_PLAN_MS, "select", &doc);
    if (rc < 0)
        return rc;
    const char *b = tc_json_string(tc_json_get(tc_json_root(doc), "backend"));
    snprintf(backend, size, "%s", b ? b : "");
    tc_json_destroy(&doc);
    return 0;
}

/* Make `p` the helper's current plan. */
static int s_replan(s_plan_t *p)
{
    tc_fw_t *fw = p->fw;
    if (fw->plan_seq == p->seq && p->seq)
        return 0;
    char conv[512], req[768];
    s_conv_json(&p->spec.config, conv, sizeof conv);
    snprintf(req, sizeof req, "{\"op\": \"plan\", \"direction\": \"%s\", \"seed\": %llu, "
                              "\"conv\": %s}\n",
             tc_direction_name(p->spec.direction), (unsigned long long)p->spec.seed, conv);
    tc_json_t *doc = NULL;
    fw->plan_seq = 0;
    int rc = s_ask(fw, req, S_PLAN_MS, "plan", &doc);
    if (rc < 0)
        return rc;
    const char *backend = tc_json_string(tc_json_get(tc_json_root(doc), "backend"));
    if (!p->seq) {
        p->seq = ++fw->next_seq;
        snprintf(p->cand.name, sizeof p->cand.name, "pytorch-native:%s",
                 backend && *backend ? backend : p->route);
    }
    fw->plan_seq = p->seq;
    tc_json_destroy(&doc);
    return 0;
}

/* A plan that goes away frees its tensors in the helper when they are the
 * helper's current ones, so that memory is the agent's again. */
static void s_plan_destroy(void *plan)
{
    s_plan_t *p = plan;
    if (!p)
        return;
    if (p->seq && p->fw->plan_seq == p->seq && !p->fw->dead) {
        tc_json_t *doc = NULL;
        if (s_ask(p->fw, "{\"op\": \"release\"}\n", S_RUN_MS, "release", &doc) == 0)
            tc_json_destroy(&doc);
        p->fw->plan_seq = 0;
    }
    free(p);
}

int tc_fw_plan_create(tc_fw_t *fw, const tc_conv_spec_t *spec, const char *route, void **out)
{
    *out = NULL;
    s_plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return tc_fail(TC_ENOMEM, "out of memory creating a framework conv plan");
    p->fw = fw;
    p->spec = *spec;
    snprintf(p->route, sizeof p->route, "%s", route);
    p->cand.id = 0;
    p->cand.status = TRAINCAST__V1__ALGO_STATUS__ALGO_STATUS_OK;
    int rc = s_replan(p);
    if (rc < 0) {
        free(p);
        return tc_err_context(rc, "PyTorch's own %s conv", route);
    }
    snprintf(p->cand.message, sizeof p->cand.message, "run by PyTorch %s (%s)", fw->version,
             spec->direction == TRAINCAST__V1__DIRECTION__DIRECTION_FWD
                 ? "aten::convolution"
                 : "aten::convolution_backward");
    *out = p;
    return 0;
}

static size_t s_algo_count(void *plan)
{
    (void)plan;
    return 1;
}

static const tc_algo_t *s_algo(void *plan, size_t i)
{
    return i == 0 ? &((s_plan_t *)plan)->cand : NULL;
}

static int s_select(void *plan, size_t i)
{
    if (i != 0)
        return tc_fail(TC_EINVAL, "framework conv plan: candidate %zu cannot be selected", i);
    ((s_plan_t *)plan)->selected = true;
    return 0;
}

static int s_run(void *plan, double *ms)
{
    s_plan_t *p = plan;
    if (!p->selected)
        return tc_fail(TC_EINVAL, "framework conv plan: no candidate selected before run");
    int rc = s_replan(p);
    tc_json_t *doc = NULL;
    if (rc == 0)
        rc = s_ask(p->fw, "{\"op\": \"run\"}\n", S_RUN_MS, "run", &doc);
    if (rc < 0)
        return rc;
    const tc_json_value_t *v = tc_json_get(tc_json_root(doc), "ms");
    double t = tc_json_number(v);
    bool number = tc_json_type(v) == TC_JSON_NUMBER;
    tc_json_destroy(&doc);
    if (!number || !(t > 0))
        return tc_fail(TC_EPARSE, "the framework helper timed a run at %g ms", t);
    *ms = t;
    return 0;
}

static int s_b64(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Base64 into out[size]; returns the bytes written or -1. */
static long s_unbase64(const char *in, size_t len, unsigned char *out, size_t size)
{
    size_t n = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len && in[i] != '='; i++) {
        int v = s_b64((unsigned char)in[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n == size)
                return -1;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)n;
}

static int s_read(void *plan, tc_tensor_t t, float *out, size_t count)
{
    s_plan_t *p = plan;
    int rc = s_replan(p);
    if (rc < 0)
        return rc;
    static const char *const names[TC_TENSOR_COUNT] = {"x", "w", "b", "y", "dy", "dx", "dw", "db"};
    if ((unsigned)t >= TC_TENSOR_COUNT)
        return tc_fail(TC_EINVAL, "no tensor %d", (int)t);
    char req[64];
    snprintf(req, sizeof req, "{\"op\": \"read\", \"tensor\": \"%s\"}\n", names[t]);
    tc_json_t *doc = NULL;
    rc = s_ask(p->fw, req, S_RUN_MS, "read", &doc);
    if (rc < 0)
        return rc == TC_ELIB ? tc_fail(TC_ENOTFOUND, "this %s plan has no tensor %s",
                                       tc_direction_name(p->spec.direction), tc_tensor_name(t))
                             : rc;
    const tc_json_value_t *root = tc_json_root(doc);
    int64_t n = 0;
    const tc_json_value_t *data = tc_json_get(root, "f32");
    if (!tc_json_int(tc_json_get(root, "count"), &n) || !tc_json_string(data)) {
        tc_json_destroy(&doc);
        return tc_fail(TC_EPARSE, "the framework helper's tensor has no count or data");
    }
    if ((size_t)n != count) {
        tc_json_destroy(&doc);
        return tc_fail(TC_EINVAL, "reading tensor %s: it has %lld values, not %zu",
                       tc_tensor_name(t), (long long)n, count);
    }
    long got = s_unbase64(tc_json_string(data), tc_json_string_len(data), (unsigned char *)out,
                          count * sizeof *out);
    tc_json_destroy(&doc);
    if (got != (long)(count * sizeof *out))
        return tc_fail(TC_EPARSE, "the framework helper's tensor %s is %ld bytes, not %zu",
                       tc_tensor_name(t), got, count * sizeof *out);
    /* The helper sends little-endian float32, as this machine stores it. */
    return 0;
}

static const char *s_route(void *plan) { return ((s_plan_t *)plan)->route; }

const tc_backend_iface_t tc_fw_plan_iface = {
    .kind = "framework",
    .library = "pytorch",
    .algo_count = s_algo_count,
    .algo = s_algo,
    .select = s_select,
    .run = s_run,
    .read = s_read,
    .plan_destroy = s_plan_destroy,
    .plan_route = s_route,
};
