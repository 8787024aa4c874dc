/* aggregator: receives agents' results, stores them in PostgreSQL, fits
 * per-device models and predicts training time. */
#include "commands.h"

#include "tc_main.h"
#include "tc_paths.h"

static const tc_command_t s_commands[] = {
    {"migrate", tc_cmd_migrate, "apply pending database schema migrations"},
    {"serve", tc_cmd_serve, "receive and store agents' results; dispatch jobs"},
    {"status", tc_cmd_status, "agents, devices, backlog and what is stored"},
    {"keygen", tc_cmd_keygen, "create the aggregator's CURVE key pair"},
    {"fit", tc_cmd_fit, "fit and store a per-device model of the non-conv training time"},
    {"validate", tc_cmd_validate, "leave-one-CNN-out accuracy per device next to trace variability"},
    {"predict", tc_cmd_predict, "compare devices for a CNN over batch sizes"},
    {"report", tc_cmd_report, "write the comparison of devices for a CNN as one HTML page"},
    {"devices", tc_cmd_devices, "list the device classes the database knows"},
    {"models", tc_cmd_models, "list the model graphs the database knows"},
    {"export", tc_cmd_export, "write some devices' benchmarks and traces as a benchmark set"},
    {"import", tc_cmd_import, "load a benchmark set exported from another traincast database"},
    {0},
};

int main(int argc, char **argv)
{
    tc_resource_set_built(TC_MODEL_HARNESS_DIR, TC_MODEL_DATA_DIR);
    return tc_main_dispatch("aggregator",
                            "traincast aggregator: stores benchmark results and training traces "
                            "from agents, fits\nper-device models and predicts CNN training time "
                            "on every device.",
                            s_commands, argc, argv);
}
