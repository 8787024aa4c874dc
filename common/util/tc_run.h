/* Running a helper program (the PyTorch harness) and reading its output. */
#ifndef TC_RUN_H
#define TC_RUN_H

#include <stdbool.h>
#include <stddef.h>

/* The Python that runs the harness: $TRAINCAST_PYTHON, default
 * /usr/bin/python3. */
const char *tc_python(void);

/* Run argv (no shell; stdin from /dev/null), capturing its stdout (and its
 * stderr too when with_stderr; else stderr stays this process's) into
 * `out`, truncated and NUL-terminated. Returns the exit status, or -1 if it
 * could not run or was killed. */
int tc_run_capture(char *const argv[], bool with_stderr, char *out, size_t size);

#endif
