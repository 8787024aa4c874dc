/* Conv list files: a model's conv layers (and matmuls) as plain text, for
 * benchmarking configs without importing a model (hand-written lists, lists
 * exported from a framework, or jobs). One layer class per line:
 *
 *   # comment
 *   model resnet18
 *   # c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups count first bias
 *   3 224 224 64 7 7 3 3 2 2 1 1 1 1 1 0
 *   # matmul minibatch_in batch m n k trans_a trans_b weight bias count grad_a grad_b
 *   matmul rows 1 197 2304 768 0 1 1 1 12 1 1
 *
 * `count` is how many layers share the config; `first` is 1 when the conv
 * reads the network input (no backward-data pass); `bias` (optional, 0 when
 * left out) is 1 when the layer adds a bias; a last word `nhwc` marks a conv
 * whose input arrives channels-last (`nchw` when left out). A `matmul` line is
 * a matmul class (tc_matmul.h: where the mini-batch goes, none, rows or
 * batch, then the key's sizes and flags; tc_matmul_step.h: which operands
 * need a gradient; a weight always does). A `model NAME` line
 * starts the next model; lines before any belong to a model named after the
 * file. */
#ifndef TC_CONVLIST_H
#define TC_CONVLIST_H

#include "tc_model.h"

#include <stddef.h>
#include <stdio.h>

/* Called once per model with its layers (valid during the call). */
typedef int (*tc_convlist_fn)(const char *model, const tc_conv_usage_t *convs, size_t n,
                              void *arg);

/* Called once per model with its matmul classes, after fn with its convs
 * (none, for a model of matmuls alone). */
typedef int (*tc_matmullist_fn)(const char *model, const tc_matmul_usage_t *mms, size_t n,
                                void *arg);

/* Read a list of convs and matmuls. TC_ENOTFOUND / TC_EIO for the file,
 * TC_EPARSE naming file:line. */
int tc_oplist_read(const char *path, tc_convlist_fn fn, tc_matmullist_fn mfn, void *arg);

/* The same for a reader of convs alone: a matmul line is TC_EPARSE. */
int tc_convlist_read(const char *path, tc_convlist_fn fn, void *arg);

/* Write one model as a list that tc_oplist_read reads back to the same
 * layers: a `model NAME` line, its convs, then its matmuls, each kind under
 * a comment naming its columns (configs as the importer gives them: n and
 * minibatch 0; their dtype is the plan's and not written). TC_EIO when
 * writing fails. */
int tc_oplist_write(FILE *f, const char *model, const tc_conv_usage_t *convs, size_t n,
                    const tc_matmul_usage_t *mms, size_t n_mm);

#endif
