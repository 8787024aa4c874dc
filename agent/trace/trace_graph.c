#include "trace_graph.h"

#include "tc_error.h"
#include "tc_model.h"

#include <stdio.h>
#include <string.h>

const char *tc_trace_runner_model(const char *spec)
{
    static const char prefix[] = "torchvision:";
    return strncmp(spec, prefix, sizeof prefix - 1) == 0 ? spec + sizeof prefix - 1 : spec;
}

uint32_t tc_trace_default_input(const char *runner_model)
{
    return strcmp(runner_model, "inception_v3") == 0 ? 299 : 224;
}

void tc_trace_model_id(const char *runner_model, uint32_t input_size, char *out, size_t size)
{
    snprintf(out, size, "torchvision:%s@%u", runner_model, input_size);
}

int tc_trace_graph_load(const char *spec, uint32_t input_size, Traincast__V1__ModelGraph **out,
                        char *model_id, size_t size)
{
    *out = NULL;
    char full[512];
    tc_model_opts_t opts = {.input_size = input_size};
    tc_model_t *m = NULL;
    int rc = tc_model_load_spec(tc_model_spec_expand(spec, full, sizeof full), &opts, &m);
    if (rc == 0)
        rc = tc_model_to_proto(m, out);
    if (rc == 0)
        snprintf(model_id, size, "%s", tc_model_id(m));
    tc_model_destroy(&m);
    if (rc < 0) {
        tc_model_proto_free(out);
        return tc_err_context(rc, "the graph of model '%s'", spec);
    }
    return 0;
}

void tc_trace_graph_free(Traincast__V1__ModelGraph **g_p)
{
    tc_model_proto_free(g_p);
}
