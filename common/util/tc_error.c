#include "tc_error.h"

#include <stdio.h>
#include <string.h>

#define TC_ERRMSG_MAX 2048

static _Thread_local char s_msg[TC_ERRMSG_MAX];
static _Thread_local char s_where[256];

const char *tc_strerror(int code)
{
    switch (code) {
#define TC_ERR_STR(name, value, desc, exit_status)                            \
    case (value):                                                             \
        return desc;
        TC_ERRNO_MAP(TC_ERR_STR)
#undef TC_ERR_STR
    }
    return "unknown error";
}

int tc_exit_status(int code)
{
    switch (code) {
#define TC_ERR_EXIT(name, value, desc, exit_status)                           \
    case (value):                                                             \
        return exit_status;
        TC_ERRNO_MAP(TC_ERR_EXIT)
#undef TC_ERR_EXIT
    }
    return 1;
}

int tc_vfail(int code, const char *fmt, va_list ap)
{
    vsnprintf(s_msg, sizeof s_msg, fmt, ap);
    s_where[0] = '\0';
    return code;
}

int tc_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tc_vfail(code, fmt, ap);
    va_end(ap);
    return code;
}

int tc_fail_at(int code, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tc_vfail(code, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    snprintf(s_where, sizeof s_where, "%s:%d", base ? base + 1 : file, line);
    return code;
}

int tc_err_context(int code, const char *fmt, ...)
{
    char prefix[512];
    char old[TC_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, s_msg, sizeof old);
    if (old[0])
        snprintf(s_msg, sizeof s_msg, "%s: %s", prefix, old);
    else
        snprintf(s_msg, sizeof s_msg, "%s: %s", prefix, tc_strerror(code));
    return code;
}

const char *tc_errmsg(void)
{
    return s_msg;
}

const char *tc_errwhere(void)
{
    return s_where;
}

void tc_err_clear(void)
{
    s_msg[0] = '\0';
    s_where[0] = '\0';
}
