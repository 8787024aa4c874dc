#include "tc_zmq.h"

#include "tc_error.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

int tc_zmq_fail(const char *call, const char *file, int line)
{
    int e = zmq_errno();
    return tc_fail_at(TC_ENET, file, line, "ZeroMQ call %s failed: %s", call, zmq_strerror(e));
}

int tc_curve_check(void)
{
    if (!zmq_has("curve"))
        return tc_fail(TC_EUNSUPPORTED,
                       "this libzmq was built without CURVE security; install a libzmq built "
                       "with libsodium (Debian's libzmq5 is), or run with --insecure on a "
                       "trusted local network only");
    return 0;
}

bool tc_key_z85_valid(const char *s)
{
    static const char z85[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                              ".-:+=^!/*?&<>()[]{}@%$#";
    if (!s || strlen(s) != TC_KEY_Z85_LEN)
        return false;
    for (const char *p = s; *p; p++) {
        if (!strchr(z85, *p))
            return false;
    }
    /* z85 decoding checks the value range too. */
    uint8_t raw[32];
    return zmq_z85_decode(raw, s) != NULL;
}

int tc_keypair_generate(tc_keypair_t *out)
{
    int rc = tc_curve_check();
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof *out);
    return TC_ZMQ(zmq_curve_keypair(out->public_z85, out->secret_z85));
}

static int s_write_file(const char *path, const char *text, mode_t mode, bool force)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    if (!force && access(path, F_OK) == 0)
        return tc_fail(TC_EINVAL, "%s exists already; pass --force to replace the key pair "
                                  "(peers that trust the old key must then be updated)",
                       path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return tc_fail(TC_EIO, "cannot create %s: %s", tmp, strerror(errno));
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    int ok = w == (ssize_t)len && fchmod(fd, mode) == 0 && fsync(fd) == 0;
    int saved = errno;
    close(fd);
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        return tc_fail(TC_EIO, "cannot write %s: %s", path, strerror(saved));
    }
    return 0;
}

/* mkdir -p, mode 0700 for what it creates. */
static int s_mkdirs(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return tc_fail(TC_EIO, "cannot create directory %s: %s", buf, strerror(errno));
        *p = c;
        if (!c)
            break;
    }
    return 0;
}

int tc_keypair_write(const char *dir, const char *name, const char *label,
                     const tc_keypair_t *kp, bool force)
{
    int rc = s_mkdirs(dir);
    if (rc < 0)
        return rc;
    char sec_path[4096], pub_path[4096], text[512];
    snprintf(sec_path, sizeof sec_path, "%s/%s.key", dir, name);
    snprintf(pub_path, sizeof pub_path, "%s/%s.pub", dir, name);
    snprintf(text, sizeof text,
             "# traincast CURVE secret key (%s); keep it private\n%s\n", label, kp->secret_z85);
    rc = s_write_file(sec_path, text, 0600, force);
    if (rc < 0)
        return rc;
    snprintf(text, sizeof text, "%s %s\n", kp->public_z85, label);
    return s_write_file(pub_path, text, 0644, true);
}

/* First whitespace-separated token of the first line that is not blank or
 * a comment. */
static int s_first_token(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO, "cannot open key file %s: %s",
                       path, strerror(errno));
    char line[1024];
    int rc = tc_fail(TC_EINVAL, "key file %s holds no key", path);
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        size_t n = strcspn(p, " \t\r\n");
        if (!*p)
            continue;
        /* '#' is a z85 character, but never the first one of a 32-byte key
         * (its value would overflow the first 4-byte group). */
        if (*p == '#')
            continue;
        if (n >= size) {
            rc = tc_fail(TC_EINVAL, "key file %s: the key is not %d z85 characters", path,
                         TC_KEY_Z85_LEN);
            break;
        }
        memcpy(out, p, n);
        out[n] = '\0';
        rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

int tc_keypair_read(const char *path, tc_keypair_t *out)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st) != 0)
        return tc_fail(errno == ENOENT ? TC_ENOTFOUND : TC_EIO,
                       "cannot read secret key %s: %s (create one with the keygen command)",
                       path, strerror(errno));
    if (st.st_mode & 077)
        return tc_fail(TC_EINVAL,
                       "secret key %s is readable by other users (mode %04o); run: chmod 600 %s",
                       path, (unsigned)(st.st_mode & 07777), path);
    char tok[TC_KEY_Z85_LEN + 2];
    int rc = s_first_token(path, tok, sizeof tok);
    if (rc < 0)
        return rc;
    if (!tc_key_z85_valid(tok))
        return tc_fail(TC_EINVAL, "secret key %s is not a 40-character z85 key", path);
    memcpy(out->secret_z85, tok, TC_KEY_Z85_LEN + 1);
    rc = tc_curve_check();
    if (rc == 0)
        rc = TC_ZMQ(zmq_curve_public(out->public_z85, out->secret_z85));
    return rc;
}

int tc_pubkey_read(const char *path, char out[TC_KEY_Z85_LEN + 1])
{
    char tok[TC_KEY_Z85_LEN + 2];
    int rc = s_first_token(path, tok, sizeof tok);
    if (rc < 0)
        return rc;
    if (!tc_key_z85_valid(tok))
        return tc_fail(TC_EINVAL, "public key file %s does not start with a 40-character z85 key",
                       path);
    memcpy(out, tok, TC_KEY_Z85_LEN + 1);
    return 0;
}

int tc_zmq_socket_setup(void *sock, size_t max_bytes, int linger_ms)
{
    if (!max_bytes)
        max_bytes = TC_MAX_MESSAGE_BYTES;
    int64_t maxmsg = (int64_t)max_bytes;
    int hwm = 10000;
    int rc = TC_ZMQ(zmq_setsockopt(sock, ZMQ_LINGER, &linger_ms, sizeof linger_ms));
    if (rc == 0)
        rc = TC_ZMQ(zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg));
    if (rc == 0)
        rc = TC_ZMQ(zmq_setsockopt(sock, ZMQ_SNDHWM, &hwm, sizeof hwm));
    if (rc == 0)
        rc = TC_ZMQ(zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm));
    return rc;
}

int tc_zmq_send_envelope(void *sock, const void *route, size_t route_len,
                         const tc_envelope_t *env, int flags)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = tc_envelope_pack(env, &buf, &len);
    if (rc < 0)
        return rc;
    if (route && zmq_send(sock, route, route_len, flags | ZMQ_SNDMORE) < 0)
        rc = tc_zmq_fail("zmq_send (routing id)", __FILE__, __LINE__);
    if (rc == 0 && zmq_send(sock, buf, len, flags) < 0)
        rc = tc_zmq_fail("zmq_send (envelope)", __FILE__, __LINE__);
    free(buf);
    return rc;
}

int tc_zmq_monitor_read(void *mon, uint16_t *event, uint32_t *value, char *addr,
                        size_t addr_size)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, mon, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        if (zmq_errno() == EAGAIN || zmq_errno() == EINTR)
            return 0;
        return tc_zmq_fail("zmq_msg_recv (monitor)", __FILE__, __LINE__);
    }
    const uint8_t *d = zmq_msg_data(&m);
    if (zmq_msg_size(&m) >= 6) {
        memcpy(event, d, 2);
        memcpy(value, d + 2, 4);
    } else {
        *event = 0;
        *value = 0;
    }
    int more = zmq_msg_more(&m);
    zmq_msg_close(&m);
    if (addr && addr_size)
        addr[0] = '\0';
    if (more) {
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, mon, 0) >= 0 && addr && addr_size) {
            size_t n = zmq_msg_size(&m) < addr_size - 1 ? zmq_msg_size(&m) : addr_size - 1;
            memcpy(addr, zmq_msg_data(&m), n);
            addr[n] = '\0';
        }
        zmq_msg_close(&m);
    }
    return 1;
}

const char *tc_zmq_event_name(uint16_t event)
{
    switch (event) {
    case ZMQ_EVENT_CONNECTED: return "connected";
    case ZMQ_EVENT_CONNECT_DELAYED: return "connect delayed";
    case ZMQ_EVENT_CONNECT_RETRIED: return "connect retried";
    case ZMQ_EVENT_LISTENING: return "listening";
    case ZMQ_EVENT_BIND_FAILED: return "bind failed";
    case ZMQ_EVENT_ACCEPTED: return "accepted";
    case ZMQ_EVENT_ACCEPT_FAILED: return "accept failed";
    case ZMQ_EVENT_CLOSED: return "closed";
    case ZMQ_EVENT_CLOSE_FAILED: return "close failed";
    case ZMQ_EVENT_DISCONNECTED: return "disconnected";
    case ZMQ_EVENT_MONITOR_STOPPED: return "monitor stopped";
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: return "handshake failed";
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: return "handshake succeeded";
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: return "handshake failed (protocol)";
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: return "handshake failed (authentication)";
    default: return "event";
    }
}
