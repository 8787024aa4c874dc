/* The job handlers this build has: the place where the device layer (conv
 * benchmarks) and the trace runner plug into `agent serve` and `agent run`.
 *
 * Each entry of tc_job_handlers_t left NULL makes the matching job fail with
 * a message saying this build lacks it; nothing is faked. Wiring a module in
 * is a few lines here: set ctx to its state (built from `settings`), point
 * devices/bench/bench_models/trace at functions with the signatures of
 * agent/jobs.h, and free ctx in destroy. */
#include "jobs.h"

#include <string.h>

int tc_job_handlers_builtin(const tc_job_settings_t *settings, tc_job_handlers_t *out)
{
    (void)settings;
    memset(out, 0, sizeof *out);
    return 0;
}
