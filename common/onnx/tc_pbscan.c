#include "tc_pbscan.h"

#include "tc_error.h"

#include <string.h>

#define S_MAX_FRAMES 256

typedef struct {
    const ProtobufCMessageDescriptor *desc;
    size_t end;
} s_frame_t;

/* Reads a varint at *pos (< end); 0 or -1 when malformed or truncated. */
static int s_varint(const uint8_t *d, size_t end, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end)
            return -1;
        uint8_t b = d[(*pos)++];
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Size protobuf-c gives one element of a scalar field in memory. */
static size_t s_scalar_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

static int s_add(size_t *total, size_t add, size_t cap)
{
    if (add > cap || *total > cap - add)
        return -1;
    *total += add;
    return 0;
}

int tc_pbscan(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
              size_t max_depth, size_t max_alloc, tc_pbscan_stats_t *stats)
{
    s_frame_t stack[S_MAX_FRAMES];
    if (max_depth > S_MAX_FRAMES)
        max_depth = S_MAX_FRAMES;
    size_t depth = 1, pos = 0, alloc = desc->sizeof_message, messages = 1, deepest = 1;
    stack[0] = (s_frame_t){desc, len};
    while (depth > 0) {
        s_frame_t *f = &stack[depth - 1];
        if (pos == f->end) {
            depth--;
            continue;
        }
        size_t at = pos;
        uint64_t key;
        if (s_varint(data, f->end, &pos, &key) < 0)
            return tc_fail(TC_EPARSE, "malformed field key at byte %zu", at);
        uint64_t num = key >> 3;
        unsigned wire = (unsigned)(key & 7);
        if (num == 0 || num > 0x1fffffff)
            return tc_fail(TC_EPARSE, "invalid field number at byte %zu", at);
        const ProtobufCFieldDescriptor *fd =
            protobuf_c_message_descriptor_get_field(f->desc, (unsigned)num);
        size_t add = 0;
        uint64_t v;
        switch (wire) {
        case 0:
            if (s_varint(data, f->end, &pos, &v) < 0)
                return tc_fail(TC_EPARSE, "truncated varint at byte %zu", at);
            add = fd ? s_scalar_size(fd->type) : 32;
            break;
        case 1:
        case 5: {
            size_t n = wire == 1 ? 8 : 4;
            if (f->end - pos < n)
                return tc_fail(TC_EPARSE, "truncated fixed-size field at byte %zu", at);
            pos += n;
            add = fd ? s_scalar_size(fd->type) : 32 + n;
            break;
        }
        case 2: {
            if (s_varint(data, f->end, &pos, &v) < 0)
                return tc_fail(TC_EPARSE, "truncated length at byte %zu", at);
            if (v > f->end - pos)
                return tc_fail(TC_EPARSE, "field at byte %zu claims %llu bytes, only %zu remain",
                               at, (unsigned long long)v, f->end - pos);
            size_t n = (size_t)v;
            if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth >= max_depth)
                    return tc_fail(TC_ELIMIT, "messages nested deeper than %zu at byte %zu",
                                   max_depth, at);
                const ProtobufCMessageDescriptor *sub = fd->descriptor;
                add = sub->sizeof_message + sizeof(void *);
                messages++;
                stack[depth++] = (s_frame_t){sub, pos + n};
                if (depth > deepest)
                    deepest = depth;
                break; /* pos now walks the sub-message */
            }
            if (fd && fd->label == PROTOBUF_C_LABEL_REPEATED &&
                fd->type != PROTOBUF_C_TYPE_STRING && fd->type != PROTOBUF_C_TYPE_BYTES) {
                /* Packed scalars: one element per varint or per fixed size. */
                size_t count = 0;
                if (fd->type == PROTOBUF_C_TYPE_DOUBLE || fd->type == PROTOBUF_C_TYPE_FIXED64 ||
                    fd->type == PROTOBUF_C_TYPE_SFIXED64)
                    count = n / 8;
                else if (fd->type == PROTOBUF_C_TYPE_FLOAT ||
                         fd->type == PROTOBUF_C_TYPE_FIXED32 ||
                         fd->type == PROTOBUF_C_TYPE_SFIXED32)
                    count = n / 4;
                else
                    for (size_t i = 0; i < n; i++)
                        count += !(data[pos + i] & 0x80);
                add = count * s_scalar_size(fd->type);
            } else {
                add = n + 1 + (fd ? s_scalar_size(fd->type) : 32);
            }
            pos += n;
            break;
        }
        default:
            return tc_fail(TC_EPARSE, "unsupported wire type %u at byte %zu", wire, at);
        }
        if (s_add(&alloc, add, max_alloc) < 0)
            return tc_fail(TC_ELIMIT,
                           "unpacking would allocate more than %zu MiB (hostile or corrupt "
                           "file?)",
                           max_alloc >> 20);
    }
    if (pos != len)
        return tc_fail(TC_EPARSE, "trailing bytes at %zu", pos);
    if (stats) {
        stats->messages = messages;
        stats->max_depth = deepest;
        stats->alloc_bytes = alloc;
    }
    return 0;
}
