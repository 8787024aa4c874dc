/* Leave-one-CNN-out cross-validation: fixed specs, forward feature
 * selection over forms and weightings, and the nested procedure that
 * validate reports. */
#include "fit.h"

#include "tc_error.h"

#include <math.h>
#include <stdio.h>
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

/* A spec's leave-one-CNN-out over `rows`: the MAPE over points and its
 * standard error over CNNs (from the CNNs' own MAPEs); INFINITY when a fold
 * cannot be fitted (too few points, a failed solve) or a fit is not
 * admissible (a negative coefficient: `negative` set). */
typedef struct {
    double mape, se;
    bool negative;
} s_score_t;

/* Whether a solution has a coefficient below zero that matters: its
 * contribution at the largest value of its feature exceeds a millionth of
 * the largest measured time (numerical dust on a coefficient at zero does
 * not count). */
static bool s_negative(const tc_fit_data_t *d, const tc_fit_spec_t *spec,
                       const tc_fit_solution_t *sol, const bool *rows)
{
    double ymax = 0;
    for (size_t i = 0; i < d->n; i++)
        if (!rows || rows[i])
            ymax = fmax(ymax, d->measured[i]);
    size_t a = 0;
    for (size_t j = 0; j < d->p; j++) {
        if (!(spec->mask & (1u << j)))
            continue;
        double c = sol->coef[a++];
        if (c >= 0)
            continue;
        double xmax = 0;
        for (size_t i = 0; i < d->n; i++)
            if (!rows || rows[i])
                xmax = fmax(xmax, fabs(d->x[i * d->p + j]));
        if (-c * xmax > 1e-6 * ymax)
            return true;
    }
    return false;
}

/* `fixed`: the features were given, not chosen: a negative coefficient is
 * noted, not disqualifying. */
static s_score_t s_score(const tc_fit_data_t *d, const tc_fit_spec_t *spec, const bool *rows,
                         double *pred, bool *train, bool fixed)
{
    s_score_t r = {INFINITY, INFINITY, false};
    tc_fit_solution_t sol;
    if (tc_fit_spec_solve(d, spec, rows, &sol) < 0) {
        tc_err_clear();
        return r;
    }
    if (s_negative(d, spec, &sol, rows)) {
        r.negative = true;
        if (!fixed)
            return r;
    }
    for (size_t i = 0; i < d->n; i++)
        pred[i] = NAN;
    for (size_t c = 0; c < d->n_cnns; c++) {
        bool any = false;
        for (size_t i = 0; i < d->n; i++) {
            train[i] = (!rows || rows[i]) && d->cnn[i] != c;
            any |= (!rows || rows[i]) && d->cnn[i] == c;
        }
        if (!any)
            continue;
        if (tc_fit_spec_solve(d, spec, train, &sol) < 0) {
            tc_err_clear();
            return r;
        }
        if (s_negative(d, spec, &sol, train)) {
            r.negative = true;
            if (!fixed)
                return r;
        }
        for (size_t i = 0; i < d->n; i++)
            if ((!rows || rows[i]) && d->cnn[i] == c)
                pred[i] = tc_fit_spec_predict(d, spec, &sol, i);
    }
    tc_fit_ape_t ape;
    tc_fit_ape(d->measured, pred, rows, d->n, &ape);
    if (!ape.n || !isfinite(ape.mape))
        return r;
    /* Each CNN's own MAPE; their spread gives the standard error. */
    double sum = 0, sum2 = 0;
    size_t k = 0;
    for (size_t c = 0; c < d->n_cnns; c++) {
        double e = 0;
        size_t m = 0;
        for (size_t i = 0; i < d->n; i++) {
            if ((!rows || rows[i]) && d->cnn[i] == c && isfinite(pred[i])) {
                e += 100.0 * fabs(pred[i] - d->measured[i]) / d->measured[i];
                m++;
            }
        }
        if (m) {
            e /= (double)m;
            sum += e;
            sum2 += e * e;
            k++;
        }
    }
    double var = k > 1 ? (sum2 - sum * sum / (double)k) / (double)(k - 1) : 0;
    r.mape = ape.mape;
    r.se = k > 1 ? sqrt(fmax(var, 0) / (double)k) : INFINITY;
    return r;
}

/* One model met on the way: its spec, score and feature count. */
typedef struct {
    tc_fit_spec_t spec;
    s_score_t score;
    size_t k;
} s_cand_t;

typedef struct {
    s_cand_t *v;
    size_t n, cap;
    size_t negative; /* candidates left out for a negative coefficient */
} s_cands_t;

static int s_add(s_cands_t *c, const tc_fit_spec_t *spec, s_score_t score)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        s_cand_t *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return tc_fail(TC_ENOMEM, "out of memory");
        c->v = v, c->cap = cap;
    }
    c->v[c->n++] = (s_cand_t){*spec, score, s_popcount(spec->mask)};
    return 0;
}

/* Forward selection for one form and weighting, at most `budget` features
 * deep; every model on the path (the empty one excepted) becomes a
 * candidate. A feature enters only when it lowers the MAPE by min_gain. */
static int s_forward(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                     tc_fit_spec_t spec, double empty_mape, size_t budget, double *pred,
                     bool *train, s_cands_t *out)
{
    spec.mask = 0;
    double cur = empty_mape;
    for (size_t depth = 0; depth < budget; depth++) {
        uint32_t best_bit = 0;
        s_score_t best = {INFINITY, INFINITY, false};
        for (size_t j = 0; j < d->p && j < 32; j++) {
            uint32_t bit = 1u << j;
            if (!(o->candidates & bit) || (spec.mask & bit))
                continue;
            tc_fit_spec_t trial = spec;
            trial.mask |= bit;
            s_score_t s = s_score(d, &trial, rows, pred, train, false);
            out->negative += s.negative;
            if (s.mape < best.mape) {
                best = s;
                best_bit = bit;
            }
        }
        if (!best_bit || !(best.mape < cur * (1.0 - o->min_gain)))
            break;
        spec.mask |= best_bit;
        cur = best.mape;
        int rc = s_add(out, &spec, best);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void s_describe(const tc_fit_data_t *d, const tc_fit_spec_t *spec, char *buf, size_t size)
{
    size_t len = (size_t)snprintf(buf, size, "%s %s", tc_fit_form_name(spec->form),
                                  tc_fit_weighting_name(spec->weighting));
    if (!spec->mask)
        snprintf(buf + len, len < size ? size - len : 0, " (conv sum alone)");
    for (size_t j = 0, first = 1; j < d->p && len < size; j++) {
        if (spec->mask & (1u << j)) {
            len += (size_t)snprintf(buf + len, size - len, "%s%s", first ? " [" : ", ",
                                    d->names[j]);
            first = 0;
        }
    }
    if (spec->mask && len < size)
        snprintf(buf + len, size - len, "]");
}

/* The simple form, when the data support no selection (`reason`). */
static int s_simple(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                    size_t cnns, double *pred, bool *train, const char *reason,
                    tc_fit_choice_t *out)
{
    const char *unit = tc_fit_holdout_unit(d->grouped_by, true);
    if (!o->simple)
        return tc_fail(TC_EINVAL, "%s", reason);
    if (cnns < TC_FIT_SIMPLE_MIN_CNNS)
        return tc_fail(TC_EINVAL, "%s, and even the simplest model needs traces of %d %s: trace "
                                  "more on this device",
                       reason, TC_FIT_SIMPLE_MIN_CNNS, unit);
    out->spec = (tc_fit_spec_t){TC_FIT_NNLS, TC_FIT_W_RELATIVE, o->simple};
    out->simple = true;
    s_score_t s = s_score(d, &out->spec, rows, pred, train, false);
    out->mape = s.mape;
    out->se = s.se;
    char model[160];
    s_describe(d, &out->spec, model, sizeof model);
    snprintf(out->why, sizeof out->why, "the simple form %s: %s", model, reason);
    return 0;
}

int tc_fit_select(const tc_fit_data_t *d, const bool *rows, const tc_fit_select_opts_t *o,
                  tc_fit_choice_t *out)
{
    bool *present = calloc(d->n_cnns + 1, sizeof *present);
    bool *train = calloc(d->n + 1, sizeof *train);
    double *pred = calloc(d->n + 1, sizeof *pred);
    s_cands_t cands = {0};
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->mape = out->se = NAN;
    if (!present || !pred || !train) {
        rc = tc_fail(TC_ENOMEM, "out of memory");
        goto done;
    }
    const char *unit = tc_fit_holdout_unit(d->grouped_by, true);
    const char *one = tc_fit_holdout_unit(d->grouped_by, false);
    size_t cnns = s_cnns_present(d, rows, present);
    size_t budget = o->max_features ? o->max_features : 1 + cnns / TC_FIT_CNNS_PER_FEATURE;
    out->max_features = budget;
    if (!o->forms || !o->weightings) {
        rc = tc_fail(TC_EINVAL, "no model form or weighting allowed");
        goto done;
    }
    if (cnns < 3) {
        char reason[200];
        snprintf(reason, sizeof reason, "choosing a model by leave-one-%s-out needs traces of "
                                        "at least 3 %s; there %s %zu%s",
                 one, unit, cnns == 1 ? "is" : "are", cnns,
                 o->simple ? "" : ": trace more on this device");
        rc = s_simple(d, rows, o, cnns, pred, train, reason, out);
        goto done;
    }
    tc_fit_spec_t empty = {TC_FIT_OLS, TC_FIT_W_NONE, 0};
    s_score_t empty_score = s_score(d, &empty, rows, pred, train, false);
    if (o->select && (rc = s_add(&cands, &empty, empty_score)) < 0)
        goto done;
    for (int f = 0; f < TC_FIT_FORM_COUNT && rc == 0; f++) {
        if (!(o->forms & (1u << f)))
            continue;
        for (int w = 0; w < TC_FIT_WEIGHTING_COUNT && rc == 0; w++) {
            if (!(o->weightings & (1u << w)))
                continue;
            tc_fit_spec_t spec = {(tc_fit_form_t)f, (tc_fit_weighting_t)w, o->candidates};
            if (o->select) {
                rc = s_forward(d, rows, o, spec, empty_score.mape, budget, pred, train, &cands);
            } else {
                s_score_t s = s_score(d, &spec, rows, pred, train, true);
                cands.negative += s.negative;
                rc = s_add(&cands, &spec, s);
            }
        }
    }
    if (rc < 0)
        goto done;
    /* The lowest MAPE, then the simplest model within one standard error. */
    const s_cand_t *best = NULL, *pick = NULL;
    for (size_t i = 0; i < cands.n; i++)
        if (isfinite(cands.v[i].score.mape) && (!best || cands.v[i].score.mape < best->score.mape))
            best = &cands.v[i];
    if (!best) {
        char reason[400];
        size_t rows_n = 0, largest = 0;
        size_t *per = calloc(d->n_cnns + 1, sizeof *per);
        for (size_t i = 0; per && i < d->n; i++) {
            if (!rows || rows[i]) {
                rows_n++;
                if (++per[d->cnn[i]] > largest)
                    largest = per[d->cnn[i]];
            }
        }
        free(per);
        size_t p = s_popcount(o->candidates);
        if (!o->select)
            snprintf(reason, sizeof reason, "%zu features need more than %zu points in every "
                                            "leave-one-%s-out fold; the smallest fold here has "
                                            "%zu (%zu points, %zu %s, the largest with %zu "
                                            "points): trace more CNNs on this device or fit "
                                            "fewer features",
                     p, p, one, rows_n - largest, rows_n, cnns, unit, largest);
        else
            snprintf(reason, sizeof reason, "no model could be fitted in every leave-one-%s-out "
                                            "fold%s (%zu points, %zu %s): trace more CNNs on "
                                            "this device",
                     one, cands.negative ? " with non-negative coefficients" : "", rows_n, cnns,
                     unit);
        rc = s_simple(d, rows, o, cnns, pred, train, reason, out);
        goto done;
    }
    double limit = best->score.mape + (isfinite(best->score.se) ? best->score.se : 0);
    for (size_t i = 0; i < cands.n; i++) {
        const s_cand_t *c = &cands.v[i];
        if (!(c->score.mape <= limit))
            continue;
        if (!pick || c->k < pick->k || (c->k == pick->k && c->score.mape < pick->score.mape))
            pick = c;
    }
    out->spec = pick->spec;
    out->mape = pick->score.mape;
    out->se = pick->score.se;
    char chosen[200], lowest[200];
    s_describe(d, &pick->spec, chosen, sizeof chosen);
    s_describe(d, &best->spec, lowest, sizeof lowest);
    size_t len;
    if (pick == best)
        len = (size_t)snprintf(out->why, sizeof out->why,
                               "%s: the lowest leave-one-%s-out MAPE, %.1f %% (standard error "
                               "%.1f over %zu %s)",
                               chosen, one, pick->score.mape, pick->score.se, cnns, unit);
    else
        len = (size_t)snprintf(out->why, sizeof out->why,
                               "%s at %.1f %%: the simplest within one standard error of the "
                               "lowest, %s at %.1f %% (standard error %.1f over %zu %s)",
                               chosen, pick->score.mape, lowest, best->score.mape, best->score.se,
                               cnns, unit);
    if (o->select && len < sizeof out->why)
        len += (size_t)snprintf(out->why + len, sizeof out->why - len,
                                "; at most %zu feature%s for %zu %s", budget,
                                budget == 1 ? "" : "s", cnns, unit);
    if (!o->select && pick->score.negative && len < sizeof out->why)
        snprintf(out->why + len, sizeof out->why - len,
                 "; the features given have a negative coefficient (a prediction of the non-conv "
                 "time may come out negative)");
    else if (o->select && cands.negative && len < sizeof out->why)
        snprintf(out->why + len, sizeof out->why - len,
                 "; %zu candidate%s left out for a negative coefficient", cands.negative,
                 cands.negative == 1 ? "" : "s");
done:
    free(cands.v);
    free(present);
    free(pred);
    free(train);
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
        tc_fit_choice_t choice;
        tc_fit_solution_t sol;
        rc = tc_fit_select(d, train, o, &choice);
        tc_fit_spec_t spec = choice.spec;
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
