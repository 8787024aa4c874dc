/* Helpers for the test suite. */
#ifndef TC_TEST_H
#define TC_TEST_H

#include <stdbool.h>
#include <stddef.h>

/* A connection string to a fresh database named `name` (created if absent)
 * on the test cluster that the pg fixture started. Aborts the test with a
 * message when no cluster is running. The database is dropped when the test
 * process exits, unless TC_TEST_KEEP_DB is set. */
void tc_test_fresh_db(const char *name, char *dsn, size_t size);

/* The fresh database `name` (tc_test_fresh_db, its connection string into
 * dsn), migrated to the newest schema, and a store open on it for the
 * caller to destroy. Fails the test when it cannot. */
typedef struct tc_store tc_store_t;
tc_store_t *tc_test_fresh_store(const char *name, char *dsn, size_t size);

/* Path of a file under the source tree (tests/data/..., deploy/...). */
void tc_test_source_path(const char *rel, char *out, size_t size);

/* Run a shell command, capturing stdout+stderr into `out` (NUL-terminated,
 * truncated to size). Returns the exit status, or -1 if it did not exit. */
int tc_test_run(const char *cmd, char *out, size_t size);

/* A fresh, empty scratch directory /tmp/tc_NAME_PID (what was there before is
 * removed), with SUBDIR created inside when not NULL; its path goes to dir.
 * Fails the test when it cannot be made. */
void tc_test_scratch_dir(const char *name, const char *subdir, char *dir, size_t size);

/* A fresh file path /tmp/tc_NAME_XXXXXX, unique to this call, into path.
 * With data (len bytes) the file holds them; with data NULL the file is not
 * there, for the code under test to create. Fails the test when it cannot
 * be made; the caller unlinks it. */
void tc_test_temp_file(const char *name, const void *data, size_t len, char *path, size_t size);

/* Write text to the file at path, replacing what it held (created if absent).
 * Fails the test when it cannot be written whole. */
void tc_test_write_file(const char *path, const char *text);

/* Remove a directory tree (rm -rf); true when it is gone. */
bool tc_test_remove_tree(const char *path);

#endif
