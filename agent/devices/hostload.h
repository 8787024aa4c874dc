/* How busy the machine is apart from the agent: what other processes used
 * of it while a measurement ran. A benchmark or a trace taken while someone
 * else's work runs measures the other work too (shared cores, caches,
 * memory bandwidth, a GPU's SMs), so every measurement records the load it
 * was taken under, and the agent waits for, re-measures or marks what was
 * not taken quietly.
 *
 * CPU: /proc/stat's busy time of the whole machine less the CPU time of
 * this process and its descendants (the framework helper, the trace
 * runner: /proc/PID/stat of each), as a share of the machine's capacity
 * (all its CPUs over the interval); the hypervisor's steal time likewise. */
#ifndef TC_HOSTLOAD_H
#define TC_HOSTLOAD_H

#include <stdbool.h>
#include <stdint.h>

/* A reading of the counters at one moment. */
typedef struct {
    bool ok;            /* /proc could be read */
    uint64_t busy;      /* machine jiffies: user, nice, system, irq, softirq */
    uint64_t total;     /* machine jiffies, every state */
    uint64_t steal;     /* machine jiffies stolen by the hypervisor */
    uint64_t tree;      /* this process tree's user + system jiffies */
    double at_s;        /* monotonic seconds */
} tc_load_mark_t;

/* What others used between two marks. */
typedef struct {
    bool known;         /* both marks read, and time passed */
    double others_pct;  /* of the machine's CPU capacity, 0..100 */
    double steal_pct;   /* of it, 0..100 */
    double seconds;
} tc_load_t;

/* Read the counters now (never fails: `ok` false when /proc is missing). */
void tc_load_mark(tc_load_mark_t *m);
/* The load between `a` and `b` (b later). */
void tc_load_between(const tc_load_mark_t *a, const tc_load_mark_t *b, tc_load_t *out);
/* The load from `start` to now, read over at least `min_s` seconds: for a
 * shorter block, from an earlier mark of this process (every mark is kept
 * for a while), so that the kernel's tick counters (1 % of two CPUs over
 * half a second) say something; where no mark goes back far enough (a
 * process's first blocks), it waits until the window is `min_s` long. */
void tc_load_since(const tc_load_mark_t *start, double min_s, tc_load_t *out);
/* The window tc_load_since reads at least. */
#define TC_LOAD_MIN_S 0.5

/* The load of a block of `n` loads, weighted by their durations. */
void tc_load_combine(const tc_load_t *v, unsigned long n, tc_load_t *out);

/* The quiet-machine guard: a measurement taken while others used more than
 * `threshold_pct` of the machine is re-measured, after waiting (at most
 * `wait_s` seconds at a time) for the machine to be quiet. So is a benchmark
 * taken while the device's canary read over `canary_slow` times its fastest
 * (agent/bench/canary.h: a slow phase of the host that no process of this
 * machine causes). */
typedef struct {
    double threshold_pct; /* 0..100; 100 turns the guard off (the settings turn the
                             canary off with it: tc_quiet_get) */
    double wait_s;        /* how long to wait for quiet, each time */
    unsigned retries;     /* re-measurements of a disturbed block */
    double canary_slow;   /* > 1; 0 turns the canary off */
} tc_quiet_t;

/* 10 % of the machine, 60 s, 2 re-measurements, the canary at 1.3 times
 * its fastest. */
tc_quiet_t tc_quiet_defaults(void);

/* The guard this process measures under: the defaults, TRAINCAST_QUIET_PCT,
 * TRAINCAST_QUIET_WAIT_S and TRAINCAST_CANARY_SLOW from the environment
 * where set, a command's
 * --quiet-threshold where given (tc_quiet_set_threshold). */
tc_quiet_t tc_quiet_get(void);
/* Settle the guard at a command's start: --quiet-threshold PCT when `given`
 * (TC_EUSAGE naming `flag` outside 0..100), over the environment's values
 * (TC_EUSAGE naming the variable when bad). */
int tc_quiet_set_threshold(bool given, double pct, const char *flag);

/* TC_EUSAGE naming `flag` when threshold is outside 0..100 or wait < 0
 * (or the canary's ratio is neither 0 nor over 1). */
int tc_quiet_check(const tc_quiet_t *q, const char *flag);

/* Whether a load breaks the guard. */
bool tc_quiet_disturbed(const tc_quiet_t *q, const tc_load_t *l);

/* Wait until others use at most the threshold over a one-second window, or
 * `wait_s` has passed; `what` names what waits (for the log lines). Returns
 * true when the machine was quiet, false when the wait ran out (then
 * *last holds the load of the last window); after a wait ran out, for five
 * times `wait_s` no call waits again (false at once): a machine that stays
 * busy costs one wait, not one per block. Logs when it starts waiting and
 * when it ends. */
bool tc_quiet_wait(const tc_quiet_t *q, const char *what, tc_load_t *last);

/* The same wait at the end of a plan, before measuring again what was
 * disturbed: it waits even while a recent wait ran out. */
bool tc_quiet_wait_again(const tc_quiet_t *q, const char *what, tc_load_t *last);

#endif
