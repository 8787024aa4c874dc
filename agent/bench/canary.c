#include "canary.h"

#include "tc_error.h"
#include "tc_log.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* After a wait ran out, for this many times the wait no call waits again. */
#define S_HOLD 5.0
/* Readings at the start, for a first fastest. */
#define S_FIRST_READINGS 5
/* Between readings while waiting. */
#define S_POLL_US 50000

void tc_canary_init(tc_canary_t *c, tc_device_t *dev, const tc_quiet_t *q)
{
    memset(c, 0, sizeof *c);
    c->dev = dev;
    c->wait_s = q->wait_s;
    c->gave_up_at = -1e9;
    if (!(q->canary_slow > 1) || !dev->iface->canary)
        return;
    c->slow = q->canary_slow;
    for (int i = 0; i < S_FIRST_READINGS && c->slow > 0; i++)
        (void)tc_canary_read(c);
}

double tc_canary_read(tc_canary_t *c)
{
    if (!tc_canary_on(c))
        return 0;
    double ms = 0;
    if (tc_device_canary(c->dev, &ms) < 0 || !(ms > 0)) {
        tc_log_warn("the canary cannot run (%s): slow phases of the host go unseen",
                    tc_errmsg());
        tc_err_clear();
        c->slow = 0;
        return 0;
    }
    if (!c->readings++ || ms < c->fastest_ms)
        c->fastest_ms = ms;
    return ms;
}

void tc_canary_seen(tc_canary_t *c, double ms)
{
    if (tc_canary_on(c) && ms > 0 && ms < c->fastest_ms)
        c->fastest_ms = ms;
}

double tc_canary_ratio(const tc_canary_t *c, double ms)
{
    return c && c->fastest_ms > 0 && ms > 0 ? ms / c->fastest_ms : 0;
}

bool tc_canary_slow(const tc_canary_t *c, double ms)
{
    return tc_canary_on(c) && tc_canary_ratio(c, ms) > c->slow;
}

bool tc_canary_wait(tc_canary_t *c, const char *what, bool hold)
{
    if (!tc_canary_on(c))
        return true;
    double start = s_now();
    if (hold && start - c->gave_up_at < S_HOLD * c->wait_s)
        return false;
    double ms = tc_canary_read(c);
    bool said = false;
    while (tc_canary_slow(c, ms)) {
        if (!said) {
            tc_log_info("%s: the canary reads %.2f times its fastest (over %.2f): the host is in "
                        "a slow phase; waiting up to %.0f s for it to pass",
                        what, tc_canary_ratio(c, ms), c->slow, c->wait_s);
            said = true;
        }
        if (s_now() - start >= c->wait_s) {
            c->gave_up_at = s_now();
            tc_log_warn("%s: the host is still slow after %.0f s (the canary at %.2f times its "
                        "fastest): measuring on without waiting for the next %.0f s; what is "
                        "measured in the phase is marked disturbed",
                        what, s_now() - start, tc_canary_ratio(c, ms), S_HOLD * c->wait_s);
            return false;
        }
        usleep(S_POLL_US);
        ms = tc_canary_read(c);
    }
    if (said)
        tc_log_info("%s: the canary reads fast again after %.1f s", what, s_now() - start);
    return true;
}
