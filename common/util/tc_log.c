#include "tc_log.h"

#include "tc_error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int s_level = -1;
static const char *s_component = "traincast";
static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *s_names[] = {"error", "warn", "info", "debug"};

int tc_log_parse_level(const char *text, tc_log_level_t *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(text, s_names[i]) == 0) {
            *out = (tc_log_level_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "unknown log level '%s' (use error, warn, info or debug)", text);
}

tc_log_level_t tc_log_get_level(void)
{
    if (s_level < 0) {
        tc_log_level_t level = TC_LOG_INFO;
        const char *env = getenv("TRAINCAST_LOG");
        if (env && *env)
            tc_log_parse_level(env, &level);
        s_level = (int)level;
    }
    return (tc_log_level_t)s_level;
}

void tc_log_set_level(tc_log_level_t level)
{
    s_level = (int)level;
}

void tc_log_set_component(const char *name)
{
    s_component = name;
}

void tc_log(tc_log_level_t level, const char *fmt, ...)
{
    if ((int)level > (int)tc_log_get_level())
        return;
    char stamp[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&s_lock);
    fprintf(stderr, "%s.%03ld %s %s: ", stamp, ts.tv_nsec / 1000000, s_component,
            s_names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&s_lock);
    va_end(ap);
}

bool tc_ratelimit_allow(tc_ratelimit_t *rl, long long now_ms)
{
    unsigned burst = rl->burst < TC_RATELIMIT_MAX ? rl->burst : TC_RATELIMIT_MAX;
    /* Forget the lines that left the window (oldest first). */
    while (rl->count && now_ms - rl->stamps[rl->head] >= rl->window_ms) {
        rl->head = (rl->head + 1) % TC_RATELIMIT_MAX;
        rl->count--;
    }
    if (rl->count < burst) {
        rl->stamps[(rl->head + rl->count) % TC_RATELIMIT_MAX] = now_ms;
        rl->count++;
        return true;
    }
    if (rl->suppressed++ == 0)
        rl->suppressed_since_ms = now_ms;
    return false;
}

unsigned tc_ratelimit_flush(tc_ratelimit_t *rl, long long now_ms)
{
    if (!rl->suppressed || now_ms - rl->suppressed_since_ms < rl->window_ms)
        return 0;
    unsigned n = rl->suppressed;
    rl->suppressed = 0;
    return n;
}
