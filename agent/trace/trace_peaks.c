/* The largest peak memory per batch of a device's traces in result files. */
#include "trace_peaks.h"

#include "tc_error.h"
#include "tc_resultfile.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *uuid;
    tc_trace_peak_t *v;
    size_t n, cap;
    int failed;
} s_peaks_t;

static int s_peak(const tc_envelope_t *env, void *arg)
{
    s_peaks_t *p = arg;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_TRAIN_TRACE)
        return 0;
    const Traincast__V1__TrainTrace *t = env->train_trace;
    if (t->status != TRAINCAST__V1__TRACE_STATUS__TRACE_STATUS_OK || !t->peak_memory_bytes ||
        !t->device || strcmp(t->device->uuid, p->uuid) != 0)
        return 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->v[i].batch == t->batch) {
            if (t->peak_memory_bytes > p->v[i].peak_bytes)
                p->v[i].peak_bytes = t->peak_memory_bytes;
            return 0;
        }
    }
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        tc_trace_peak_t *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return tc_fail(TC_ENOMEM, "out of memory reading trace peaks");
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = (tc_trace_peak_t){t->batch, t->peak_memory_bytes};
    return 0;
}

int tc_trace_peaks_load(const char *paths, const char *device_uuid, tc_trace_peak_t **peaks,
                        size_t *n)
{
    *peaks = NULL;
    *n = 0;
    s_peaks_t p = {.uuid = device_uuid};
    char *copy = strdup(paths);
    if (!copy)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = 0;
    char *save = NULL;
    for (char *path = strtok_r(copy, ",", &save); path && rc == 0;
         path = strtok_r(NULL, ",", &save)) {
        rc = tc_resultfile_read(path, false, s_peak, &p, NULL);
        if (rc < 0)
            rc = tc_err_context(rc, "--traces %s", path);
    }
    free(copy);
    if (rc < 0) {
        free(p.v);
        return rc;
    }
    *peaks = p.v;
    *n = p.n;
    return 0;
}
