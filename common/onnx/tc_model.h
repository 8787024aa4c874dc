/* A CNN's structure, imported from ONNX: the model graph IR and what the
 * rest of traincast extracts from it (conv configs, non-conv features, the
 * wire form).
 *
 * This header is the contract between the importer (common/tc_onnx*.c,
 * tc_shape*.c, tc_model*.c) and its users (agent bench/trace planners,
 * aggregator predict). */
#ifndef TC_MODEL_H
#define TC_MODEL_H

#include "tc_conv.h"
#include "tc_features.h"
#include "tc_matmul.h"
#include "tc_matmul_step.h"
#include "traincast.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TC_MODEL_MAX_RANK 8

typedef struct tc_model tc_model_t;

typedef struct {
    bool allow_unknown;     /* unknown ops become generic element-wise layers */
    uint32_t input_size;    /* 0: the file's own spatial size */
    size_t max_file_bytes;  /* 0: default cap (256 MiB) */
} tc_model_opts_t;

/* One layer of the graph IR, after shape inference. Shapes exclude the
 * symbolic batch dimension (dims[0] is channels for NCHW tensors), and with
 * it a multiple of the batch folded into that axis (an attention's heads in
 * [T, 12 B, 64]); elems_in and elems_out count the multiple.
 *
 * Layers are the ONNX nodes that touch per-sample data or own parameters.
 * Nodes the importer folds away (constant shape arithmetic such as
 * Constant -> Shape -> Gather -> Unsqueeze -> Concat feeding a Reshape)
 * are not layers: they do not exist when the framework trains. */
typedef struct {
    const char *name;
    const char *op;           /* ONNX op type */
    tc_op_class_t op_class;
    int rank_in;              /* of the first input, batch excluded */
    int64_t in_shape[TC_MODEL_MAX_RANK];
    int rank_out;             /* of the first output, batch excluded */
    int64_t out_shape[TC_MODEL_MAX_RANK];
    uint64_t params;          /* trainable parameters owned by this node */
    double flops;             /* forward FLOPs per sample (2 per MAC) */
    uint64_t elems_in;        /* elements read per sample, all data inputs */
    uint64_t elems_out;       /* elements written per sample */
    bool is_conv;
    tc_conv_config_t conv;    /* valid when is_conv; n = 0 */
    bool first_layer;         /* conv whose input is the network input */
    /* Added by the importer (extensions of the contract): */
    double macs;              /* multiply-accumulates per sample (Conv, Gemm, MatMul) */
    bool out_batched;         /* the first output carries the batch (out_shape excludes it) */
    bool is_matmul;           /* a Gemm or MatMul of matrices (not a matrix-vector product) */
    tc_matmul_config_t matmul; /* valid when is_matmul; minibatch = 0 */
    bool matmul_grad_a;       /* its operand A needs a gradient (depends on a parameter) */
    bool matmul_grad_b;       /* its operand B needs one (a weight always does) */
} tc_model_node_t;

/* A deduplicated conv configuration and how many layers use it. The key is
 * the config together with first_layer: a config used both by the first
 * conv and deeper in the network is listed twice, since only the deeper use
 * needs a backward-data pass. first_layer is set for convs whose input does
 * not depend on any parameter (the network input, possibly normalized). */
typedef struct {
    tc_conv_config_t config;  /* n = 0 */
    uint32_t multiplicity;
    bool first_layer;         /* no backward-data pass */
} tc_conv_usage_t;

/* A deduplicated matmul configuration and how many layers use it, the
 * matmul's counterpart of tc_conv_usage_t: the key is the config together
 * with which operands need a gradient (they decide the directions a step
 * runs, tc_matmul_step.h). */
typedef struct {
    tc_matmul_config_t config; /* minibatch = 0 */
    tc_matmul_use_t use;       /* grad_a, grad_b, multiplicity */
} tc_matmul_usage_t;

/* Import from a file or memory. Errors: TC_EPARSE (corrupt, truncated,
 * hostile), TC_EUNSUPPORTED (an op it does not know, naming op and node,
 * unless allow_unknown), TC_ELIMIT (over a size cap), TC_EIO. Never crashes
 * or allocates without bound on hostile input. `name` labels the model. */
int tc_model_load_file(const char *path, const tc_model_opts_t *opts, tc_model_t **out);
int tc_model_load_bytes(const uint8_t *data, size_t len, const char *name,
                        const tc_model_opts_t *opts, tc_model_t **out);

/* Resolve "torchvision:NAME" (exported through agent/harness when PyTorch is
 * installed, else the committed export in tests/data), "FILE.py:FUNC" (the
 * torch.nn.Module that function of that Python file returns, exported
 * through the harness; PyTorch needed) or a path to an .onnx file.
 * `input_size` 0 means the model's default.
 *
 * torchvision exports are cached as $TRAINCAST_CACHE/onnx/NAME[@SIZE].onnx
 * (default cache ~/.cache/traincast), Python ones as
 * $TRAINCAST_CACHE/onnx/python/STEM.FUNC-<12 hex of the file's
 * SHA-256>[@SIZE].onnx, so that an edited file is exported again. PyTorch is looked for with
 * $TRAINCAST_PYTHON (default /usr/bin/python3); the harness and the committed
 * exports are found by tc_resource_dir (tc_paths.h). Errors beyond the loaders': TC_ENOTFOUND (no such torchvision model,
 * or no PyTorch and no committed export; the message says how to list the
 * names), TC_EUNSUPPORTED (a non-default input size without PyTorch),
 * TC_EINVAL (torchvision cannot build the model for that input size, e.g.
 * vit_b_32 at 112: the message says why), TC_ECHILD (the export failed). */
int tc_model_load_spec(const char *spec, const tc_model_opts_t *opts, tc_model_t **out);

/* The agent's reading of a --models entry: a bare NAME (no ':', '/' or ".onnx") is
 * torchvision:NAME, as the trace runner reads it; any other spec is copied as given.
 * Returns `out`. */
const char *tc_model_spec_expand(const char *spec, char *out, size_t size);

/* Whether a spec names a file (FILE.onnx or FILE.py:FUNC) rather than a torchvision
 * model, bare or prefixed: a file's model is identified by its graph. */
bool tc_model_spec_is_file(const char *spec);

void tc_model_destroy(tc_model_t **self_p);

/* Identity: "torchvision:resnet50@224", "python:STEM.FUNC@224" (the file's
 * name without .py and the function's: a model id names one structure, so
 * a function whose architecture changes should change its name too) or
 * "onnx:<12 hex of sha256>@224".
 * The SHA-256 is common/util/tc_sha256.c's. */
const char *tc_model_id(const tc_model_t *m);
const char *tc_model_name(const tc_model_t *m);
const char *tc_model_sha256(const tc_model_t *m); /* of the source bytes, hex */
/* "" or, for a file that looks exported for inference (batch norm in eval
 * mode, or no batch norm and no dropout at all: folded into the convs), why
 * and how to export it for training. */
const char *tc_model_export_warning(const tc_model_t *m);
void tc_model_input(const tc_model_t *m, uint32_t *c, uint32_t *h, uint32_t *w);
uint64_t tc_model_params(const tc_model_t *m);
double tc_model_flops(const tc_model_t *m); /* forward, per sample */

/* Layers in topological order (the file's order when it is sorted). */
size_t tc_model_node_count(const tc_model_t *m);
const tc_model_node_t *tc_model_node(const tc_model_t *m, size_t i);

/* ---- extensions of the contract (added with the importer) ---- */

/* Forward multiply-accumulates per sample of Conv, Gemm and MatMul. */
double tc_model_macs(const tc_model_t *m);
/* ONNX nodes in the file, layers and folded ones together. */
size_t tc_model_onnx_node_count(const tc_model_t *m);
/* The inferred shape of any value (node output, initializer, the input) by
 * name, batch excluded; *batched says whether it carries the batch.
 * Returns 0 or TC_ENOTFOUND. `dims` holds TC_MODEL_MAX_RANK entries. */
int tc_model_value_shape(const tc_model_t *m, const char *value, int *rank, int64_t *dims,
                         bool *batched);
/* A metadata_props entry of the file ("traincast.export_mode", ...), or
 * NULL. */
const char *tc_model_meta(const tc_model_t *m, const char *key);

/* Names of nodes that were accepted as unknown (allow_unknown). */
size_t tc_model_unknown_count(const tc_model_t *m);
const char *tc_model_unknown(const tc_model_t *m, size_t i);

/* Deduplicated convs, in first-use order: one by one, or all of them as
 * one array of tc_model_conv_count (NULL when there are none). */
size_t tc_model_conv_count(const tc_model_t *m);
const tc_conv_usage_t *tc_model_conv(const tc_model_t *m, size_t i);
const tc_conv_usage_t *tc_model_convs(const tc_model_t *m);

/* Deduplicated matmuls (Gemm, MatMul of matrices), in first-use order, one
 * by one or as one array of tc_model_matmul_count (NULL when none). */
size_t tc_model_matmul_count(const tc_model_t *m);
const tc_matmul_usage_t *tc_model_matmul(const tc_model_t *m, size_t i);
const tc_matmul_usage_t *tc_model_matmuls(const tc_model_t *m);

/* Non-conv features at a batch size. */
void tc_model_features(const tc_model_t *m, unsigned batch, tc_features_t *out);

/* The wire form (layers, convs, totals). Free with tc_model_proto_free. */
int tc_model_to_proto(const tc_model_t *m, Traincast__V1__ModelGraph **out);
void tc_model_proto_free(Traincast__V1__ModelGraph **g_p);

#endif
