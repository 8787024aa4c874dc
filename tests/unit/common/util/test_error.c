/* Error messages (common/util/tc_error.h): context and exit statuses. */
#include "tc_error.h"

#include <criterion/criterion.h>

Test(error, context_and_exit_status, .timeout = 10)
{
    int rc = tc_fail(TC_EPARSE, "bad byte %d", 7);
    rc = tc_err_context(rc, "reading %s", "x.onnx");
    cr_assert_eq(rc, TC_EPARSE);
    cr_assert_str_eq(tc_errmsg(), "reading x.onnx: bad byte 7");
    cr_assert_eq(tc_exit_status(TC_EPARSE), 2);
    cr_assert_eq(tc_exit_status(TC_EDB), 1);
    cr_assert_eq(tc_exit_status(0), 0);
    cr_assert_str_eq(tc_strerror(TC_ETIMEOUT), "timed out");
    tc_err_clear();
    cr_assert_str_eq(tc_errmsg(), "");
}
