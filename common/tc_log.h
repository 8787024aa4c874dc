/* Logging to stderr: one line per event, with time, level and component.
 * The level comes from tc_log_set_level() or the TRAINCAST_LOG environment
 * variable (error, warn, info, debug); the default is info. */
#ifndef TC_LOG_H
#define TC_LOG_H

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

#endif
