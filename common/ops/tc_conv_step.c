#include "tc_conv_step.h"

#include "tc_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t tc_conv_step_directions(bool first_layer, Traincast__V1__Direction out[TC_CONV_STEP_MAX_DIRS])
{
    size_t n = 0;
    out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_FWD;
    out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER;
    if (!first_layer)
        out[n++] = TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA;
    return n;
}

bool tc_conv_step_counts(bool first_layer, Traincast__V1__Direction d)
{
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    size_t n = tc_conv_step_directions(first_layer, dirs);
    for (size_t i = 0; i < n; i++)
        if (dirs[i] == d)
            return true;
    return false;
}

double tc_conv_step_ms(bool first_layer, unsigned multiplicity,
                       const double ms[TC_CONV_STEP_MAX_DIRS])
{
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    size_t n = tc_conv_step_directions(first_layer, dirs);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ms[i];
    return multiplicity * sum;
}

int tc_conv_step_layout_init(tc_conv_step_layout_t *l, const tc_conv_use_t *uses, size_t n)
{
    memset(l, 0, sizeof *l);
    l->uses = malloc((n ? n : 1) * sizeof *l->uses);
    l->first = malloc((n + 1) * sizeof *l->first);
    if (!l->uses || !l->first)
        return tc_fail(TC_ENOMEM, "out of memory for %zu conv usages", n);
    if (n)
        memcpy(l->uses, uses, n * sizeof *uses);
    l->n_uses = n;
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    for (size_t u = 0; u < n; u++) {
        l->first[u] = l->size;
        l->size += tc_conv_step_directions(uses[u].first_layer, dirs);
    }
    l->first[n] = l->size;
    return 0;
}

void tc_conv_step_layout_free(tc_conv_step_layout_t *l)
{
    free(l->uses);
    free(l->first);
    memset(l, 0, sizeof *l);
}

size_t tc_conv_step_slot(const tc_conv_step_layout_t *l, size_t u, Traincast__V1__Direction d)
{
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    size_t n = tc_conv_step_directions(l->uses[u].first_layer, dirs);
    for (size_t k = 0; k < n; k++)
        if (dirs[k] == d)
            return l->first[u] + k;
    return SIZE_MAX;
}

Traincast__V1__Direction tc_conv_step_direction(const tc_conv_step_layout_t *l, size_t u,
                                                size_t k)
{
    Traincast__V1__Direction dirs[TC_CONV_STEP_MAX_DIRS];
    tc_conv_step_directions(l->uses[u].first_layer, dirs);
    return dirs[k];
}

double tc_conv_step_time(const tc_conv_step_layout_t *l, const double *ms, const double *sd,
                         double *var)
{
    double sum = 0;
    if (var)
        *var = 0;
    for (size_t u = 0; u < l->n_uses; u++) {
        const tc_conv_use_t *use = &l->uses[u];
        size_t from = l->first[u], n = l->first[u + 1] - from;
        double t[TC_CONV_STEP_MAX_DIRS] = {0};
        for (size_t k = 0; k < n; k++) {
            t[k] = ms[from + k];
            if (var && sd && isfinite(sd[from + k])) {
                double s = use->multiplicity * sd[from + k];
                *var += s * s;
            }
        }
        sum += tc_conv_step_ms(use->first_layer, use->multiplicity, t);
    }
    return sum;
}
