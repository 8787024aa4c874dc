/* Builders of well-formed messages for tests. Everything returned is
 * allocated for the life of the test process (tests are short-lived
 * processes under Criterion), so nothing needs freeing. */
#ifndef TC_TEST_MSG_H
#define TC_TEST_MSG_H

#include "tc_wire.h"

Traincast__V1__Device *tc_test_device(const char *name, const char *uuid);
/* `n` results on distinct configs (batch 8), each with 2 candidates. */
Traincast__V1__ConvResults *tc_test_conv_results(const char *device_uuid, size_t n);
/* Give `cr` `n` matmul results on distinct configs (mini-batch 8; Linears
 * 768 -> 3072 + i on 50 rows per sample), one direction each. */
void tc_test_add_matmul_results(Traincast__V1__ConvResults *cr, size_t n);
Traincast__V1__ModelGraph *tc_test_model_graph(const char *model_id);
Traincast__V1__TrainTrace *tc_test_trace(const char *device_uuid, const char *model_id,
                                         unsigned batch, double median_ms);
Traincast__V1__Hello *tc_test_hello(const char *agent_name, const char *device_uuid);

/* An envelope with a fresh message id around a body (set exactly one). */
tc_envelope_t *tc_test_envelope(const char *agent_id);

#endif
