/* Error codes and the thread's last error message.
 *
 * Functions return 0 on success or a negative TC_E* code. Where a failure is
 * turned into a status, the code records a human-readable message with
 * tc_fail(); callers up the stack may add context with tc_err_context() and
 * the command line prints tc_errmsg() once. Library code never exits. */
#ifndef TC_ERROR_H
#define TC_ERROR_H

#include <stdarg.h>

/* X(name, value, description, exit status) */
#define TC_ERRNO_MAP(X)                                                       \
    X(OK, 0, "success", 0)                                                    \
    X(EINVAL, -1, "invalid input", 2)                                         \
    X(EUSAGE, -2, "bad usage", 2)                                             \
    X(EPARSE, -3, "malformed data", 2)                                        \
    X(ENOMEM, -4, "out of memory", 1)                                         \
    X(EIO, -5, "input/output error", 1)                                       \
    X(EDB, -6, "database error", 1)                                           \
    X(ENET, -7, "network error", 1)                                           \
    X(ELIB, -8, "library call failed", 1)                                     \
    X(ENODEV, -9, "device not available", 1)                                  \
    X(EUNSUPPORTED, -10, "not supported", 1)                                  \
    X(ENOTFOUND, -11, "not found", 2)                                         \
    X(ETIMEOUT, -12, "timed out", 1)                                          \
    X(EVERSION, -13, "version mismatch", 1)                                   \
    X(ELIMIT, -14, "limit exceeded", 2)                                       \
    X(ECHILD, -15, "child process failed", 1)                                 \
    X(EINTR, -16, "interrupted", 1)

typedef enum {
#define TC_ERR_ENUM(name, value, desc, exit_status) TC_##name = (value),
    TC_ERRNO_MAP(TC_ERR_ENUM)
#undef TC_ERR_ENUM
} tc_errno_t;

/* Short description of a code ("database error"). Never NULL. */
const char *tc_strerror(int code);

/* Process exit status for a code: 0 ok, 2 bad usage or bad input, 1 other. */
int tc_exit_status(int code);

/* Record a message for `code` and return `code`. */
int tc_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tc_vfail(int code, const char *fmt, va_list ap);

/* As tc_fail, with the source location appended in debug output. Used by the
 * library check macros so each failure names the call and file:line. */
int tc_fail_at(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefix the current message with context ("reading x.onnx: ..."). Returns
 * `code` so it can wrap a return statement. */
int tc_err_context(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last message recorded on this thread ("" if none). */
const char *tc_errmsg(void);

/* Where the last message was recorded ("" if not recorded with tc_fail_at). */
const char *tc_errwhere(void);

void tc_err_clear(void);

/* Propagate a negative status from `expr` to the label `err` in `rc`. */
#define TC_TRY(expr)                                                          \
    do {                                                                      \
        rc = (expr);                                                          \
        if (rc < 0)                                                           \
            goto err;                                                         \
    } while (0)

/* Fail with a message at this location and jump to `err`. */
#define TC_FAIL_GOTO(code, ...)                                               \
    do {                                                                      \
        rc = tc_fail_at((code), __FILE__, __LINE__, __VA_ARGS__);             \
        goto err;                                                             \
    } while (0)

#endif
