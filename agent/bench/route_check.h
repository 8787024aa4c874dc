/* Does the agent route GPU convs as the installed PyTorch does? The ported
 * rule (agent/devices/gpu_route.h) against PyTorch's own choice
 * (torch._C._select_conv_backend, asked through the framework helper,
 * fw_conv.h) for every conv of a conv list, at one batch, in fp32, fp16 and
 * (compute capability 8.0 and up) bf16, NCHW and channels-last. The GPU
 * device follows PyTorch's answer wherever the two differ, so a difference
 * is not a wrong measurement; it says the rule needs porting again for
 * this version (a failure where the rule is marked verified for it). Used
 * by `agent routes` and tests/gpu/test_cuda_route.c. */
#ifndef TC_ROUTE_CHECK_H
#define TC_ROUTE_CHECK_H

#include "tc_conv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char framework[96];   /* "pytorch 2.11.0+cu130" */
    char rule[64];        /* the rule's name, "pytorch-2" */
    bool verified;        /* the rule was checked against this version's source */
    bool cannot_say;      /* this PyTorch cannot name its choice: nothing compared */
    size_t convs;         /* distinct convs of the list */
    size_t checked;       /* convs x dtypes x layouts compared */
    size_t differ;        /* of which PyTorch and the rule disagree */
} tc_route_check_t;

/* Called for every comparison: PyTorch's backend name and the rule's. */
typedef void (*tc_route_row_fn)(const tc_conv_config_t *c, const char *pytorch,
                                const char *rule, void *arg);

/* Compare on GPU `device` ("cuda:I") the convs of `convs_path` (a conv
 * list, convlist.h) at `batch`. TC_ENODEV without that GPU, TC_ENOTFOUND
 * without a PyTorch that sees it, TC_EPARSE for a bad list. */
int tc_route_check(const char *device, const char *convs_path, uint32_t batch,
                   tc_route_row_fn row, void *arg, tc_route_check_t *out);

#endif
