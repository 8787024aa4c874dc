/* Cold operands for the CPU conv and matmul plans (operands.h): each run
 * uses the next of K copies of the tensors the direction reads and writes
 * its outputs into the next of K buffers (allocated and written once, as
 * the memory a caching allocator hands out in a step: mapped, last written
 * long ago) instead of a fresh allocation. With warm operands K is 1 and
 * nothing changes. Shared by the oneDNN (cpu_conv*.c), native
 * (cpu_native.c) and matmul (cpu_matmul.c) plans; a tensor is a slot, a
 * conv's tc_tensor_t or a matmul's tc_mm_tensor_t. */
#ifndef TC_CPU_COLD_H
#define TC_CPU_COLD_H

#include "cpu_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    TC_CPU_COLD_SLOTS = (int)TC_TENSOR_COUNT > (int)TC_MM_TENSOR_COUNT ? (int)TC_TENSOR_COUNT
                                                                       : (int)TC_MM_TENSOR_COUNT
};

typedef struct {
    size_t copies;                  /* K; 1 with warm operands */
    size_t turn;                    /* the copy the current run uses */
    void **in[TC_CPU_COLD_SLOTS];   /* in[t][r]: copy r of tensor t (owned); NULL: none */
} tc_cpu_cold_t;

/* Decide K for a plan whose run reads and writes `copy_bytes` (all its
 * tensors once): 1 with warm operands, else tc_operands_copies() over the
 * device's last-level cache and the memory available now. */
int tc_cpu_cold_init(tc_cpu_cold_t *c, const tc_cpu_ctx_t *dev, uint64_t copy_bytes);

/* Make K copies of input t (nothing when K is 1) of the plan's own
 * buffer `first` of `bytes`, filled already; `name` names it in errors. */
int tc_cpu_cold_add_input(tc_cpu_cold_t *c, unsigned t, const char *name, const void *first,
                          size_t bytes);

/* Move to the next copy; call before a run, outside its timed region. */
void tc_cpu_cold_next(tc_cpu_cold_t *c);

/* The current copy of input t (`first` when it has no copies). */
void *tc_cpu_cold_input(const tc_cpu_cold_t *c, unsigned t, void *first);

/* Make K zeroed buffers for output t (nothing when K is 1). */
int tc_cpu_cold_add_output(tc_cpu_cold_t *c, unsigned t, const char *name, size_t bytes);

/* Whether output t rotates (else the plan allocates it per run). */
static inline bool tc_cpu_cold_rotates(const tc_cpu_cold_t *c, unsigned t)
{
    return c->in[t] != NULL;
}

/* Free the copies. */
void tc_cpu_cold_release(tc_cpu_cold_t *c);

#endif
