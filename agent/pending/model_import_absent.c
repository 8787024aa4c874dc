/* Built only while the tree has no ONNX importer (no common/tc_model*.c;
 * see agent/CMakeLists.txt): the model-graph calls report that the
 * importer is missing, so `agent trace` says to use --no-graph. This file
 * drops out of the build by itself once the importer is present and can
 * then be deleted. */
#include "tc_error.h"
#include "tc_model.h"

#include <stddef.h>

static int s_absent(void)
{
    return tc_fail(TC_EUNSUPPORTED, "this build has no ONNX model importer (common/tc_model.h "
                                    "is not implemented yet); run with --no-graph to record "
                                    "traces without the model graph");
}

int tc_model_load_spec(const char *spec, const tc_model_opts_t *opts, tc_model_t **out)
{
    (void)spec, (void)opts;
    *out = NULL;
    return s_absent();
}

void tc_model_destroy(tc_model_t **self_p)
{
    if (self_p)
        *self_p = NULL;
}

const char *tc_model_id(const tc_model_t *m)
{
    (void)m;
    return "";
}

int tc_model_to_proto(const tc_model_t *m, Traincast__V1__ModelGraph **out)
{
    (void)m;
    *out = NULL;
    return s_absent();
}

void tc_model_proto_free(Traincast__V1__ModelGraph **g_p)
{
    if (g_p)
        *g_p = NULL;
}
