/* Logging to stderr: one line per event, with time, level and component.
 * The level comes from tc_log_set_level() or the TRAINCAST_LOG environment
 * variable (error, warn, info, debug); the default is info. */
#ifndef TC_LOG_H
#define TC_LOG_H

#include <stdbool.h>

typedef enum { TC_LOG_ERROR = 0, TC_LOG_WARN, TC_LOG_INFO, TC_LOG_DEBUG } tc_log_level_t;

void tc_log_set_level(tc_log_level_t level);
tc_log_level_t tc_log_get_level(void);
/* Parses "error", "warn", "info", "debug"; returns 0 or TC_EINVAL. */
int tc_log_parse_level(const char *text, tc_log_level_t *out);
/* Name shown in each line, e.g. "agent" or "aggregator". Not copied. */
void tc_log_set_component(const char *name);

void tc_log(tc_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define tc_log_error(...) tc_log(TC_LOG_ERROR, __VA_ARGS__)
#define tc_log_warn(...) tc_log(TC_LOG_WARN, __VA_ARGS__)
#define tc_log_info(...) tc_log(TC_LOG_INFO, __VA_ARGS__)
#define tc_log_debug(...) tc_log(TC_LOG_DEBUG, __VA_ARGS__)

/* A cap on how many lines of one kind are logged, so that a flood (a
 * client cycling keys, raw connections, an agent resending a bad message)
 * cannot fill the disk: at most `burst` lines in any `window_ms` (a sliding
 * window), and at most one summary of what was suppressed per window.
 * Zero-initialize, then set `burst` (at most TC_RATELIMIT_MAX) and
 * `window_ms`. Not thread-safe: one per thread. */
#define TC_RATELIMIT_MAX 32
typedef struct {
    unsigned burst;
    long long window_ms;
    long long stamps[TC_RATELIMIT_MAX]; /* when the lines in the window were logged */
    unsigned head, count;
    long long suppressed_since_ms;      /* the first suppression not yet summarized */
    unsigned suppressed;
} tc_ratelimit_t;

/* True when a line may be logged now (it counts against the window);
 * false when it is suppressed (and counted). `now_ms` is any monotonic
 * clock. */
bool tc_ratelimit_allow(tc_ratelimit_t *rl, long long now_ms);
/* Lines suppressed, once a window has passed since the first of them (0
 * before then, or if none); resets the count, so the caller logs one
 * summary. */
unsigned tc_ratelimit_flush(tc_ratelimit_t *rl, long long now_ms);

#endif
