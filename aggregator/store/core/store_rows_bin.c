/* Rows of conv results in PostgreSQL's binary COPY format (store_rows.h).
 *
 * The format (PostgreSQL's documentation of COPY, "Binary Format"): an
 * 11-byte signature, a 32-bit flags field and a 32-bit header extension
 * length; then per row a 16-bit column count and per column a 32-bit length
 * (-1 for NULL) followed by the value in its type's send format, all
 * integers in network byte order; a count of -1 ends the data. The values
 * must be of the columns' exact types (int4 is 4 bytes, int8 8): the column
 * lists below name each column's type, and the store tests put and read
 * back every column, so a migration that changes a type fails them. */
#include "store_rows.h"

#include <endian.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Type OIDs of the array elements (pg_type.dat: fixed since PostgreSQL 7). */
#define S_FLOAT8_OID 701u
#define S_INT8_OID 20u
/* timestamptz counts microseconds from 2000-01-01 00:00 UTC. */
#define S_PG_EPOCH_US 946684800000000LL

static void s_be16(tc_buf_t *b, int16_t v)
{
    uint16_t u = htobe16((uint16_t)v);
    tc_buf_append(b, (const char *)&u, sizeof u);
}

static void s_be32(tc_buf_t *b, int32_t v)
{
    uint32_t u = htobe32((uint32_t)v);
    tc_buf_append(b, (const char *)&u, sizeof u);
}

static void s_be64(tc_buf_t *b, int64_t v)
{
    uint64_t u = htobe64((uint64_t)v);
    tc_buf_append(b, (const char *)&u, sizeof u);
}

static int64_t s_double_bits(double v)
{
    int64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

void tc_bin_begin(tc_buf_t *b)
{
    tc_buf_append(b, TC_BIN_SIGNATURE, TC_BIN_SIGNATURE_LEN);
    s_be32(b, 0); /* flags: no OIDs */
    s_be32(b, 0); /* no header extension */
}

void tc_bin_end(tc_buf_t *b)
{
    s_be16(b, -1);
}

static void s_null(tc_buf_t *b)
{
    s_be32(b, -1);
}

static void s_bool(tc_buf_t *b, bool v)
{
    s_be32(b, 1);
    tc_buf_append(b, v ? "\x01" : "\x00", 1);
}

static void s_int4(tc_buf_t *b, int32_t v)
{
    s_be32(b, 4);
    s_be32(b, v);
}

static void s_int8(tc_buf_t *b, int64_t v)
{
    s_be32(b, 8);
    s_be64(b, v);
}

/* Not finite is NULL, as in the text rows. */
static void s_float8(tc_buf_t *b, double v)
{
    if (!isfinite(v)) {
        s_null(b);
        return;
    }
    s_be32(b, 8);
    s_be64(b, s_double_bits(v));
}

/* NULL is NULL, empty is empty. */
static void s_text(tc_buf_t *b, const char *v)
{
    if (!v) {
        s_null(b);
        return;
    }
    size_t n = strlen(v);
    s_be32(b, (int32_t)n);
    tc_buf_append(b, v, n);
}

/* NULL or empty is NULL. */
static void s_text_or_null(tc_buf_t *b, const char *v)
{
    s_text(b, v && *v ? v : NULL);
}

/* A unix-microsecond time; 0 (or less) is NULL. */
static void s_time_us(tc_buf_t *b, long long us)
{
    if (us <= 0)
        s_null(b);
    else
        s_int8(b, us - S_PG_EPOCH_US);
}

/* A one-dimensional array of n 8-byte elements (none NULL) of type `oid`,
 * element i being bits(i). An empty array has no dimensions. */
static void s_array8(tc_buf_t *b, uint32_t oid, size_t n, int64_t (*bits)(const void *, size_t),
                     const void *v)
{
    s_be32(b, (int32_t)(12 + (n ? 8 : 0) + n * 12));
    s_be32(b, n ? 1 : 0); /* dimensions */
    s_be32(b, 0);         /* no NULL element */
    s_be32(b, (int32_t)oid);
    if (n) {
        s_be32(b, (int32_t)n);
        s_be32(b, 1); /* lower bound */
    }
    for (size_t i = 0; i < n; i++) {
        s_be32(b, 8);
        s_be64(b, bits(v, i));
    }
}

static int64_t s_double_at(const void *v, size_t i)
{
    return s_double_bits(((const double *)v)[i]);
}

static int64_t s_int64_at(const void *v, size_t i)
{
    return ((const int64_t *)v)[i];
}

/* One row of conv_results, TC_ROWS_RESULT_COLUMNS in order. */
static void s_result_row(tc_buf_t *b, const Traincast__V1__ConvResults *cr, size_t i,
                         const tc_rows_conv_ids_t *ids, long long device_id)
{
    const Traincast__V1__ConvResult *r = cr->results[i];
    s_be16(b, TC_ROWS_RESULT_COLS);
    s_int8(b, ids->result_ids[i]);                        /* result_id bigint */
    s_text(b, ids->message_id);                           /* message_id text */
    s_int4(b, (int32_t)i);                                /* seq integer */
    s_int8(b, device_id);                                 /* device_id bigint */
    s_int8(b, ids->config_ids[i]);                        /* config_id bigint */
    s_int4(b, (int32_t)r->config->n);                     /* batch integer */
    s_text(b, tc_direction_name(r->direction));           /* direction text */
    s_text(b, tc_policy_name(r->policy));                 /* policy text */
    s_text_or_null(b, cr->backend);                       /* backend text */
    s_text(b, r->algo);                                   /* algo text */
    s_int4(b, r->algo_id);                                /* algo_id integer */
    s_float8(b, r->median_ms);                            /* median_ms double */
    s_float8(b, r->min_ms);                               /* min_ms double */
    s_float8(b, r->max_ms);                               /* max_ms double */
    s_float8(b, r->stddev_ms);                            /* stddev_ms double */
    s_int4(b, (int32_t)r->repetitions);                   /* repetitions integer */
    s_int8(b, (int64_t)r->workspace_bytes);               /* workspace_bytes bigint */
    s_time_us(b, r->measured_at_us);                      /* measured_at timestamptz */
    s_array8(b, S_FLOAT8_OID, r->n_samples_ms, s_double_at, r->samples_ms); /* double[] */
    s_array8(b, S_INT8_OID, r->n_sample_offsets_us, s_int64_at,
             r->sample_offsets_us);                       /* sample_offsets_us bigint[] */
    s_text_or_null(b, r->route);                          /* route text */
    s_text_or_null(b, cr->device ? cr->device->library_version : NULL); /* library_version */
    if (r->sm_clock_mhz)                                  /* sm_clock_mhz integer */
        s_int4(b, (int32_t)r->sm_clock_mhz);
    else
        s_null(b);
    if (r->power_w > 0)                                   /* power_w double */
        s_float8(b, r->power_w);
    else
        s_null(b);
    const Traincast__V1__Load *l = r->load;               /* absent from older agents */
    if (l) {
        s_float8(b, l->others_pct);                       /* load_others_pct double */
        s_float8(b, l->steal_pct);                        /* load_steal_pct double */
        s_int4(b, (int32_t)l->gpu_other_processes);       /* gpu_other_processes integer */
        s_float8(b, l->threshold_pct);                    /* load_threshold_pct double */
        s_int4(b, (int32_t)l->remeasured);                /* remeasured integer */
    } else {
        for (int k = 0; k < 5; k++)
            s_null(b);
    }
    s_bool(b, l && l->disturbed);                         /* disturbed boolean */
    if (l && l->canary_ms > 0)                            /* canary_ms double */
        s_float8(b, l->canary_ms);
    else
        s_null(b);
    s_time_us(b, l ? l->supersedes_us : 0);               /* supersedes_at timestamptz */
}

/* One row of conv_algo_timings, TC_ROWS_CAND_COLUMNS in order. */
static void s_cand_row(tc_buf_t *b, long long result_id, const Traincast__V1__AlgoTiming *a)
{
    s_be16(b, TC_ROWS_CAND_COLS);
    s_int8(b, result_id);                          /* result_id bigint */
    s_text(b, a->algo);                            /* algo text */
    s_int4(b, a->algo_id);                         /* algo_id integer */
    s_float8(b, a->time_ms);                       /* time_ms double */
    s_int8(b, (int64_t)a->workspace_bytes);        /* workspace_bytes bigint */
    s_text(b, tc_algo_status_name(a->status));     /* status text */
    s_text_or_null(b, a->message);                 /* message text */
}

void tc_rows_conv_results(const Traincast__V1__ConvResults *cr, const tc_rows_conv_ids_t *ids,
                          tc_buf_t *rows, tc_buf_t *cands)
{
    long long device_id = strtoll(ids->device_id, NULL, 10);
    for (size_t i = 0; i < cr->n_results; i++) {
        s_result_row(rows, cr, i, ids, device_id);
        const Traincast__V1__ConvResult *r = cr->results[i];
        for (size_t j = 0; j < r->n_candidates; j++)
            s_cand_row(cands, ids->result_ids[i], r->candidates[j]);
    }
}

int tc_bin_check(const tc_buf_t *b, int cols, size_t *rows)
{
    *rows = 0;
    if (!b->len)
        return 0; /* no rows (and maybe no buffer: NULL + 0 is undefined) */
    const unsigned char *p = (const unsigned char *)b->data, *end = p + b->len;
    while (p < end) {
        if (end - p < 2 || (int16_t)((p[0] << 8) | p[1]) != cols)
            return -1;
        p += 2;
        for (int c = 0; c < cols; c++) {
            if (end - p < 4)
                return -1;
            int32_t len = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
                                    ((uint32_t)p[2] << 8) | p[3]);
            p += 4;
            if (len < -1 || (len > 0 && end - p < len))
                return -1;
            if (len > 0)
                p += len;
        }
        ++*rows;
    }
    return 0;
}
