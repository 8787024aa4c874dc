/* The model graph a trace carries, so the aggregator always knows the
 * structure behind a time. */
#ifndef TC_TRACE_GRAPH_H
#define TC_TRACE_GRAPH_H

#include "tc_wire.h"

#include <stddef.h>
#include <stdint.h>

/* The runner's model name for a --models item: "torchvision:resnet50" and
 * "resnet50" both give "resnet50"; anything else is passed as written. */
const char *tc_trace_runner_model(const char *spec);

/* The default input size: 299 for inception_v3, else 224. */
uint32_t tc_trace_default_input(const char *runner_model);

/* The model id a trace is stored under when it carries no graph:
 * "torchvision:NAME@SIZE", as the importer names torchvision models. */
void tc_trace_model_id(const char *runner_model, uint32_t input_size, char *out, size_t size);

/* Import `spec` (common/onnx/tc_model.h) at `input_size` and return its wire
 * form and model id. Free with tc_trace_graph_free. Errors are the
 * importer's, with the spec named. */
int tc_trace_graph_load(const char *spec, uint32_t input_size, Traincast__V1__ModelGraph **out,
                        char *model_id, size_t size);
void tc_trace_graph_free(Traincast__V1__ModelGraph **g_p);

#endif
