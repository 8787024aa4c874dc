/* Leave-one-CNN-out cross-validation: fixed specs, forward feature
 * selection over forms and weightings, and the nested procedure that
 * validate reports. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t s_popcount(uint32_t m)
{
    size_t c = 0;
    for (; m; m &= m - 1)
        c++;
    return c;
}

int tc_fit_spec_solve(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows,
                      tc_fit_solution_t *out)
{
    size_t q = s_popcount(spec->mask);
    size_t cols[TC_FIT_MAX_FEATURES], k = 0;
    for (size_t j = 0; j < d->p; j++) {
        if (spec->mask & (1u << j))
            cols[k++] = j;
    }
    if (k != q)
        return tc_fail(TC_EINVAL, "feature mask 0x%x names features beyond the %zu candidates",
                       spec->mask, d->p);
    size_t m = 0;
    for (size_t i = 0; i < d->n; i++)
        m += !rows || rows[i];
    double *x = malloc((m * q + 1) * sizeof *x);
    double *y = malloc((m + 1) * sizeof *y);
    double *w = malloc((m + 1) * sizeof *w);
    int rc = 0;
    if (!x || !y || !w) {
        rc = tc_fail(TC_ENOMEM, "out of memory for a %zu x %zu fit", m, q);
    } else {
        size_t r = 0;
        for (size_t i = 0; i < d->n; i++) {
            if (rows && !rows[i])
                continue;
            for (size_t a = 0; a < q; a++)
                x[r * q + a] = d->x[i * d->p + cols[a]];
            y[r] = d->measured[i] - d->conv[i];
            w[r] = 1.0 / (d->measured[i] * d->measured[i]);
            r++;
        }
        rc = tc_fit_linear(spec->form, x, y, spec->weighting == TC_FIT_W_RELATIVE ? w : NULL, m,
                           q, out);
    }
    free(x);
    free(y);
    free(w);
    return rc;
}

double tc_fit_spec_predict(const tc_fit_data_t *d, const tc_fit_spec_t *spec,
                           const tc_fit_solution_t *sol, size_t i)
{
    double v = d->conv[i];
    size_t a = 0;
    for (size_t j = 0; j < d->p; j++) {
        if (spec->mask & (1u << j))
            v += sol->coef[a++] * d->x[i * d->p + j];
    }
    return v;
}

/* Which CNNs have rows in `rows`; returns how many. */
static size_t s_cnns_present(const tc_fit_data_t *d, const bool *rows, bool *present)
{
    size_t count = 0;
    memset(present, 0, d->n_cnns * sizeof *present);
    for (size_t i = 0; i < d->n; i++) {
        if ((!rows || rows[i]) && !present[d->cnn[i]]) {
            present[d->cnn[i]] = true;
            count++;
        }
    }
    return count;
}

int tc_fit_loco(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows, double *pred,
                tc_fit_fold_fn on_fold, void *ctx)
{
    bool *present = calloc(d->n_cnns + 1, sizeof *present);
    bool *train = calloc(d->n + 1, sizeof *train);
    int rc = 0;
    if (!present || !train) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < d->n; i++)
        pred[i] = NAN;
    s_cnns_present(d, rows, present);
    for (size_t c = 0; c < d->n_cnns && rc == 0; c++) {
        if (!present[c])
            continue;
        for (size_t i = 0; i < d->n; i++)
            train[i] = (!rows || rows[i]) && d->cnn[i] != c;
        if (on_fold)
            on_fold(c, train, d->n, ctx);
        tc_fit_solution_t sol;
        rc = tc_fit_spec_solve(d, spec, train, &sol);
        if (rc < 0) {
            tc_err_context(rc, "fold without %s", d->cnn_names[c]);
            break;
        }
        for (size_t i = 0; i < d->n; i++) {
            if ((!rows || rows[i]) && d->cnn[i] == c)
                pred[i] = tc_fit_spec_predict(d, spec, &sol, i);
        }
    }
done:
    free(present);
    free(train);
    return rc;
}

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tc_fit_ape(const double *measured, const double *pred, const bool *rows, size_t n,
                tc_fit_ape_t *out)
{
    memset(out, 0, sizeof *out);
    out->mape = out->median = out->max = NAN;
    double *ape = malloc((n + 1) * sizeof *ape);
    if (!ape)
        return;
    size_t m = 0;
    double sum = 0, mx = 0;
    for (size_t i = 0; i < n; i++) {
        if ((rows && !rows[i]) || !isfinite(pred[i]))
            continue;
        double e = 100.0 * fabs(pred[i] - measured[i]) / measured[i];
        ape[m++] = e;
        sum += e;
        mx = fmax(mx, e);
    }
    out->n = m;
    if (m) {
        qsort(ape, m, sizeof *ape, s_cmp_double);
        out->mape = sum / (double)m;
        out->median = m % 2 ? ape[m / 2] : 0.5 * (ape[m / 2 - 1] + ape[m / 2]);
        out->max = mx;
    }
    free(ape);
}

void tc_fit_select_opts_default(const tc_fit_data_t *d, tc_fit_select_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->forms = (1u << TC_FIT_FORM_COUNT) - 1;
    o->weightings = (1u << TC_FIT_WEIGHTING_COUNT) - 1;
    o->candidates = d->p >= 32 ? 0xffffffffu : (1u << d->p) - 1;
    o->select = true;
    o->min_gain = 0.01;
}

/* Leave-one-CNN-out MAPE of a spec over `rows`; INFINITY when a fold
 * cannot be fitted (too few points for the features, a failed solve). */
static double s_score(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows,
                      double *pred)
{
    if (tc_fit_loco(d, spec, rows, pred, NULL, NULL) < 0) {
        tc_err_clear();
        return INFINITY;
    }
    tc_fit_ape_t ape;
    tc_fit_ape(d->measured, pred, rows, d->n, &ape);
    return ape.n && isfinite(ape.mape) ? ape.mape : INFINITY;
}

/* Forward selection for one form and weighting. */
static double s_forward(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                        tc_fit_spec_t *spec, double empty_score, double *pred)
{
    spec->mask = 0;
    double cur = empty_score;
    for (;;) {
        uint32_t best_bit = 0;
        double best = INFINITY;
        for (size_t j = 0; j < d->p && j < 32; j++) {
            uint32_t bit = 1u << j;
            if (!(o->candidates & bit) || (spec->mask & bit))
                continue;
            tc_fit_spec_t trial = *spec;
            trial.mask |= bit;
            double s = s_score(d, &trial, rows, pred);
            if (s < best) {
                best = s;
                best_bit = bit;
            }
        }
        if (!best_bit || !(best < cur * (1.0 - o->min_gain)))
            break;
        spec->mask |= best_bit;
        cur = best;
    }
    return cur;
}

int tc_fit_select(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                  tc_fit_spec_t *best, double *mape)
{
    bool *present = calloc(d->n_cnns + 1, sizeof *present);
    double *pred = calloc(d->n + 1, sizeof *pred);
    int rc = 0;
    if (!present || !pred) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    size_t cnns = s_cnns_present(d, rows, present);
    if (cnns < 3) {
        rc = tc_fail(TC_EINVAL, "choosing a model by leave-one-%s-out needs traces of at least "
                                "3 %s; there %s %zu: trace more on this device",
                     tc_fit_holdout_unit(d->grouped_by, false),
                     tc_fit_holdout_unit(d->grouped_by, true), cnns == 1 ? "is" : "are", cnns);
        goto done;
    }
    if (!o->forms || !o->weightings) {
        rc = tc_fail(TC_EINVAL, "no model form or weighting allowed");
        goto done;
    }
    tc_fit_spec_t empty = {TC_FIT_OLS, TC_FIT_W_NONE, 0};
    double empty_score = s_score(d, &empty, rows, pred);
    double best_score = INFINITY;
    bool have = false;
    for (int f = 0; f < TC_FIT_FORM_COUNT; f++) {
        if (!(o->forms & (1u << f)))
            continue;
        for (int w = 0; w < TC_FIT_WEIGHTING_COUNT; w++) {
            if (!(o->weightings & (1u << w)))
                continue;
            tc_fit_spec_t spec = {(tc_fit_form_t)f, (tc_fit_weighting_t)w, o->candidates};
            double s;
            if (o->select)
                s = s_forward(d, rows, o, &spec, empty_score, pred);
            else
                s = s_score(d, &spec, rows, pred);
            /* A later (more complex) form or weighting must beat the best so
             * far by the same margin that admits a feature. */
            if (!have || s < best_score * (1.0 - o->min_gain)) {
                if (isfinite(s) || !have) {
                    *best = spec;
                    best_score = s;
                    have = true;
                }
            }
        }
    }
    if (!isfinite(best_score)) {
        /* The fold with the fewest training points: all but the largest group. */
        size_t *per = calloc(d->n_cnns + 1, sizeof *per), largest = 0, rows_n = 0;
        for (size_t i = 0; per && i < d->n; i++) {
            if (!rows || rows[i]) {
                rows_n++;
                if (++per[d->cnn[i]] > largest)
                    largest = per[d->cnn[i]];
            }
        }
        free(per);
        size_t p = (size_t)__builtin_popcount(o->candidates);
        if (o->select)
            rc = tc_fail(TC_EINVAL, "no model could be fitted in every leave-one-%s-out fold "
                                    "(%zu points, %zu %s): trace more CNNs on this device",
                         tc_fit_holdout_unit(d->grouped_by, false), rows_n, cnns,
                         tc_fit_holdout_unit(d->grouped_by, true));
        else
            rc = tc_fail(TC_EINVAL, "%zu features need more than %zu points in every "
                                    "leave-one-%s-out fold; the smallest fold here has %zu (%zu "
                                    "points, %zu %s, the largest with %zu points): trace more "
                                    "CNNs on this device or fit fewer features",
                         p, p, tc_fit_holdout_unit(d->grouped_by, false), rows_n - largest,
                         rows_n, cnns, tc_fit_holdout_unit(d->grouped_by, true), largest);
        goto done;
    }
    *mape = best_score;
done:
    free(present);
    free(pred);
    return rc;
}

/* Each group's interval from the held-out ratios of the other groups
 * (cross-validation calibration): its own truth never counts as a score. */
static int s_nested_intervals(const tc_fit_data_t *d, const double *pred, bool *rows,
                              const tc_fit_held_out_t *out)
{
    for (size_t c = 0; c < d->n_cnns; c++) {
        for (size_t i = 0; i < d->n; i++)
            rows[i] = d->cnn[i] != c;
        double lo, hi;
        int rc = tc_fit_interval(d->measured, pred, rows, d->n, TC_FIT_ALPHA, &lo, &hi);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < d->n; i++) {
            if (d->cnn[i] != c)
                continue;
            if (out->lo_ms)
                out->lo_ms[i] = pred[i] * lo;
            if (out->hi_ms)
                out->hi_ms[i] = pred[i] * hi;
        }
    }
    return 0;
}

int tc_fit_nested_loco(const tc_fit_data_t *d, const tc_fit_select_opts_t *o,
                       const tc_fit_held_out_t *out, tc_fit_spec_t *chosen,
                       tc_fit_fold_fn on_fold, tc_fit_progress_fn progress, void *ctx)
{
    if (d->n_cnns < 4)
        return tc_fail(TC_EINVAL, "validating the model choice needs traces of at least 4 %s "
                                  "(each fold chooses among the others by leave-one-out); "
                                  "there are %zu: trace more on this device",
                       tc_fit_holdout_unit(d->grouped_by, true), d->n_cnns);
    bool *train = calloc(d->n + 1, sizeof *train);
    double *pred = calloc(d->n + 1, sizeof *pred);
    if (!train || !pred) {
        free(train);
        free(pred);
        return tc_fail(TC_ENOMEM, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; i < d->n; i++) {
        pred[i] = NAN;
        if (out->lo_ms)
            out->lo_ms[i] = NAN;
        if (out->hi_ms)
            out->hi_ms[i] = NAN;
    }
    for (size_t c = 0; c < d->n_cnns && rc == 0; c++) {
        for (size_t i = 0; i < d->n; i++)
            train[i] = d->cnn[i] != c;
        if (on_fold)
            on_fold(c, train, d->n, ctx);
        tc_fit_spec_t spec;
        double inner;
        tc_fit_solution_t sol;
        rc = tc_fit_select(d, train, o, &spec, &inner);
        if (rc == 0)
            rc = tc_fit_spec_solve(d, &spec, train, &sol);
        if (rc < 0) {
            tc_err_context(rc, "fold without %s", d->cnn_names[c]);
            break;
        }
        for (size_t i = 0; i < d->n; i++) {
            if (d->cnn[i] == c)
                pred[i] = tc_fit_spec_predict(d, &spec, &sol, i);
        }
        if (chosen)
            chosen[c] = spec;
        if (progress)
            progress(c + 1, d->n_cnns, ctx);
    }
    if (rc == 0 && (out->lo_ms || out->hi_ms))
        rc = s_nested_intervals(d, pred, train, out);
    if (out->ms)
        memcpy(out->ms, pred, d->n * sizeof *pred);
    free(train);
    free(pred);
    return rc;
}
