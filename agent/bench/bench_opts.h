/* Options shared by `agent bench-conv` and `agent bench`: the device, the
 * framework settings a benchmark mirrors (policy, dtype, layout) and the
 * measurement budget. Each command lists them in its own option table; this
 * turns the parsed strings into values with errors that name the flag. */
#ifndef TC_BENCH_OPTS_H
#define TC_BENCH_OPTS_H

#include "device.h"
#include "measure.h"

typedef struct {
    const char *device;     /* "cpu" default */
    const char *allocator;  /* --allocator (allocator.h); NULL: the default */
    const char *operands;   /* --operands (operands.h); NULL: TRAINCAST_OPERANDS, else warm */
    unsigned long threads;  /* 0: all logical CPUs */
    const char *policy;     /* "heuristic" default */
    const char *dtype;      /* "fp32" default */
    const char *layout;     /* "nchw" default */
    double budget_ms;       /* 0: default */
    unsigned long max_reps; /* 0: default */
    unsigned long workspace_mb; /* 0: backend default */
} tc_bench_flags_t;

typedef struct {
    Traincast__V1__Policy policy;
    Traincast__V1__DType dtype;
    Traincast__V1__Layout layout;
    uint64_t workspace_limit;
    tc_measure_opts_t measure;
} tc_bench_settings_t;

/* Validate and convert. TC_EUSAGE / TC_EINVAL naming the flag. */
int tc_bench_settings(const tc_bench_flags_t *f, tc_bench_settings_t *out);

/* Parse a --direction value: "all" or a comma list of fwd, bwd_data,
 * bwd_filter. out[] gets up to 3 directions in that order. */
int tc_parse_directions(const char *text, Traincast__V1__Direction out[3], size_t *n);

#endif
