/* tc-dump-results: the conv benchmarks of a result file (`agent bench
 * --out`) as tab-separated text, for the benchmark scripts (bench/
 * faithfulness.py):
 *
 *   device  c h w k r s pad_h pad_w stride_h stride_w dil_h dil_w groups
 *   batch  direction  algo  median_ms  min_ms  max_ms  repetitions
 *
 * one line per result, in file order. */
#include "tc_cli.h"
#include "tc_conv.h"
#include "tc_error.h"
#include "tc_resultfile.h"
#include "tc_wire.h"

#include <stdio.h>

static int s_print(const tc_envelope_t *env, void *arg)
{
    (void)arg;
    if (env->body_case != TRAINCAST__V1__ENVELOPE__BODY_CONV_RESULTS || !env->conv_results)
        return 0;
    const Traincast__V1__ConvResults *cr = env->conv_results;
    const char *device = cr->device && cr->device->name ? cr->device->name : "";
    for (size_t i = 0; i < cr->n_results; i++) {
        const Traincast__V1__ConvResult *r = cr->results[i];
        if (!r || !r->config)
            continue;
        tc_conv_config_t c;
        tc_conv_config_from_proto(r->config, &c);
        printf("%s\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%u\t%s\t%s\t%.6f\t%.6f\t%."
               "6f\t%u\n",
               device, c.c, c.h, c.w, c.k, c.r, c.s, c.pad_h, c.pad_w, c.stride_h, c.stride_w,
               c.dilation_h, c.dilation_w, c.groups, c.n, tc_direction_name(r->direction),
               r->algo ? r->algo : "", r->median_ms, r->min_ms, r->max_ms, r->repetitions);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const tc_cmd_spec_t spec = {
        .prog = "tc-dump-results",
        .summary = "Print the conv benchmarks of result files as tab-separated lines.",
        .positional = "FILE...",
        .min_positional = 1,
        .max_positional = -1,
        .opts = (const tc_opt_t[]){{0}},
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    for (int i = 0; rc == 0 && !cli.help_shown && i < cli.n_positional; i++)
        rc = tc_resultfile_read(cli.positional[i], false, s_print, NULL, NULL);
    tc_cli_result_free(&cli);
    if (rc < 0) {
        fprintf(stderr, "tc-dump-results: error: %s\n", tc_errmsg());
        return tc_exit_status(rc);
    }
    return 0;
}
