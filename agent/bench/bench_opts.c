#include "bench_opts.h"

#include "tc_error.h"
#include "tc_wire.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int tc_bench_settings(const tc_bench_flags_t *f, tc_bench_settings_t *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = tc_policy_parse(f->policy ? f->policy : "heuristic", &out->policy)) < 0)
        return tc_err_context(TC_EUSAGE, "--policy");
    if ((rc = tc_dtype_parse(f->dtype ? f->dtype : "fp32", &out->dtype)) < 0)
        return tc_err_context(TC_EUSAGE, "--dtype");
    if ((rc = tc_layout_parse(f->layout ? f->layout : "nchw", &out->layout)) < 0)
        return tc_err_context(TC_EUSAGE, "--layout");
    out->workspace_limit = (uint64_t)f->workspace_mb << 20;
    out->measure = tc_measure_defaults();
    out->measure.quiet = tc_quiet_get();
    if (f->budget_ms < 0)
        return tc_fail(TC_EUSAGE, "--budget-ms must be > 0 (got %g)", f->budget_ms);
    if (f->budget_ms > 0)
        out->measure.budget_ms = f->budget_ms;
    if (f->max_reps) {
        out->measure.max_reps = (unsigned)f->max_reps;
        if (out->measure.min_reps > out->measure.max_reps)
            out->measure.min_reps = out->measure.max_reps;
    }
    if (f->max_reps > 100000)
        return tc_fail(TC_EUSAGE, "--max-reps must be at most 100000 (got %lu)", f->max_reps);
    if (f->operands && strcmp(f->operands, "warm") != 0 && f->device &&
        strncmp(f->device, "cpu", 3) != 0)
        return tc_fail(TC_EUSAGE, "--operands %s: the setting is the cpu device's; a GPU always "
                                  "rotates its inputs through copies larger than its L2 cache",
                       f->operands);
    if (f->threads > 4096)
        return tc_fail(TC_EUSAGE, "--threads %lu is implausible", f->threads);
    rc = tc_measure_opts_check(&out->measure);
    return rc < 0 ? tc_err_context(TC_EUSAGE, "measurement options") : 0;
}

int tc_parse_directions(const char *text, Traincast__V1__Direction out[3], size_t *n)
{
    *n = 0;
    if (!text || !strcmp(text, "all")) {
        out[0] = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
        out[1] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA;
        out[2] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER;
        *n = 3;
        return 0;
    }
    bool seen[4] = {false};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        Traincast__V1__Direction d;
        if (tc_direction_parse(tok, &d) < 0)
            return tc_fail(TC_EUSAGE, "--direction: '%s' is not all, fwd, bwd_data or bwd_filter",
                           tok);
        seen[d] = true;
    }
    for (int d = 1; d <= 3; d++)
        if (seen[d])
            out[(*n)++] = (Traincast__V1__Direction)d;
    if (*n == 0)
        return tc_fail(TC_EUSAGE, "--direction: empty");
    return 0;
}
