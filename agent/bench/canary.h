/* The host-phase canary. On a shared host the same kernel can run at half
 * its speed for seconds at a time while nothing else runs on this machine:
 * another tenant's work on the same physical cores or caches, which the
 * load counters (hostload.h) cannot see. A benchmark taken in such a phase
 * passes for quiet and stores a time up to twice the truth.
 *
 * A canary is a short fixed kernel of the device, of the kind its
 * benchmarks run (device.h; on the CPU, small sgemm_ calls on the
 * framework's BLAS on one thread, about half a millisecond; on a device of
 * several threads it watches the core the agent runs on), read before and
 * after each measured block (measure.c). A block around which a reading was over
 * `slow` times the fastest reading of this run was taken in a slow phase:
 * it is measured again once the canary reads fast, as a block taken under
 * load is, and stays marked disturbed if the phase outlasts the retries.
 * A plan's items are checked once more at its end against the fastest
 * reading of the whole run (bench_run.c), so that items measured before
 * the run first saw a fast phase are caught too; a run resuming a plan
 * counts the readings of the results it resumes from (tc_canary_seen).
 *
 * Why this kernel (docs/conv-benchmarks.md, "Slow phases of the host"): on a
 * host with such phases, a 392x384x1152 sgemm_ read 2.0 times its fastest
 * inside them; the canary read 2.0 times its fastest there and 1.08 outside
 * them, and at 1.3 flagged 87 % of the slow products and 1.2 % of the
 * others. Plain FMA loops, a memory stream and a pointer chase read 1.1 to
 * 1.3 times slower in the phases and tell them apart poorly. */
#ifndef TC_CANARY_H
#define TC_CANARY_H

#include "device.h"
#include "hostload.h"

#include <stdbool.h>

typedef struct {
    tc_device_t *dev;
    double slow;        /* a reading over slow x fastest marks a block; 0: no canary */
    double wait_s;      /* how long to wait for a fast reading, each time */
    double fastest_ms;  /* the fastest reading of this run */
    double gave_up_at;  /* when a wait last ran out (monotonic s) */
    unsigned readings;
} tc_canary_t;

/* A canary for measuring on `dev` under guard `q`: off (slow 0) when its
 * canary_slow is 0 (as the settings make it with the guard off,
 * tc_quiet_get) or the device has none.
 * Takes five readings for a first fastest. */
void tc_canary_init(tc_canary_t *c, tc_device_t *dev, const tc_quiet_t *q);

/* Whether the canary is on. */
static inline bool tc_canary_on(const tc_canary_t *c) { return c && c->slow > 0; }

/* One reading in ms (0 when off or it failed; a failure turns it off). */
double tc_canary_read(tc_canary_t *c);

/* A reading an earlier run of the same plan on this device took (a stored
 * result's canary_ms; 0 none): it counts toward the fastest, so that a run
 * resuming a plan judges by the plan's fastest reading, not only by its own. */
void tc_canary_seen(tc_canary_t *c, double ms);

/* A reading's ratio over the fastest so far (0 for no reading). */
double tc_canary_ratio(const tc_canary_t *c, double ms);

/* Whether a reading marks a slow phase. */
bool tc_canary_slow(const tc_canary_t *c, double ms);

/* Wait until a reading is fast again, reading every 50 ms for at most
 * wait_s; true when it is. After a wait ran out, for five times wait_s no
 * call waits again (false at once), as the load guard's waits do; `hold`
 * false waits anyway (the end of a plan). `what` names what waits. */
bool tc_canary_wait(tc_canary_t *c, const char *what, bool hold);

#endif
