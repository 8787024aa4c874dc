/* Conv benchmarks read in binary (TC_SQL_CONV_REPEATS under a group number)
 * and grouped per measurement for tc_fit_conv_time. */
#include "store_internal.h"

#include "tc_error.h"

#include <endian.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns of every such result. */
enum { S_GRP, S_BATCH, S_MEDIAN, S_STDDEV, S_MEASURED, S_ID, S_DISTURBED, S_COLS };

static int64_t s_int8(const PGresult *res, int row, int col)
{
    uint64_t v;
    memcpy(&v, PQgetvalue(res, row, col), sizeof v);
    return (int64_t)be64toh(v);
}

int32_t tc_store_bin_int4(const PGresult *res, int row, int col)
{
    uint32_t v;
    memcpy(&v, PQgetvalue(res, row, col), sizeof v);
    return (int32_t)be32toh(v);
}

static double s_float8(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col))
        return NAN;
    uint64_t bits = (uint64_t)s_int8(res, row, col);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

typedef struct {
    int32_t grp, batch;
    int row;
    bool none; /* no benchmark: an outer join's empty side */
    bool disturbed;
    tc_fit_repeat_t r;
} s_row_t;

static int s_row_cmp(const void *pa, const void *pb)
{
    const s_row_t *a = pa, *b = pb;
    if (a->grp != b->grp)
        return a->grp < b->grp ? -1 : 1;
    if (a->batch != b->batch)
        return a->batch < b->batch ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

int tc_store_conv_repeats(const PGresult *res, tc_store_repeats_fn each, void *ctx)
{
    int n = PQntuples(res);
    if (n == 0)
        return 0;
    if (PQnfields(res) < S_COLS || PQfformat(res, 0) != 1)
        return tc_fail(TC_EINVAL, "conv benchmarks: expected %d columns in binary format",
                       S_COLS);
    s_row_t *rows = calloc((size_t)n, sizeof *rows);
    tc_fit_repeat_t *run = calloc((size_t)n, sizeof *run);
    if (!rows || !run) {
        free(rows);
        free(run);
        return tc_fail(TC_ENOMEM, "out of memory for %d conv benchmarks", n);
    }
    for (int i = 0; i < n; i++) {
        s_row_t *w = &rows[i];
        w->grp = tc_store_bin_int4(res, i, S_GRP);
        w->batch = tc_store_bin_int4(res, i, S_BATCH);
        w->row = i;
        w->none = PQgetisnull(res, i, S_ID);
        if (w->none)
            continue;
        w->r.median_ms = s_float8(res, i, S_MEDIAN);
        w->r.stddev_ms = s_float8(res, i, S_STDDEV);
        /* timestamptz: microseconds from 2000-01-01 (any fixed epoch will do) */
        w->r.measured_us = PQgetisnull(res, i, S_MEASURED) ? TC_FIT_TIME_UNKNOWN
                                                           : s_int8(res, i, S_MEASURED);
        w->r.id = s_int8(res, i, S_ID);
        w->disturbed = !PQgetisnull(res, i, S_DISTURBED) && *PQgetvalue(res, i, S_DISTURBED);
    }
    qsort(rows, (size_t)n, sizeof *rows, s_row_cmp);
    for (int from = 0, to; from < n; from = to) {
        size_t k = 0;
        bool quiet = false;
        for (to = from; to < n && rows[to].grp == rows[from].grp &&
                        rows[to].batch == rows[from].batch;
             to++)
            quiet |= !rows[to].none && !rows[to].disturbed;
        /* A disturbed benchmark counts only where there is no quiet one. */
        for (int i = from; i < to; i++)
            if (!rows[i].none && (!quiet || !rows[i].disturbed))
                run[k++] = rows[i].r;
        each(ctx, rows[from].grp, (unsigned)rows[from].batch, rows[from].row, run, k);
    }
    free(rows);
    free(run);
    return 0;
}
