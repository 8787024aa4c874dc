/* agent: measures conv benchmarks and training traces on this machine's
 * devices and sends them to the aggregator. */
#include "allocator.h"
#include "commands.h"

#include "tc_main.h"
#include "tc_paths.h"

static const tc_command_t s_commands[] = {
    {"info", tc_cmd_info, "list this machine's devices and library versions"},
    {"bench-conv", tc_cmd_bench_conv, "benchmark one convolution on a device, every algorithm"},
    {"bench-matmul", tc_cmd_bench_matmul,
     "benchmark one matmul (a Linear's or an attention's GEMM) on a device"},
    {"bench", tc_cmd_bench, "benchmark every conv of some models at some batch sizes"},
    {"keygen", tc_cmd_keygen, "create this agent's CURVE key pair"},
    {"push", tc_cmd_push, "send result files (bench/trace --out) to the aggregator"},
    {"status", tc_cmd_status, "the journal: messages waiting, and those refused and why"},
    {"serve", tc_cmd_serve, "stay connected and run the aggregator's jobs"},
    {"run", tc_cmd_run, "benchmark, trace and send in one go"},
    {"model", tc_cmd_model, "describe a model: layers, conv and matmul configs, non-conv features"},
    {"trace", tc_cmd_trace, "train models through the real framework and record iteration times"},
    {"routes", tc_cmd_routes, "compare the GPU conv routing with the installed PyTorch's own"},
    {0},
};

int main(int argc, char **argv)
{
    tc_resource_set_built(TC_MODEL_HARNESS_DIR, TC_MODEL_DATA_DIR);
    /* Measuring commands may start this program again with another
     * allocator (allocator.h). */
    tc_allocator_set_argv(argc, argv);
    return tc_main_dispatch("agent",
                            "traincast agent: benchmarks convolutions and traces training on "
                            "this machine's devices,\nand sends the results to the aggregator.",
                            s_commands, argc, argv);
}
