/* Shared between tc_model.c and tc_model_spec.c only. */
#ifndef TC_MODEL_INTERNAL_H
#define TC_MODEL_INTERNAL_H

#include "tc_model.h"

#include <stddef.h>
#include <stdint.h>

/* Name the model; the id becomes "<id_prefix><name>@<input height>", or
 * "onnx:<12 hex of sha256>@<input height>" when id_prefix is NULL. */
int tc_model_set_identity(tc_model_t *m, const char *name, const char *id_prefix);

/* Read a whole regular file of at most `cap` bytes. Caller frees *data. */
int tc_model_read_file(const char *path, size_t cap, uint8_t **data, size_t *len);

#endif
