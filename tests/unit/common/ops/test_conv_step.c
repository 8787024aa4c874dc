/* The conv-step rule's layout and sum (tc_conv_step.h): where each
 * direction of each usage sits, and the step time fit and predict both
 * take from it, against the rule read literally. */
#include "tc_conv_step.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#define FWD TRAINCAST__V1__DIRECTION__DIRECTION_FWD
#define BWD_FILTER TRAINCAST__V1__DIRECTION__DIRECTION_BWD_FILTER
#define BWD_DATA TRAINCAST__V1__DIRECTION__DIRECTION_BWD_DATA

Test(conv_step, a_first_layer_has_no_backward_data_slot, .timeout = 10)
{
    tc_conv_use_t uses[] = {{.first_layer = true, .multiplicity = 1},
                            {.first_layer = false, .multiplicity = 3},
                            {.first_layer = false, .multiplicity = 2}};
    tc_conv_step_layout_t l;
    cr_assert_eq(tc_conv_step_layout_init(&l, uses, 3), 0);
    cr_expect_eq(l.size, 2 + 3 + 3);
    cr_expect_eq(tc_conv_step_slot(&l, 0, FWD), 0);
    cr_expect_eq(tc_conv_step_slot(&l, 0, BWD_FILTER), 1);
    cr_expect_eq(tc_conv_step_slot(&l, 0, BWD_DATA), SIZE_MAX);
    cr_expect_eq(tc_conv_step_slot(&l, 1, FWD), 2);
    cr_expect_eq(tc_conv_step_slot(&l, 2, BWD_DATA), 7);
    for (size_t u = 0; u < 3; u++)
        for (int d = FWD; d <= BWD_FILTER; d++) {
            size_t i = tc_conv_step_slot(&l, u, (Traincast__V1__Direction)d);
            if (i != SIZE_MAX)
                cr_expect_eq(tc_conv_step_direction(&l, u, i - l.first[u]), d, "slot %zu", i);
        }
    tc_conv_step_layout_free(&l);
}

Test(conv_step, the_step_time_is_each_usage_times_its_directions, .timeout = 10)
{
    tc_conv_use_t uses[] = {{.first_layer = true, .multiplicity = 1},
                            {.first_layer = false, .multiplicity = 3}};
    tc_conv_step_layout_t l;
    cr_assert_eq(tc_conv_step_layout_init(&l, uses, 2), 0);
    double ms[] = {1.0, 2.0, 10.0, 20.0, 40.0};
    double sd[] = {0.1, NAN, 1.0, 0.0, 2.0};
    double var = -1;
    /* 1 x (1 + 2) + 3 x (10 + 20 + 40) */
    cr_expect_float_eq(tc_conv_step_time(&l, ms, sd, &var), 213.0, 1e-12);
    /* (1 x 0.1)^2 + (3 x 1)^2 + (3 x 2)^2; the NaN adds nothing */
    cr_expect_float_eq(var, 0.01 + 9 + 36, 1e-12);
    cr_expect_float_eq(tc_conv_step_time(&l, ms, NULL, NULL), 213.0, 1e-12);
    tc_conv_step_layout_free(&l);

    cr_assert_eq(tc_conv_step_layout_init(&l, NULL, 0), 0);
    cr_expect_eq(l.size, 0);
    cr_expect_eq(tc_conv_step_time(&l, ms, sd, &var), 0.0);
    cr_expect_eq(var, 0.0);
    tc_conv_step_layout_free(&l);
}
