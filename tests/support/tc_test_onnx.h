/* Build small ONNX models in tests: a graph with one input "x" of shape
 * [batch, C, H, W] (batch symbolic), weight-free initializers, nodes with
 * attributes, outputs and value_info claims; then pack them to bytes.
 * Everything is freed by tc_tb_free. */
#ifndef TC_TEST_ONNX_H
#define TC_TEST_ONNX_H

#include "onnx/onnx.pb-c.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tc_tb tc_tb_t;

/* Opset 17 (the default domain). rank 4 input [batch, c, h, w]. */
tc_tb_t *tc_tb_new(int64_t c, int64_t h, int64_t w);
/* The input with any rank; dims[0] is ignored (symbolic batch). */
tc_tb_t *tc_tb_new_rank(int rank, const int64_t *dims);
void tc_tb_free(tc_tb_t **tb_p);

/* A float initializer without data. */
void tc_tb_weight(tc_tb_t *tb, const char *name, int rank, const int64_t *dims);
/* An int64 initializer with data (1-D, n values). */
void tc_tb_ints(tc_tb_t *tb, const char *name, int n, const int64_t *vals);
/* A parameter as a graph input with a static shape (export_params=False). */
void tc_tb_param_input(tc_tb_t *tb, const char *name, int rank, const int64_t *dims);
/* Move initializer `name` (or, when no initializer has it, the value tensor
 * of the Constant node that outputs it) to external data: its data is
 * dropped and external_data gets location, offset and length, each left out
 * when NULL. */
void tc_tb_external(tc_tb_t *tb, const char *name, const char *location, const char *offset,
                    const char *length);

/* A node; inputs and outputs are comma-separated ("x,w,b"; an empty item is
 * an absent optional input). Returns the node for attributes. */
Onnx__NodeProto *tc_tb_node(tc_tb_t *tb, const char *op, const char *name, const char *inputs,
                            const char *outputs);
void tc_tb_attr_int(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, int64_t v);
void tc_tb_attr_ints(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, int count,
                     const int64_t *v);
void tc_tb_attr_float(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, float v);
void tc_tb_attr_str(tc_tb_t *tb, Onnx__NodeProto *n, const char *name, const char *v);
/* A Constant node with an int64 1-D value. */
/* A Constant node whose value is an int64 scalar (rank 0). */
void tc_tb_const_scalar(tc_tb_t *tb, const char *output, int64_t val);
void tc_tb_const_ints(tc_tb_t *tb, const char *output, int n, const int64_t *vals);

void tc_tb_output(tc_tb_t *tb, const char *name);
/* A value_info claim: dims[0] written as the symbol "batch" when batch_sym. */
void tc_tb_claim(tc_tb_t *tb, const char *name, int rank, const int64_t *dims, int batch_sym);

/* The model itself, to tweak before packing (owned by tb). */
Onnx__ModelProto *tc_tb_model(tc_tb_t *tb);
/* Any allocation that tc_tb_free should release (for tweaks). */
void *tc_tb_alloc(tc_tb_t *tb, size_t size);

/* Serialized bytes, owned by tb (valid until the next pack or free). */
const uint8_t *tc_tb_pack(tc_tb_t *tb, size_t *len);

#endif
