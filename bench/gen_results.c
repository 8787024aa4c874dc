/* tc-gen-results: write a result file of synthetic conv results (as
 * `agent bench --out` would) for the transport benchmark. */
#include "tc_test_gen.h"

#include "tc_cli.h"
#include "tc_error.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    const char *out = NULL, *agent = "bench-agent", *device = "gen-cpu", *uuid = "gen-cpu-0";
    unsigned long messages = 1000, results = 1, first = 0;
    const tc_opt_t opts[] = {
        {"out", TC_OPT_STR, &out, "FILE", "result file to append to", true},
        {"messages", TC_OPT_UINT, &messages, "N", "messages to write (default 1000)"},
        {"results", TC_OPT_UINT, &results, "N", "conv results per message (default 1)"},
        {"first", TC_OPT_UINT, &first, "N", "index of the first result (default 0)"},
        {"agent", TC_OPT_STR, &agent, "ID", "agent id in the envelopes"},
        {"device", TC_OPT_STR, &device, "NAME", "device name"},
        {"uuid", TC_OPT_STR, &uuid, "UUID", "device uuid"},
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "tc-gen-results",
        .summary = "Append synthetic conv results to a result file (fresh message ids).",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc == 0 && !cli.help_shown) {
        tc_gen_opts_t o = tc_gen_defaults(agent);
        o.device_name = device;
        o.device_uuid = uuid;
        o.results_per_message = (unsigned)results;
        rc = tc_gen_write(out, &o, first, messages);
    }
    tc_cli_result_free(&cli);
    if (rc < 0) {
        fprintf(stderr, "tc-gen-results: error: %s\n", tc_errmsg());
        return tc_exit_status(rc);
    }
    return 0;
}
