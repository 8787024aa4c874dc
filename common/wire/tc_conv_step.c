#include "tc_conv_step.h"

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
