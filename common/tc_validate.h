/* Validation of received messages before anything is stored.
 *
 * Each function returns 0, or TC_EINVAL (TC_EVERSION for a protocol version
 * this build does not speak) with a message that names the offending field
 * by its path, e.g. "conv_results.results[3].median_ms: must be a finite
 * number > 0 (got nan)". A message that fails validation can never be
 * stored and is rejected permanently. */
#ifndef TC_VALIDATE_H
#define TC_VALIDATE_H

#include "tc_wire.h"

#define TC_MAX_NAME_LEN 256      /* names, ids, versions */
#define TC_MAX_TEXT_LEN 4096     /* reasons, messages */
#define TC_MAX_DIM 1048576u      /* any single tensor dimension */
#define TC_MAX_KERNEL 1024u      /* r, s */
#define TC_MAX_ITEMS 2000000u    /* any repeated field */

int tc_validate_envelope(const tc_envelope_t *env);

int tc_validate_device(const Traincast__V1__Device *d, const char *path);
/* `need_batch`: n must be > 0 (a benchmarked config) or 0 (a model's layer). */
int tc_validate_conv_config(const Traincast__V1__ConvConfig *c, const char *path, int need_batch);
int tc_validate_conv_results(const Traincast__V1__ConvResults *r, const char *path);
int tc_validate_model_graph(const Traincast__V1__ModelGraph *g, const char *path);
int tc_validate_train_trace(const Traincast__V1__TrainTrace *t, const char *path);
int tc_validate_hello(const Traincast__V1__Hello *h, const char *path);

#endif
