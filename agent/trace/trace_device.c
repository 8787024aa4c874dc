#include "trace_device.h"

#include "device.h"
#include "hostinfo.h"
#include "tc_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tc_trace_device_parse(const char *text, Traincast__V1__DeviceKind *kind, uint32_t *index)
{
    const tc_backend_iface_t *iface;
    unsigned i;
    if (tc_device_parse(text, &iface, &i) < 0)
        return tc_fail(TC_EINVAL, "--device: expected cpu or cuda:I (e.g. cuda:0), got '%s'",
                       text);
    *kind = strcmp(iface->kind, "cpu") == 0 ? TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU
                                            : TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    *index = i;
    return 0;
}

static void s_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

int tc_trace_device_describe(const char *spec, uint32_t threads, tc_trace_device_t *out)
{
    memset(out, 0, sizeof *out);
    tc_device_t *dev = NULL;
    int rc = tc_device_open(spec, threads, &dev);
    if (rc < 0)
        return rc;
    Traincast__V1__Device d;
    traincast__v1__device__init(&d);
    rc = tc_device_describe(dev, &d);
    if (rc == 0) {
        out->kind = d.kind;
        out->index = d.index;
        s_copy(out->name, sizeof out->name, d.name);
        s_copy(out->uuid, sizeof out->uuid, d.uuid);
        s_copy(out->compute_capability, sizeof out->compute_capability, d.compute_capability);
        out->multiprocessors = d.multiprocessors;
        out->threads = d.threads;
        out->memory_bytes = d.memory_bytes;
        out->clock_mhz = d.clock_mhz;
        out->memory_clock_mhz = d.memory_clock_mhz;
        s_copy(out->driver_version, sizeof out->driver_version, d.driver_version);
        s_copy(out->runtime_version, sizeof out->runtime_version, d.runtime_version);
        s_copy(out->library, sizeof out->library, d.library);
        s_copy(out->library_version, sizeof out->library_version, d.library_version);
        s_copy(out->host, sizeof out->host, d.host);
        tc_device_environment(dev, &out->env);
    }
    tc_device_close(&dev);
    return rc;
}

static uint64_t s_fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

void tc_trace_device_from_header(uint32_t index, const tc_trace_output_t *header,
                                 tc_trace_device_t *out)
{
    memset(out, 0, sizeof *out);
    tc_host_name(out->host, sizeof out->host);
    out->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    out->index = index;
    s_copy(out->name, sizeof out->name,
           header->device_name[0] ? header->device_name : "unknown CUDA device");
    if (header->device_uuid[0]) {
        s_copy(out->uuid, sizeof out->uuid, header->device_uuid);
    } else {
        char key[700];
        snprintf(key, sizeof key, "%s\n%s\n%u", out->host, out->name, index);
        snprintf(out->uuid, sizeof out->uuid, "cuda-%016llx",
                 (unsigned long long)s_fnv1a(key, 0xcbf29ce484222325ull));
    }
    s_copy(out->library, sizeof out->library, header->library);
    s_copy(out->library_version, sizeof out->library_version, header->library_version);
    s_copy(out->driver_version, sizeof out->driver_version, header->driver_version);
    s_copy(out->runtime_version, sizeof out->runtime_version, header->runtime_version);
}

void tc_trace_device_to_proto(const tc_trace_device_t *dev, Traincast__V1__Device *out)
{
    traincast__v1__device__init(out);
    out->kind = dev->kind;
    out->name = (char *)dev->name;
    out->uuid = (char *)dev->uuid;
    out->compute_capability = (char *)dev->compute_capability;
    out->multiprocessors = dev->multiprocessors;
    out->threads = dev->threads;
    out->memory_bytes = dev->memory_bytes;
    out->clock_mhz = dev->clock_mhz;
    out->memory_clock_mhz = dev->memory_clock_mhz;
    out->driver_version = (char *)dev->driver_version;
    out->runtime_version = (char *)dev->runtime_version;
    out->library = (char *)dev->library;
    out->library_version = (char *)dev->library_version;
    out->host = (char *)dev->host;
    out->index = dev->index;
}
