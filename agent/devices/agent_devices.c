#include "agent_devices.h"
#include "hostload.h"

#include "allocator.h"
#include "device.h"
#include "operands.h"
#include "gpu_framework.h"
#include "tc_buf.h"
#include "tc_error.h"
#include "tc_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tc_agent_devices {
    tc_agent_device_t *items;
    size_t n;
    Traincast__V1__Device **described;
    size_t n_described;
};

/* Open, describe into an owned copy, close. */
static int s_describe_here(const char *spec, unsigned threads, Traincast__V1__Device **out)
{
    *out = NULL;
    tc_device_t *dev = NULL;
    int rc = tc_device_open(spec, threads, &dev);
    if (rc < 0)
        return rc;
    Traincast__V1__Device d = TRAINCAST__V1__DEVICE__INIT;
    rc = tc_device_describe(dev, &d);
    if (rc == 0) {
        /* A deep copy: the description's strings live in the device. */
        size_t len = traincast__v1__device__get_packed_size(&d);
        uint8_t *buf = malloc(len ? len : 1);
        if (buf) {
            traincast__v1__device__pack(&d, buf);
            *out = traincast__v1__device__unpack(NULL, len, buf);
        }
        free(buf);
        if (!*out)
            rc = tc_fail(TC_ENOMEM, "out of memory describing %s", spec);
    }
    tc_device_close(&dev);
    return rc;
}

typedef struct {
    const char *spec;
    unsigned threads;
    Traincast__V1__Device *device;
    int rc;
    char msg[1024];
} s_describe_t;

static void *s_describe_thread(void *arg)
{
    s_describe_t *d = arg;
    d->rc = s_describe_here(d->spec, d->threads, &d->device);
    if (d->rc < 0)
        snprintf(d->msg, sizeof d->msg, "%s", tc_errmsg());
    return NULL;
}

/* s_describe_here on a thread of its own, which ends with it. Opening the
 * cpu device runs an OpenMP team, and libgomp keeps a pool of threads for
 * every thread that ever ran one. Had the main thread kept one, the jobs'
 * benchmarks (on a job thread, with a pool of their own) would run with
 * more OpenMP threads alive than CPUs, and libgomp then spins only about a
 * hundred rounds before a waiting thread sleeps in the kernel: every
 * parallel region paid a wake-up that PyTorch, with one pool, does not
 * (on 2 threads `agent run` timed shufflenet_v2_x0_5's convs at 64 px at 7
 * to 13 ms, 1.7 to 1.9 ms once described apart). The thread's pool ends
 * with it. */
static int s_describe(const char *spec, unsigned threads, Traincast__V1__Device **out)
{
    *out = NULL;
    s_describe_t d = {.spec = spec, .threads = threads};
    pthread_t th;
    if (pthread_create(&th, NULL, s_describe_thread, &d) != 0)
        return tc_fail(TC_ENOMEM, "cannot start a thread to describe device %s", spec);
    pthread_join(th, NULL);
    if (d.rc < 0)
        return tc_fail(d.rc, "%s", d.msg);
    *out = d.device;
    return 0;
}

static int s_add(tc_agent_devices_t *self, const char *spec, unsigned threads, bool required)
{
    tc_agent_device_t *it = &self->items[self->n];
    memset(it, 0, sizeof *it);
    snprintf(it->spec, sizeof it->spec, "%s", spec);
    bool cpu = strncmp(spec, "cpu", 3) == 0;
    it->threads = cpu ? threads : 0;
    int rc = s_describe(spec, cpu ? threads : 0, &it->device);
    if (rc == 0) {
        if (cpu)
            it->threads = it->device->threads;
        self->n++;
        return 0;
    }
    if (!required) {
        tc_log_warn("leaving out %s: %s", spec, tc_errmsg());
        return 0;
    }
    /* A GPU this build cannot open can still be traced: the runner
     * describes it. */
    if (!cpu && rc == TC_EUNSUPPORTED) {
        snprintf(it->why, sizeof it->why, "%s", tc_errmsg());
        self->n++;
        return 0;
    }
    return tc_err_context(rc, "device %s", spec);
}

int tc_agent_devices_new(const char *device, unsigned long threads, tc_agent_devices_t **out)
{
    *out = NULL;
    if (threads > 4096)
        return tc_fail(TC_EUSAGE, "--threads %lu is implausible", threads);
    const tc_backend_iface_t *iface;
    unsigned index;
    if (device && tc_device_parse(device, &iface, &index) < 0)
        return TC_EUSAGE;
    tc_agent_devices_t *self = calloc(1, sizeof *self);
    if (!self)
        return tc_fail(TC_ENOMEM, "out of memory");
    int rc = 0;
    size_t cap = 1;
    unsigned gpus = 0;
    char why[512] = "";
    if (!device) {
        tc_backend_cuda.enumerate(&gpus, why, sizeof why);
        if (gpus == 0)
            tc_log_info("no GPU to measure: %s", why);
        cap += gpus;
    }
    self->items = calloc(cap, sizeof *self->items);
    self->described = calloc(cap, sizeof *self->described);
    if (!self->items || !self->described)
        TC_FAIL_GOTO(TC_ENOMEM, "out of memory");
    if (device) {
        char spec[32];
        if (!strcmp(iface->kind, "cpu"))
            snprintf(spec, sizeof spec, "cpu");
        else
            snprintf(spec, sizeof spec, "%s:%u", iface->kind, index);
        TC_TRY(s_add(self, spec, (unsigned)threads, true));
    } else {
        TC_TRY(s_add(self, "cpu", (unsigned)threads, true));
        for (unsigned g = 0; g < gpus; g++) {
            char spec[32];
            snprintf(spec, sizeof spec, "cuda:%u", g);
            TC_TRY(s_add(self, spec, 0, false));
        }
    }
    for (size_t i = 0; i < self->n; i++) {
        if (self->items[i].device)
            self->described[self->n_described++] = self->items[i].device;
    }
    *out = self;
    return 0;
err:
    tc_agent_devices_destroy(&self);
    return rc;
}

void tc_agent_devices_destroy(tc_agent_devices_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    tc_agent_devices_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        if (self->items[i].device)
            traincast__v1__device__free_unpacked(self->items[i].device, NULL);
    }
    free(self->items);
    free(self->described);
    free(self);
    *self_p = NULL;
}

size_t tc_agent_devices_count(const tc_agent_devices_t *self)
{
    return self->n;
}

const tc_agent_device_t *tc_agent_devices_get(const tc_agent_devices_t *self, size_t i)
{
    return i < self->n ? &self->items[i] : NULL;
}

void tc_agent_devices_described(const tc_agent_devices_t *self,
                                Traincast__V1__Device *const **devices, size_t *n)
{
    *devices = self->described;
    *n = self->n_described;
}

int tc_agent_devices_find(const tc_agent_devices_t *self, const char *uuid, const char *what,
                          const tc_agent_device_t **out)
{
    *out = NULL;
    for (size_t i = 0; i < self->n; i++) {
        const Traincast__V1__Device *d = self->items[i].device;
        if (d && d->uuid && !strcmp(d->uuid, uuid)) {
            *out = &self->items[i];
            return 0;
        }
    }
    tc_buf_t have = {0};
    for (size_t i = 0; i < self->n; i++) {
        const tc_agent_device_t *it = &self->items[i];
        if (it->device)
            tc_buf_printf(&have, "%s%s (%s)", i ? ", " : "", it->device->name, it->device->uuid);
        else
            tc_buf_printf(&have, "%s%s", i ? ", " : "", it->spec);
    }
    int rc = tc_fail(TC_ENODEV, "the request is for device %s, but this agent %s %s", uuid,
                     what, self->n ? tc_buf_str(&have) : "no device");
    tc_buf_free(&have);
    return rc;
}

int tc_agent_prepare(const char *allocator, bool quiet_given, double quiet_pct)
{
    int rc = tc_quiet_set_threshold(quiet_given, quiet_pct, "--quiet-threshold");
    if (rc == 0 && getenv("TRAINCAST_OPERANDS"))
        rc = tc_operands_apply(NULL); /* a bad value is an error, not the default */
    return rc < 0 ? rc : tc_allocator_apply(allocator);
}
