/* The trace line protocol, agent side (docs/trace-protocol.md).
 *
 * A runner writes one JSON object per line on stdout: a header, one "iter"
 * line per iteration, and a footer; or an "oom" or "error" line when it
 * cannot finish. The parser takes the raw bytes as they arrive, splits them
 * into lines of bounded length, and checks every line against the request:
 * the first malformed, truncated, out-of-order or non-finite line fails the
 * whole run (tc_trace_proto_error names the line number and text), and
 * nothing of a failed run is meant to be used. */
#ifndef TC_TRACE_PROTO_H
#define TC_TRACE_PROTO_H

#include "tc_features.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_TRACE_PROTOCOL_VERSION 1
/* Longest protocol line accepted, newline excluded. */
#define TC_TRACE_MAX_LINE 65536u
/* Most iterations one run may announce (warm-up + measured). */
#define TC_TRACE_MAX_ITERS 100000u
/* Most settings a header may report, and their longest name and value. */
#define TC_TRACE_MAX_SETTINGS 64u
#define TC_TRACE_SETTING_NAME 96u
#define TC_TRACE_SETTING_VALUE 160u

/* A framework flag or environment variable that changes what a conv
 * computes, as the runner reported it. */
typedef struct {
    char name[TC_TRACE_SETTING_NAME];
    char value[TC_TRACE_SETTING_VALUE];
} tc_trace_setting_t;

/* What the runner was asked to do; the header must echo it. */
typedef struct {
    const char *model;     /* name passed with --model */
    uint32_t batch;
    uint32_t input_size;
    const char *device;    /* "cpu" or "cuda:I" */
    uint32_t threads;      /* cpu threads; 0: not checked */
    const char *dtype;     /* "fp32", ... */
    const char *amp;       /* "" or "fp16"/"bf16" */
    const char *optimizer; /* e.g. "sgd" */
    bool cudnn_benchmark;
    uint32_t warmup;
    uint32_t iters;
    /* What the device measures with (tc_device_env_t), NULL: not checked.
     * A runner that reports another allocator, BLAS or framework version
     * trained on another device. */
    const char *allocator;
    const char *blas;
    const char *framework_version;
} tc_trace_request_t;

typedef struct {
    uint32_t index;  /* 0 .. warmup+iters-1 */
    bool warmup;
    double ms;
    int64_t at_us;   /* unix time the iteration ended */
    double canary_ms; /* the runner's canary around it, the slower reading (0: none;
                         trace_run.h) */
} tc_trace_iter_t;

/* What one run reported. Strings are empty when the runner left them out. */
typedef struct {
    bool have_header;
    char framework[64];
    char framework_version[64];
    char library[32];
    char library_version[64];
    char driver_version[64];
    char runtime_version[64];
    char device_name[256];
    char device_uuid[128];
    uint32_t threads;
    tc_trace_setting_t settings[TC_TRACE_MAX_SETTINGS]; /* sorted by name */
    size_t n_settings;
    tc_trace_iter_t *iters; /* owned by the parser */
    size_t n_iters;
    bool have_footer;
    uint64_t peak_memory_bytes;
    uint32_t sm_clock_mhz;  /* median SM clock over the measured iterations; 0 unknown */
    double power_w;         /* median board power over them; 0 unknown */
    double energy_j;        /* energy per measured step; < 0 not measured */
    char energy_source[16]; /* "nvml" (GPU board) or "rapl" (CPU packages); "" none */
    char energy_absent[256];/* why there is no energy ("" when there is) */
    bool have_op_times;
    bool op_present[TC_OPC_COUNT];
    double op_ms[TC_OPC_COUNT];
    bool oom;               /* an "oom" line came */
    bool error;             /* an "error" line came */
    char message[1024];     /* of the oom or error line */
    unsigned lines;         /* complete lines seen */
} tc_trace_output_t;

typedef struct tc_trace_proto tc_trace_proto_t;

/* `req` is copied (its strings must outlive the parser). NULL when out of
 * memory. */
tc_trace_proto_t *tc_trace_proto_new(const tc_trace_request_t *req);
void tc_trace_proto_destroy(tc_trace_proto_t **self_p);

/* Feed bytes of the runner's stdout as they come. Returns 0, or TC_EPARSE
 * once a line is bad; after that every call returns the same failure. */
int tc_trace_proto_feed(tc_trace_proto_t *self, const char *data, size_t n);
/* The output ended (stdout closed). Fails when the last line has no newline
 * or the run stopped before its footer without an oom or error line. */
int tc_trace_proto_finish(tc_trace_proto_t *self);

/* The first failure ("line 7: ...: <text>"), or "" while all is well. */
const char *tc_trace_proto_error(const tc_trace_proto_t *self);
const tc_trace_output_t *tc_trace_proto_output(const tc_trace_proto_t *self);

#endif
