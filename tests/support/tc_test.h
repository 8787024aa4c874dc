/* Helpers for the test suite. */
#ifndef TC_TEST_H
#define TC_TEST_H

#include <stddef.h>

/* A connection string to a fresh database named `name` (created if absent)
 * on the test cluster that the pg fixture started. Aborts the test with a
 * message when no cluster is running. */
void tc_test_fresh_db(const char *name, char *dsn, size_t size);

/* Path of a file under the source tree (tests/data/..., deploy/...). */
void tc_test_source_path(const char *rel, char *out, size_t size);

/* Run a shell command, capturing stdout+stderr into `out` (NUL-terminated,
 * truncated to size). Returns the exit status, or -1 if it did not exit. */
int tc_test_run(const char *cmd, char *out, size_t size);

#endif
