/* Is it ONNX at all? A file that is not (text, an image, an archive, a
 * PyTorch checkpoint, nothing) gets "not an ONNX file (what it looks like)"
 * instead of whatever the protobuf scan trips over first; a truncated or
 * corrupted ONNX file passes and keeps the scan's precise error.
 *
 * The test: no known magic number, and the first protobuf key is a field of
 * ModelProto with the wire type of its type. Exporters write fields in
 * number order, so an ONNX file starts with ir_version (0x08); 9 of the 256
 * possible first bytes pass, so most other files fail here. */
#include "tc_graph.h"

#include "tc_error.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    size_t at;
    const char *magic;
    size_t len;
    const char *what;
} s_magic_t;

#define S_M(at, m, what) {at, m, sizeof m - 1, what}

static const s_magic_t s_magics[] = {
    S_M(0, "PK\x03\x04", "a zip archive, such as a PyTorch .pt or .pth checkpoint; export the "
                         "model with torch.onnx.export"),
    S_M(0, "PK\x05\x06", "an empty zip archive"),
    S_M(0, "\x89PNG\r\n\x1a\n", "a PNG image"),
    S_M(0, "\xff\xd8\xff", "a JPEG image"),
    S_M(0, "GIF8", "a GIF image"),
    S_M(0, "%PDF", "a PDF document"),
    S_M(0, "\x7f" "ELF", "an ELF executable or library"),
    S_M(0, "\x1f\x8b", "gzip-compressed data; decompress it first"),
    S_M(0, "\xfd" "7zXZ", "xz-compressed data; decompress it first"),
    S_M(0, "\x28\xb5\x2f\xfd", "zstd-compressed data; decompress it first"),
    S_M(0, "BZh", "bzip2-compressed data; decompress it first"),
    S_M(0, "\x89HDF\r\n\x1a\n", "an HDF5 file, such as a Keras .h5 model"),
    S_M(0, "\x93NUMPY", "a NumPy array"),
    S_M(4, "TFL3", "a TensorFlow Lite model"),
    S_M(257, "ustar", "a tar archive"),
};

/* Whether the wire type fits a field of this type. */
static bool s_wire_fits(const ProtobufCFieldDescriptor *fd, unsigned wire)
{
    if (wire == 2)
        return fd->type == PROTOBUF_C_TYPE_STRING || fd->type == PROTOBUF_C_TYPE_BYTES ||
               fd->type == PROTOBUF_C_TYPE_MESSAGE || fd->label == PROTOBUF_C_LABEL_REPEATED;
    switch (fd->type) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return wire == 1;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return wire == 5;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return false;
    default:
        return wire == 0;
    }
}

/* Printable ASCII, whitespace and UTF-8 multi-byte sequences only. */
static bool s_is_text(const uint8_t *d, size_t len)
{
    if (len > 512)
        len = 512;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = d[i];
        if (c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0x7f))
            continue;
        size_t more = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2
                      : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
        if (!more)
            return false;
        for (size_t k = 1; k <= more; k++)
            if (i + k < len && (d[i + k] & 0xc0) != 0x80)
                return false;
        i += more;
    }
    return true;
}

static bool s_contains(const uint8_t *d, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(d + i, s, n))
            return true;
    return false;
}

static int s_not_onnx(const char *what)
{
    return tc_fail(TC_EPARSE, "not an ONNX file (%s)", what);
}

int tc_onnx_sniff(const uint8_t *data, size_t len)
{
    if (!data || !len)
        return s_not_onnx("empty");
    for (size_t i = 0; i < sizeof s_magics / sizeof s_magics[0]; i++) {
        const s_magic_t *m = &s_magics[i];
        if (len >= m->at + m->len && !memcmp(data + m->at, m->magic, m->len))
            return s_not_onnx(m->what);
    }
    /* Python pickles (torch.save's legacy format): PROTO opcode, version. */
    if (len >= 2 && data[0] == 0x80 && data[1] >= 2 && data[1] <= 5)
        return s_not_onnx("a Python pickle, such as a PyTorch checkpoint; export the model "
                          "with torch.onnx.export");
    /* safetensors: an 8-byte little-endian header length, then JSON. */
    if (len >= 10 && data[8] == '{') {
        uint64_t n = 0;
        for (int k = 7; k >= 0; k--)
            n = n << 8 | data[k];
        if (n >= 2 && n <= len - 8)
            return s_not_onnx("a safetensors file: weights without the graph");
    }
    uint64_t key = 0;
    size_t i = 0;
    bool ended = false;
    for (int shift = 0; i < len && shift < 35 && !ended; shift += 7, i++) {
        key |= (uint64_t)(data[i] & 0x7f) << shift;
        ended = !(data[i] & 0x80);
    }
    const ProtobufCFieldDescriptor *fd =
        ended && key >> 3 && key >> 3 <= 0x1fffffff
            ? protobuf_c_message_descriptor_get_field(&onnx__model_proto__descriptor,
                                                      (unsigned)(key >> 3))
            : NULL;
    if (fd && s_wire_fits(fd, (unsigned)(key & 7)))
        return 0;
    if (!ended && i == len)
        return 0; /* a key cut short: truncated, let the scan say so */
    if (s_is_text(data, len)) {
        size_t n = len > 4096 ? 4096 : len;
        if (s_contains(data, n, "ir_version"))
            return s_not_onnx("ONNX in a text form; traincast reads the binary protobuf "
                              "that torch.onnx.export and onnx.save write");
        return s_not_onnx("text");
    }
    char what[96];
    int n = snprintf(what, sizeof what, "it starts with the bytes");
    for (size_t k = 0; k < len && k < 4; k++)
        n += snprintf(what + n, sizeof what - (size_t)n, " %02x", data[k]);
    snprintf(what + n, sizeof what - (size_t)n, ", which no ONNX model starts with");
    return s_not_onnx(what);
}
