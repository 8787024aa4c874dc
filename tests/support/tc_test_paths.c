/* Every test program finds the harness and the committed exports in the
 * source tree it was built from, as the executables do (tc_paths.h). */
#include "tc_paths.h"

__attribute__((constructor)) static void s_built_paths(void)
{
    tc_resource_set_built(TC_SOURCE_DIR "/agent/harness", TC_SOURCE_DIR "/tests/data");
}
