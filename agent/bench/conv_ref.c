#include "conv_ref.h"

#include "tc_error.h"
#include "traincast.pb-c.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    long n, c, h, w, k, r, s, p, q, g, cg, kg, ph, pw, sh, sw, dh, dw;
} s_dims_t;

static s_dims_t s_dims(const tc_conv_config_t *c)
{
    s_dims_t d = {c->n ? c->n : 1, c->c, c->h, c->w, c->k, c->r, c->s, tc_conv_out_h(c),
                  tc_conv_out_w(c), c->groups, 0, 0, c->pad_h, c->pad_w, c->stride_h,
                  c->stride_w, c->dilation_h, c->dilation_w};
    d.cg = d.c / d.g;
    d.kg = d.k / d.g;
    return d;
}

#define X_AT(d, ni, ci, hi, wi) ((((ni) * (d).c + (ci)) * (d).h + (hi)) * (d).w + (wi))
#define Y_AT(d, ni, ki, pi, qi) ((((ni) * (d).k + (ki)) * (d).p + (pi)) * (d).q + (qi))
#define W_AT(d, ki, ci, ri, si) ((((ki) * (d).cg + (ci)) * (d).r + (ri)) * (d).s + (si))

int tc_conv_ref_fwd(const tc_conv_config_t *c, const float *x, const float *w, const float *b,
                    float *y)
{
    s_dims_t d = s_dims(c);
    for (long ni = 0; ni < d.n; ni++)
        for (long ki = 0; ki < d.k; ki++) {
            long gi = ki / d.kg;
            for (long pi = 0; pi < d.p; pi++)
                for (long qi = 0; qi < d.q; qi++) {
                    double acc = b ? b[ki] : 0.0;
                    for (long ci = 0; ci < d.cg; ci++)
                        for (long ri = 0; ri < d.r; ri++) {
                            long hi = pi * d.sh - d.ph + ri * d.dh;
                            if (hi < 0 || hi >= d.h)
                                continue;
                            for (long si = 0; si < d.s; si++) {
                                long wi = qi * d.sw - d.pw + si * d.dw;
                                if (wi < 0 || wi >= d.w)
                                    continue;
                                acc += (double)x[X_AT(d, ni, gi * d.cg + ci, hi, wi)] *
                                       w[W_AT(d, ki, ci, ri, si)];
                            }
                        }
                    y[Y_AT(d, ni, ki, pi, qi)] = (float)acc;
                }
        }
    return 0;
}

int tc_conv_ref_bwd_data(const tc_conv_config_t *c, const float *dy, const float *w, float *dx)
{
    s_dims_t d = s_dims(c);
    size_t nx = (size_t)d.n * d.c * d.h * d.w;
    double *acc = calloc(nx ? nx : 1, sizeof *acc);
    if (!acc)
        return tc_fail(TC_ENOMEM, "out of memory in the reference backward-data conv");
    for (long ni = 0; ni < d.n; ni++)
        for (long ki = 0; ki < d.k; ki++) {
            long gi = ki / d.kg;
            for (long pi = 0; pi < d.p; pi++)
                for (long qi = 0; qi < d.q; qi++) {
                    double g = dy[Y_AT(d, ni, ki, pi, qi)];
                    for (long ci = 0; ci < d.cg; ci++)
                        for (long ri = 0; ri < d.r; ri++) {
                            long hi = pi * d.sh - d.ph + ri * d.dh;
                            if (hi < 0 || hi >= d.h)
                                continue;
                            for (long si = 0; si < d.s; si++) {
                                long wi = qi * d.sw - d.pw + si * d.dw;
                                if (wi < 0 || wi >= d.w)
                                    continue;
                                acc[X_AT(d, ni, gi * d.cg + ci, hi, wi)] +=
                                    g * w[W_AT(d, ki, ci, ri, si)];
                            }
                        }
                }
        }
    for (size_t i = 0; i < nx; i++)
        dx[i] = (float)acc[i];
    free(acc);
    return 0;
}

int tc_conv_ref_bwd_filter(const tc_conv_config_t *c, const float *x, const float *dy, float *dw,
                           float *db)
{
    s_dims_t d = s_dims(c);
    for (long ki = 0; ki < d.k; ki++) {
        long gi = ki / d.kg;
        for (long ci = 0; ci < d.cg; ci++)
            for (long ri = 0; ri < d.r; ri++)
                for (long si = 0; si < d.s; si++) {
                    double acc = 0;
                    for (long ni = 0; ni < d.n; ni++)
                        for (long pi = 0; pi < d.p; pi++) {
                            long hi = pi * d.sh - d.ph + ri * d.dh;
                            if (hi < 0 || hi >= d.h)
                                continue;
                            for (long qi = 0; qi < d.q; qi++) {
                                long wi = qi * d.sw - d.pw + si * d.dw;
                                if (wi < 0 || wi >= d.w)
                                    continue;
                                acc += (double)dy[Y_AT(d, ni, ki, pi, qi)] *
                                       x[X_AT(d, ni, gi * d.cg + ci, hi, wi)];
                            }
                        }
                    dw[W_AT(d, ki, ci, ri, si)] = (float)acc;
                }
        if (db) {
            double acc = 0;
            for (long ni = 0; ni < d.n; ni++)
                for (long pi = 0; pi < d.p; pi++)
                    for (long qi = 0; qi < d.q; qi++)
                        acc += dy[Y_AT(d, ni, ki, pi, qi)];
            db[ki] = (float)acc;
        }
    }
    return 0;
}

double tc_conv_ref_terms(const tc_conv_config_t *c, int direction)
{
    double n = c->n ? c->n : 1, g = c->groups ? c->groups : 1;
    switch (direction) {
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA:
        return (double)c->k / g * c->r * c->s;
    case TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER:
        return n * tc_conv_out_h(c) * tc_conv_out_w(c);
    default:
        return (double)c->c / g * c->r * c->s;
    }
}

size_t tc_conv_ref_compare(const float *got, const float *ref, size_t n, double atol, double rtol,
                           size_t *worst)
{
    size_t bad = 0, wi = 0;
    double werr = -1;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - ref[i]);
        if (!isfinite(got[i]) || !isfinite(ref[i]))
            err = INFINITY;
        if (err > atol + rtol * fabs(ref[i]))
            bad++;
        if (err > werr) {
            werr = err;
            wi = i;
        }
    }
    if (worst)
        *worst = wi;
    return bad;
}
