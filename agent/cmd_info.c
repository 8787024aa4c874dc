/* agent info: this machine's devices and the libraries the agent uses. */
#include "agent_id.h"
#include "commands.h"
#include "gpu_framework.h"

#include "allocator.h"
#include "device.h"
#include "hostinfo.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"

#include <stdio.h>
#include <string.h>

static void s_print_device(const char *spec, const Traincast__V1__Device *d)
{
    printf("  %-7s %s\n", spec, d->name);
    printf("          uuid %s\n", d->uuid);
    if (d->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA)
        printf("          compute capability %s, %u SMs, %.1f GiB, %u MHz (memory %u MHz)\n",
               d->compute_capability, d->multiprocessors,
               (double)d->memory_bytes / (1024.0 * 1024 * 1024), d->clock_mhz,
               d->memory_clock_mhz);
    else
        printf("          %u physical cores, %u threads used, %.1f GiB, %u MHz\n",
               d->multiprocessors, d->threads, (double)d->memory_bytes / (1024.0 * 1024 * 1024),
               d->clock_mhz);
    printf("          %s %s; runtime %s; %s %s\n", d->library, d->library_version,
           d->runtime_version, d->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA ? "driver" : "os",
           d->driver_version);
    if (d->kind == TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA && d->routing && *d->routing)
        printf("          follows %s, conv routing %s\n", d->framework, d->routing);
}

int tc_cmd_info(int argc, char **argv)
{
    unsigned long threads = 0;
    const char *state = NULL;
    const char *allocator = NULL;
    const tc_opt_t opts[] = {
        {"threads", TC_OPT_UINT, &threads, "N",
         "threads of the cpu device to describe (default: all logical CPUs)"},
        {"state", TC_OPT_STR, &state, "DIR",
         "the agent state directory whose agent id to show (default $TRAINCAST_AGENT_DIR or "
         "~/.traincast/agent, when it exists)"},
        TC_ALLOCATOR_OPT(allocator),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "agent info",
        .summary = "List this machine's compute devices (the cpu, and every NVIDIA GPU as "
                   "cuda:INDEX) with the\nlibrary versions the benchmarks use. A device "
                   "backend that is missing says why.",
        .max_positional = 0,
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_parse(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown) {
        tc_cli_result_free(&cli);
        return rc;
    }
    if ((rc = tc_allocator_apply(allocator)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    if ((rc = tc_gpu_prepare("any")) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    char host[256], model[192], os[160], id[320];
    tc_host_name(host, sizeof host);
    tc_cpu_model(model, sizeof model);
    tc_os_version(os, sizeof os);
    if (tc_agent_id(NULL, state, id, sizeof id) < 0)
        tc_log_warn("%s; showing the id derived from this machine", tc_errmsg());
    printf("traincast agent %s on %s (%s)\nagent id %s\n\nlibraries:\n", TRAINCAST_VERSION, host,
           os, id);
    for (const tc_backend_iface_t *const *b = tc_backends(); *b; b++) {
        char v[256];
        (*b)->versions(v, sizeof v);
        printf("  %-7s %s\n", (*b)->kind, v);
    }
    printf("\ndevices:\n");
    int failed = 0;
    for (const tc_backend_iface_t *const *b = tc_backends(); *b; b++) {
        unsigned count = 0;
        char why[512];
        (*b)->enumerate(&count, why, sizeof why);
        if (count == 0) {
            printf("  %-7s none: %s\n", (*b)->kind, why);
            continue;
        }
        for (unsigned i = 0; i < count; i++) {
            char dspec[32];
            if (!strcmp((*b)->kind, "cpu"))
                snprintf(dspec, sizeof dspec, "%s", (*b)->kind);
            else
                snprintf(dspec, sizeof dspec, "%s:%u", (*b)->kind, i);
            tc_device_t *dev = NULL;
            Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
            rc = tc_device_open(dspec, (unsigned)threads, &dev);
            if (rc == 0)
                rc = tc_device_describe(dev, &d);
            if (rc == 0)
                s_print_device(dspec, &d);
            else {
                printf("  %-7s error: %s\n", dspec, tc_errmsg());
                if (!failed || tc_exit_status(rc) == 2)
                    failed = rc;
            }
            tc_device_close(&dev);
        }
    }
    tc_cli_result_free(&cli);
    if (failed)
        return tc_fail(failed, "some devices could not be opened (see above)");
    return 0;
}
