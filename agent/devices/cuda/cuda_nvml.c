/* The GPU's SM clock and board power through NVML, loaded at run time
 * (libnvidia-ml.so.1 comes with the driver, not with the toolkit, so the
 * agent must start without it). The few entry points used are declared
 * here with NVML's stable C ABI. */
#include "cuda_internal.h"

#include "tc_log.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int s_ret_t;                 /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct s_dev *s_dev_t;       /* nvmlDevice_t */
#define S_CLOCK_SM 1                 /* NVML_CLOCK_SM */

struct tc_nvml {
    void *lib;
    s_dev_t dev;
    s_ret_t (*shutdown)(void);
    s_ret_t (*clock)(s_dev_t, int, unsigned *);
    s_ret_t (*power)(s_dev_t, unsigned *);
    const char *(*error)(s_ret_t);
};

/* Every NVML call goes through this: on failure it records the call,
 * file:line and NVML's message, sets `rc` and jumps to `err`. */
#define TC_NVML_TRY(self, call)                                                                    \
    do {                                                                                           \
        s_ret_t r_ = (call);                                                                       \
        if (r_ != 0) {                                                                             \
            rc = tc_fail_at(TC_ELIB, __FILE__, __LINE__, "NVML: %s failed: %s", #call,             \
                            (self)->error ? (self)->error(r_) : "error");                          \
            goto err;                                                                              \
        }                                                                                          \
    } while (0)

tc_nvml_t *tc_nvml_open(const char *uuid)
{
    int rc = 0;
    bool inited = false;
    tc_nvml_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        tc_log_debug("no NVML (%s): clocks and power are not recorded", dlerror());
        free(n);
        return NULL;
    }
    s_ret_t (*init)(void) = (s_ret_t(*)(void))dlsym(n->lib, "nvmlInit_v2");
    s_ret_t (*by_uuid)(const char *, s_dev_t *) =
        (s_ret_t(*)(const char *, s_dev_t *))dlsym(n->lib, "nvmlDeviceGetHandleByUUID");
    n->shutdown = (s_ret_t(*)(void))dlsym(n->lib, "nvmlShutdown");
    n->clock = (s_ret_t(*)(s_dev_t, int, unsigned *))dlsym(n->lib, "nvmlDeviceGetClockInfo");
    n->power = (s_ret_t(*)(s_dev_t, unsigned *))dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    n->error = (const char *(*)(s_ret_t))dlsym(n->lib, "nvmlErrorString");
    if (!init || !by_uuid || !n->shutdown || !n->clock || !n->power) {
        tc_log_debug("NVML lacks an entry point this agent uses: clocks and power are not "
                     "recorded");
        dlclose(n->lib);
        free(n);
        return NULL;
    }
    TC_NVML_TRY(n, init());
    inited = true;
    TC_NVML_TRY(n, by_uuid(uuid, &n->dev));
    return n;
err:
    tc_log_debug("%s: clocks and power are not recorded", tc_errmsg());
    if (inited)
        n->shutdown();
    dlclose(n->lib);
    free(n);
    (void)rc;
    return NULL;
}

void tc_nvml_close(tc_nvml_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_nvml_t *n = *self_p;
    n->shutdown();
    dlclose(n->lib);
    free(n);
    *self_p = NULL;
}

int tc_nvml_read(tc_nvml_t *self, tc_telemetry_t *out)
{
    int rc = 0;
    unsigned mhz = 0, mw = 0;
    TC_NVML_TRY(self, self->clock(self->dev, S_CLOCK_SM, &mhz));
    TC_NVML_TRY(self, self->power(self->dev, &mw));
    out->sm_clock_mhz = mhz;
    out->power_w = mw / 1000.0;
    return 0;
err:
    return rc;
}
