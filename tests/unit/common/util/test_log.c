/* Log rate limits (common/util/tc_log.h). */
#include "tc_log.h"

#include <criterion/criterion.h>

Test(log, ratelimit_caps_lines_per_window, .timeout = 10)
{
    tc_ratelimit_t rl = {.burst = 3, .window_ms = 1000};
    int allowed = 0;
    for (int i = 0; i < 50; i++)
        allowed += tc_ratelimit_allow(&rl, 100 + i);
    cr_expect_eq(allowed, 3);
    cr_expect_eq(tc_ratelimit_flush(&rl, 500), 0, "the window is still open");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1200), 47, "one summary of what was suppressed");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1300), 0, "and only one");
    cr_expect(tc_ratelimit_allow(&rl, 1200), "a new window logs again");
}

/* The cap holds in any window, not per fixed window: a burst at the end of
 * one window and another at the start of the next cannot double it. */
Test(log, ratelimit_window_slides, .timeout = 10)
{
    tc_ratelimit_t rl = {.burst = 4, .window_ms = 1000};
    int allowed = 0;
    for (int i = 0; i < 10; i++)
        allowed += tc_ratelimit_allow(&rl, 990 + i);
    cr_expect_eq(allowed, 4);
    allowed = 0;
    for (int i = 0; i < 10; i++)
        allowed += tc_ratelimit_allow(&rl, 1100 + i);
    cr_expect_eq(allowed, 0, "the window from 990 still holds 4 lines at 1100");
    cr_expect(tc_ratelimit_allow(&rl, 1990), "the first line left the window");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1900), 0, "a window has not passed since 994");
    cr_expect_eq(tc_ratelimit_flush(&rl, 1994), 16);
}
