#include "trace_device.h"

#include "hostinfo.h"
#include "tc_error.h"

#include <oneapi/dnnl/dnnl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tc_trace_device_parse(const char *text, Traincast__V1__DeviceKind *kind, uint32_t *index)
{
    *index = 0;
    if (!strcmp(text, "cpu")) {
        *kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
        return 0;
    }
    if (!strcmp(text, "cuda")) {
        *kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
        return 0;
    }
    char *end;
    if (!strncmp(text, "cuda:", 5) && text[5] >= '0' && text[5] <= '9') {
        unsigned long i = strtoul(text + 5, &end, 10);
        if (!*end && i < 1024) {
            *kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
            *index = (uint32_t)i;
            return 0;
        }
    }
    return tc_fail(TC_EINVAL, "--device: expected cpu or cuda:I (e.g. cuda:0), got '%s'", text);
}

static uint64_t s_fnv1a(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* NOTE for merging with the device layer: this is the CPU identity the
 * oneDNN backend must also produce (or this function should call it). */
void tc_trace_device_cpu(uint32_t threads, tc_trace_device_t *out)
{
    memset(out, 0, sizeof *out);
    char model[256];
    tc_cpu_model(model, sizeof model);
    tc_host_name(out->host, sizeof out->host);
    out->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CPU;
    out->threads = threads;
    snprintf(out->name, sizeof out->name, "%s (%u threads)", model, threads);
    char count[16];
    snprintf(count, sizeof count, "%u", threads);
    uint64_t h = 0xcbf29ce484222325ull;
    h = s_fnv1a(out->host, h);
    h = s_fnv1a("\n", h);
    h = s_fnv1a(model, h);
    h = s_fnv1a("\n", h);
    h = s_fnv1a(count, h);
    snprintf(out->uuid, sizeof out->uuid, "cpu-%016llx", (unsigned long long)h);
    out->multiprocessors = tc_cpu_physical();
    out->memory_bytes = tc_mem_total();
    out->clock_mhz = tc_cpu_mhz();
    const dnnl_version_t *v = dnnl_version();
    snprintf(out->library, sizeof out->library, "onednn");
    snprintf(out->library_version, sizeof out->library_version, "%d.%d.%d", v->major, v->minor,
             v->patch);
}

/* NOTE for merging with the device layer: the cuDNN backend's describe()
 * knows the GPU's UUID from the CUDA runtime; use it here. */
void tc_trace_device_cuda(uint32_t index, const tc_trace_output_t *header,
                          tc_trace_device_t *out)
{
    memset(out, 0, sizeof *out);
    tc_host_name(out->host, sizeof out->host);
    out->kind = TRAINCAST__V1__DEVICE_KIND__DEVICE_KIND_CUDA;
    out->index = index;
    snprintf(out->name, sizeof out->name, "%s",
             header->device_name[0] ? header->device_name : "unknown CUDA device");
    if (header->device_uuid[0]) {
        snprintf(out->uuid, sizeof out->uuid, "%s", header->device_uuid);
    } else {
        char idx[16];
        snprintf(idx, sizeof idx, "%u", index);
        uint64_t h = 0xcbf29ce484222325ull;
        h = s_fnv1a(out->host, h);
        h = s_fnv1a("\n", h);
        h = s_fnv1a(out->name, h);
        h = s_fnv1a("\n", h);
        h = s_fnv1a(idx, h);
        snprintf(out->uuid, sizeof out->uuid, "cuda-%016llx", (unsigned long long)h);
    }
    snprintf(out->library, sizeof out->library, "%s", header->library);
    snprintf(out->library_version, sizeof out->library_version, "%s", header->library_version);
    snprintf(out->driver_version, sizeof out->driver_version, "%s", header->driver_version);
    snprintf(out->runtime_version, sizeof out->runtime_version, "%s", header->runtime_version);
}

void tc_trace_device_to_proto(const tc_trace_device_t *dev, Traincast__V1__Device *out)
{
    traincast__v1__device__init(out);
    out->kind = dev->kind;
    out->name = (char *)dev->name;
    out->uuid = (char *)dev->uuid;
    out->multiprocessors = dev->multiprocessors;
    out->threads = dev->threads;
    out->memory_bytes = dev->memory_bytes;
    out->clock_mhz = dev->clock_mhz;
    out->driver_version = (char *)dev->driver_version;
    out->runtime_version = (char *)dev->runtime_version;
    out->library = (char *)dev->library;
    out->library_version = (char *)dev->library_version;
    out->host = (char *)dev->host;
    out->index = dev->index;
}
