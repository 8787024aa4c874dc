/* The oneDNN conv plan, shared by cpu_conv.c (creating it: descriptors,
 * candidates, tensors) and cpu_conv_run.c (selecting and running a
 * candidate). Private to those two files. */
#ifndef TC_CPU_CONV_PLAN_H
#define TC_CPU_CONV_PLAN_H

#include "cpu_cold.h"
#include "cpu_internal.h"

#define MAX_BINDINGS 4 /* three tensors, and a bias (forward) or its gradient */

typedef struct {
    int arg;       /* DNNL_ARG_* of the conv primitive */
    tc_tensor_t t; /* the framework tensor bound to it */
    bool input;    /* reordered in before the conv, else out after it */
} tc_cpu_dnnl_binding_t;

typedef struct {
    tc_algo_t info;
    int alg_slot; /* 0 direct, 1 winograd */
    int impl;     /* position in that algorithm's iterator */
} tc_cpu_dnnl_cand_t;

typedef struct {
    tc_cpu_ctx_t *dev;
    tc_conv_spec_t spec;
    dnnl_data_type_t dt;
    bool bwd;
    dnnl_primitive_attr_t attr; /* scratchpad mode user */
    dnnl_memory_desc_t user_md[TC_TENSOR_COUNT];
    dnnl_memory_t user_mem[TC_TENSOR_COUNT]; /* NULL: not part of this direction */
    tc_cpu_dnnl_binding_t binds[MAX_BINDINGS];
    int n_binds;
    dnnl_convolution_desc_t op[2];
    bool op_ok[2];
    dnnl_primitive_desc_t hint[2]; /* forward hints for backward directions */
    tc_cpu_dnnl_cand_t *cands;
    size_t n_cands;
    void *out_buf[TC_TENSOR_COUNT]; /* current buffers of output tensors (owned) */
    /* The plain copy PyTorch makes between a tensor and ideep on each call of
     * a channels-last conv (cpu_conv.c): the weights made channels-last
     * before it, the weight gradient made dense (OIHW) after it. NULL: none. */
    dnnl_memory_desc_t fw_md[TC_TENSOR_COUNT];
    dnnl_memory_t fw_mem[TC_TENSOR_COUNT];
    tc_cpu_cold_t cold;             /* copies of the inputs with cold operands */
    /* The selected candidate. */
    int sel;
    dnnl_primitive_desc_t sel_pd;
    dnnl_memory_t inner[MAX_BINDINGS]; /* blocked copy, NULL when the plain one is used */
    size_t inner_bytes[MAX_BINDINGS];
    dnnl_memory_t scratch;            /* NULL when none is needed */
    size_t scratch_bytes;
} tc_cpu_plan_t;

/* What PyTorch's CPU allocator does: 64-byte aligned memory, untouched. */
void *tc_cpu_dnnl_alloc(size_t bytes);
/* One reorder between two memories, created and run now (as ideep does). */
int tc_cpu_dnnl_reorder(tc_cpu_plan_t *p, dnnl_memory_t from, dnnl_memory_t to);
/* Release the selected candidate's primitive descriptor, blocked copies and
 * scratchpad; the plan has no candidate selected after it. */
void tc_cpu_dnnl_unselect(tc_cpu_plan_t *p);

#endif
