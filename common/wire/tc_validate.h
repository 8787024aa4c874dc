/* Validation of messages before anything is stored or run.
 *
 * Every field of every message an agent sends is checked against the range
 * documented in docs/transport.md ("Field ranges"); the limits are the
 * constants below. Each function returns 0, or TC_EINVAL (TC_EVERSION for a
 * protocol version this build does not speak) with a message that names the
 * offending field by its path, e.g. "conv_results.results[3].median_ms: must
 * be a finite number in (0, 1e+09] (got nan)". A message that fails
 * validation can never be stored and is refused for good.
 *
 * Strings must be valid UTF-8 (no overlong forms, surrogates or code points
 * past U+10FFFF). Names (ids, versions, algorithm names, ...) may not contain
 * control characters; texts (reasons, messages, a runner's command line)
 * may contain tab, newline and carriage return but no other control
 * character. */
#ifndef TC_VALIDATE_H
#define TC_VALIDATE_H

#include "tc_wire.h"

#include <stdbool.h>
#include <stddef.h>

#define TC_MAX_NAME_LEN 256      /* names, ids, versions (bytes) */
#define TC_MAX_TEXT_LEN 4096     /* reasons, messages (bytes) */
#define TC_MAX_DIM 1048576u      /* any single tensor dimension */
#define TC_MAX_BATCH 65536u      /* a mini-batch: what agent and aggregator accept alike */
#define TC_MAX_KERNEL 1024u      /* r, s, padding */
#define TC_MAX_ITEMS 2000000u    /* any repeated field, repetitions, iterations */
#define TC_MAX_UNITS 1048576u    /* multiprocessors, threads */
#define TC_MAX_MHZ 100000u       /* clocks */
#define TC_MAX_GPU_INDEX 1024u
#define TC_MAX_REPEATS 10000u    /* fresh-process repeats of a trace */
#define TC_MAX_BYTES (1ull << 50)  /* memory, workspace: 1 PiB */
#define TC_MAX_PARAMS (1ull << 48) /* parameters of a model or layer */
#define TC_MAX_ELEMS (1ull << 50)  /* elements read or written by a layer */
#define TC_MAX_SHAPE (1ll << 40)   /* one dimension of a layer's output shape */
#define TC_MAX_FLOPS 1e18          /* FLOPs of a model or layer, per sample */
#define TC_MAX_MS 1e9              /* any time in milliseconds (11.6 days) */
#define TC_MAX_SPREAD 1e6          /* relative spread of a trace */
#define TC_MAX_OFFSET_US 604800000000ll  /* a sample's start after the first: 7 days */
#define TC_MIN_TIME_US 946684800000000ll  /* unix times: 2000-01-01 .. */
#define TC_MAX_TIME_US 4102444800000000ll /* .. 2100-01-01 (or 0: unknown) */
#define TC_MAX_RESULTS_PER_MESSAGE 1024u /* conv and matmul results in one ConvResults message */
#define TC_MAX_COUNT 2147483647u  /* counters stored as SQL integer */
#define TC_MAX_UPTIME_S 3153600000ull /* 100 years */
#define TC_MAX_JOB_ID_LEN 64
#define TC_MAX_WATTS 100000.0     /* board power */
#define TC_MAX_ENERGY_J 1e9       /* energy of one training step, joules */
#define TC_MAX_SETTINGS 256u      /* framework settings recorded with a trace */

/* True if the `len` bytes at `s` are well-formed UTF-8. */
bool tc_utf8_valid(const char *s, size_t len);

int tc_validate_envelope(const tc_envelope_t *env);
/* The envelope's agent_id alone (a name: 1 to 256 bytes, UTF-8, no control
 * characters), for checks before the whole message is. */
int tc_validate_agent_id(const char *agent_id);

int tc_validate_device(const Traincast__V1__Device *d, const char *path);
/* `need_batch`: n must be > 0 (a benchmarked config) or 0 (a model's layer). */
int tc_validate_conv_config(const Traincast__V1__ConvConfig *c, const char *path, int need_batch);
/* The same for a matmul's shape: minibatch > 0 (need_batch) or 0. */
int tc_validate_matmul_config(const Traincast__V1__MatmulConfig *c, const char *path,
                              int need_batch);
int tc_validate_conv_results(const Traincast__V1__ConvResults *r, const char *path);
int tc_validate_model_graph(const Traincast__V1__ModelGraph *g, const char *path);
int tc_validate_train_trace(const Traincast__V1__TrainTrace *t, const char *path);
int tc_validate_hello(const Traincast__V1__Hello *h, const char *path);
int tc_validate_heartbeat(const Traincast__V1__Heartbeat *h, const char *path);
int tc_validate_job_progress(const Traincast__V1__JobProgress *p, const char *path);
/* Jobs the aggregator sends to agents. */
int tc_validate_bench_request(const Traincast__V1__BenchRequest *r, const char *path);
int tc_validate_trace_request(const Traincast__V1__TraceRequest *r, const char *path);

#endif
