/* A stored fixture whose every conv time and trace follows a known law,
 * for tests of fit, predict, export and import:
 *
 *   conv(config, direction) = speed * (1e-9 ms * MACs * dirfactor + 0.01 ms)
 *   trace = conv sum + speed * (0.4 ms + 3e-7 ms * bn.elems)
 *   peak memory = 2e8 + 16 * parameters + 4 * activation elements (bytes)
 *
 * Two device classes ("Fast Device" speed 1, "Slow Device" speed 2.5), five
 * CNNs (the committed ONNX exports) benchmarked and traced at batches 8, 16
 * and 32; resnet34 never traced, its convs benchmarked at 16 and 64 on the
 * fast device only. */
#ifndef TC_TEST_LAW_H
#define TC_TEST_LAW_H

#include "store.h"
#include "tc_model.h"

#include <stddef.h>

typedef struct {
    const char *name;
    const char *uuid;
    double speed;
} tc_law_device_t;

/* The fast device's power while training, from the energy of its traces. */
#define TC_LAW_TRAINING_WATTS 150.0

extern const tc_law_device_t tc_law_devices[2];
extern const char *const tc_law_traced[5];
extern const unsigned tc_law_batches[3];

/* A committed export, tests/data/NAME.onnx. */
tc_model_t *tc_law_load(const char *name);
double tc_law_conv_sum(const tc_model_t *m, unsigned batch, double speed);
double tc_law_other_ms(const tc_model_t *m, unsigned batch, double speed);
double tc_law_peak(const tc_model_t *m, unsigned batch);
void tc_law_put(tc_store_t *s, tc_envelope_t *env);
void tc_law_put_benchmarks(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                           const unsigned *batches, size_t n_batches);
void tc_law_put_trace(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                      unsigned batch);
/* The same trace measuring `ms` instead of the law's time. */
void tc_law_put_trace_ms(tc_store_t *s, const tc_model_t *m, const tc_law_device_t *dev,
                         unsigned batch, double ms);
/* Matmuls by the same kind of law, for fixtures that benchmark them:
 *
 *   matmul(config, direction) = speed * (2e-8 ms * the direction's MACs + 0.02 ms)
 *
 * summed over a model's step by tc_matmul_step_ms. */
double tc_law_matmul_sum(const tc_model_t *m, unsigned batch, double speed);
void tc_law_put_matmul_benchmarks(tc_store_t *s, const tc_model_t *m,
                                  const tc_law_device_t *dev, const unsigned *batches,
                                  size_t n_batches);
/* A fresh database `name` (tc_test_fresh_db), migrated, with the fixture. */
void tc_law_build(const char *name, char *dsn, size_t size);

#endif
