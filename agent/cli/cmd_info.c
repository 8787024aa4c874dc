/* agent info: this machine's devices and the libraries the agent uses. */
#include "agent_id.h"
#include "agent_devices.h"
#include "commands.h"

#include "allocator.h"
#include "device.h"
#include "hostinfo.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_log.h"
#include "tc_table.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* --format csv|json: the tables agent, libraries and devices. */
static const tc_col_t s_agent_cols[] = {{"version", TC_COL_TEXT},
                                        {"host", TC_COL_TEXT},
                                        {"os", TC_COL_TEXT},
                                        {"agent_id", TC_COL_TEXT}};
static const tc_col_t s_lib_cols[] = {{"backend", TC_COL_TEXT}, {"versions", TC_COL_TEXT}};
static const tc_col_t s_dev_cols[] = {
    {"device", TC_COL_TEXT},          {"kind", TC_COL_TEXT},
    {"name", TC_COL_TEXT},            {"uuid", TC_COL_TEXT},
    {"compute_capability", TC_COL_TEXT}, {"multiprocessors", TC_COL_INT},
    {"threads", TC_COL_INT},          {"memory_bytes", TC_COL_INT},
    {"clock_mhz", TC_COL_INT},        {"memory_clock_mhz", TC_COL_INT},
    {"library", TC_COL_TEXT},         {"library_version", TC_COL_TEXT},
    {"runtime_version", TC_COL_TEXT}, {"driver_version", TC_COL_TEXT},
    {"framework", TC_COL_TEXT},       {"routing", TC_COL_TEXT},
    {"error", TC_COL_TEXT},
};
#define S_DEV_COLS (sizeof s_dev_cols / sizeof s_dev_cols[0])

/* A row of the devices table: the device, or (d NULL) why it is not there. */
static int s_device_row(tc_table_t *t, const char *spec, const char *kind,
                        const Traincast__V1__Device *d, const char *error)
{
    char mp[16] = "", thr[16] = "", mem[32] = "", clk[16] = "", mclk[16] = "";
    if (d) {
        snprintf(mp, sizeof mp, "%u", d->multiprocessors);
        snprintf(thr, sizeof thr, "%u", d->threads);
        snprintf(mem, sizeof mem, "%" PRIu64, d->memory_bytes);
        snprintf(clk, sizeof clk, "%u", d->clock_mhz);
        snprintf(mclk, sizeof mclk, "%u", d->memory_clock_mhz);
    }
    const char *row[S_DEV_COLS] = {spec, kind};
    if (d) {
        const char *v[] = {d->name,          d->uuid,           d->compute_capability,
                           mp,               thr,               mem,
                           clk,              mclk,              d->library,
                           d->library_version, d->runtime_version, d->driver_version,
                           d->framework ? d->framework : "", d->routing ? d->routing : ""};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            row[2 + i] = v[i];
    }
    row[S_DEV_COLS - 1] = error;
    return tc_table_add_row(t, row);
}

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

/* Parse --format, apply --allocator and ready the GPU framework, as every
 * device may be opened. */
static int s_prepare(const char *format, const char *allocator, tc_format_t *fmt)
{
    int rc;
    if ((rc = tc_format_parse(format, fmt)) < 0)
        return rc;
    return tc_agent_prepare(allocator, false, 0);
}

/* This agent: the host it runs on, its os and its id. */
typedef struct {
    char host[256], os[160], id[320];
} s_about_t;

/* Find out this agent's host, os and id (the id of the state directory, or
 * the one derived from this machine, with a warning). */
static void s_about(const char *state, s_about_t *a)
{
    char model[192];
    tc_host_name(a->host, sizeof a->host);
    tc_cpu_model(model, sizeof model);
    tc_os_version(a->os, sizeof a->os);
    if (tc_agent_id(NULL, state, a->id, sizeof a->id) < 0)
        tc_log_warn("%s; showing the id derived from this machine", tc_errmsg());
}

/* List every backend's library versions: a text line each, and a row of
 * the libraries table. */
static int s_libraries(tc_table_t *t, bool text)
{
    int rc = 0;
    for (const tc_backend_iface_t *const *b = tc_backends(); rc == 0 && *b; b++) {
        char v[4096];
        (*b)->versions(v, sizeof v);
        if (text)
            printf("  %-7s %s\n", (*b)->kind, v);
        const char *lib_row[] = {(*b)->kind, v};
        rc = tc_table_add_row(t, lib_row);
    }
    return rc;
}

/* Open and describe device i of backend b: a text entry and a row of the
 * devices table, or the error it gave (the first error, or one of exit
 * status 2, kept in *failed). */
static int s_one_device(tc_table_t *t, const tc_backend_iface_t *b, unsigned i,
                        unsigned threads, bool text, int *failed)
{
    int rc;
    char dspec[32];
    if (!strcmp(b->kind, "cpu"))
        snprintf(dspec, sizeof dspec, "%s", b->kind);
    else
        snprintf(dspec, sizeof dspec, "%s:%u", b->kind, i);
    tc_device_t *dev = NULL;
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    int drc = tc_device_open(dspec, threads, &dev);
    if (drc == 0)
        drc = tc_device_describe(dev, &d);
    if (drc == 0) {
        if (text)
            s_print_device(dspec, &d);
        rc = s_device_row(t, dspec, b->kind, &d, NULL);
    } else {
        if (text)
            printf("  %-7s error: %s\n", dspec, tc_errmsg());
        rc = s_device_row(t, dspec, b->kind, NULL, tc_errmsg());
        if (!*failed || tc_exit_status(drc) == 2)
            *failed = drc;
    }
    tc_device_close(&dev);
    return rc;
}

/* List every backend's devices (or why it has none) as text and as rows of
 * the devices table; *failed as s_one_device keeps it. */
static int s_devices(tc_table_t *t, unsigned threads, bool text, int *failed)
{
    int rc = 0;
    for (const tc_backend_iface_t *const *b = tc_backends(); rc == 0 && *b; b++) {
        unsigned count = 0;
        char why[512];
        (*b)->enumerate(&count, why, sizeof why);
        if (count == 0) {
            if (text)
                printf("  %-7s none: %s\n", (*b)->kind, why);
            rc = s_device_row(t, (*b)->kind, (*b)->kind, NULL, why);
            continue;
        }
        for (unsigned i = 0; rc == 0 && i < count; i++)
            rc = s_one_device(t, *b, i, threads, text, failed);
    }
    return rc;
}

int tc_cmd_info(int argc, char **argv)
{
    unsigned long threads = 0;
    const char *state = NULL;
    const char *allocator = NULL, *format = "table";
    const tc_opt_t opts[] = {
        {"format", TC_OPT_STR, &format, "table|csv|json",
         "output format (default: table, as text; csv and json: the tables agent, libraries "
         "and devices)"},
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
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_format_t fmt;
    if ((rc = s_prepare(format, allocator, &fmt)) < 0) {
        tc_cli_result_free(&cli);
        return rc;
    }
    bool text = fmt == TC_FMT_TABLE;
    tc_table_t *tables[3] = {tc_table_new("agent", s_agent_cols, 4),
                             tc_table_new("libraries", s_lib_cols, 2),
                             tc_table_new("devices", s_dev_cols, S_DEV_COLS)};
    if (!tables[0] || !tables[1] || !tables[2])
        rc = tc_fail(TC_ENOMEM, "out of memory");
    s_about_t about;
    s_about(state, &about);
    if (text)
        printf("traincast agent %s on %s (%s)\nagent id %s\n\nlibraries:\n", TRAINCAST_VERSION,
               about.host, about.os, about.id);
    const char *agent_row[] = {TRAINCAST_VERSION, about.host, about.os, about.id};
    if (rc == 0)
        rc = tc_table_add_row(tables[0], agent_row);
    if (rc == 0)
        rc = s_libraries(tables[1], text);
    if (text)
        printf("\ndevices:\n");
    int failed = 0;
    if (rc == 0)
        rc = s_devices(tables[2], (unsigned)threads, text, &failed);
    if (rc == 0 && !text)
        rc = tc_table_print(stdout, fmt, tables, 3);
    for (size_t k = 0; k < 3; k++)
        tc_table_destroy(&tables[k]);
    tc_cli_result_free(&cli);
    if (rc < 0)
        return rc;
    if (failed)
        return tc_fail(failed, "some devices could not be opened (see above)");
    return 0;
}
