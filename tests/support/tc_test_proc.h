/* Child processes for tests that run the real binaries: start with output
 * to a log file, wait with a deadline, kill. A test never waits unbounded. */
#ifndef TC_TEST_PROC_H
#define TC_TEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Start argv[0] (a path) with stdout and stderr appended to `log` (NULL:
 * /dev/null; it is killed if the test process dies) and, when env_kv is not NULL, extra "KEY=VALUE" entries
 * (NULL-terminated) added to the environment. Returns the pid. */
pid_t tc_test_spawn(const char *const *argv, const char *log, const char *const *env_kv);

/* Wait up to timeout_ms for `pid` to exit. Returns its exit status, 128 +
 * signal when killed by one, or -1 on timeout (the process is then killed
 * with SIGKILL and reaped). */
int tc_test_wait(pid_t pid, int timeout_ms);

/* Send `sig` and reap (SIGKILL after 10 s if it did not exit). Returns the
 * status as tc_test_wait. */
int tc_test_stop(pid_t pid, int sig);

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int tc_test_free_port(void);

/* Path of a built binary: "agent" -> <build>/agent/agent. */
void tc_test_binary(const char *name, char *out, size_t size);

/* A fresh, empty directory under the build tree for this test process. */
void tc_test_tmpdir(const char *name, char *out, size_t size);

/* Number of entries in `dir` whose name ends with `suffix` (hidden ones
 * included); -1 if it cannot be read. */
int tc_test_dir_count_suffix(const char *dir, const char *suffix);

/* True if the file contains `needle`. */
bool tc_test_file_contains(const char *path, const char *needle);

/* Run `sql` on `dsn` and return the first column of the first row as a
 * number (-1 on failure, with the error logged to stderr). */
long long tc_test_sql_count(const char *dsn, const char *sql);

/* Run `sql` on `dsn`; a failure fails the test. */
void tc_test_sql(const char *dsn, const char *sql);

/* Sleep for ms milliseconds. */
void tc_test_sleep_ms(int ms);

#endif
