/* Corrupt, truncated and hostile ONNX input: every case must end in an
 * error (or, for a harmless mutation, a model), never a crash, a hang or an
 * unbounded allocation. tests/CMakeLists.txt also builds this file with
 * AddressSanitizer and UBSan (test_model_asan). */
#include "tc_error.h"
#include "tc_model.h"
#include "tc_test_onnx.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *s_read(const char *rel, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", TC_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)size);
    cr_assert(buf && fread(buf, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    *len = (size_t)size;
    return buf;
}

static int s_try(const uint8_t *data, size_t len, bool allow_unknown)
{
    tc_model_opts_t o = {.allow_unknown = allow_unknown};
    tc_model_t *m = NULL;
    int rc = tc_model_load_bytes(data, len, "hostile", &o, &m);
    if (rc == 0) {
        cr_assert_not_null(m);
        /* Whatever loads must be usable. */
        tc_features_t f;
        tc_model_features(m, 8, &f);
        Traincast__V1__ModelGraph *g = NULL;
        if (tc_model_to_proto(m, &g) == 0)
            tc_model_proto_free(&g);
    } else {
        cr_assert_null(m);
        cr_assert(*tc_errmsg(), "an error without a message (code %d)", rc);
    }
    tc_model_destroy(&m);
    return rc;
}

static int s_try_tb(tc_tb_t *tb)
{
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    return s_try(b, len, false);
}

Test(hostile, empty_and_garbage, .timeout = 30)
{
    cr_expect_eq(s_try(NULL, 0, false), TC_EPARSE);
    uint8_t junk[4096];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof junk; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        junk[i] = (uint8_t)x;
    }
    for (size_t len = 1; len <= sizeof junk; len = len * 2 + 1)
        cr_expect_lt(s_try(junk, len, true), 0, "%zu random bytes", len);
    const char *text = "this is not an ONNX file\n";
    cr_expect_lt(s_try((const uint8_t *)text, strlen(text), false), 0);
}

Test(hostile, truncated_everywhere, .timeout = 120)
{
    size_t len;
    uint8_t *full = s_read("tests/data/squeezenet1_1.onnx", &len);
    cr_assert_eq(s_try(full, len, false), 0, "%s", tc_errmsg());
    size_t failed = 0, tried = 0;
    for (size_t cut = 0; cut < len; cut += 1 + cut / 64) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, full, cut);
        failed += s_try(copy, cut, false) < 0;
        tried++;
        free(copy);
    }
    cr_expect_gt(failed, tried * 9 / 10, "%zu of %zu truncations failed", failed, tried);
    free(full);
}

Test(hostile, bit_flips, .timeout = 120)
{
    size_t len;
    uint8_t *full = s_read("tests/data/mobilenet_v3_small.onnx", &len);
    uint8_t *copy = malloc(len);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t failed = 0;
    for (int round = 0; round < 400; round++) {
        memcpy(copy, full, len);
        for (int k = 0; k < 1 + round % 8; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            copy[x % len] ^= (uint8_t)(1u << (x >> 60 & 7));
        }
        failed += s_try(copy, len, round & 1) < 0;
    }
    cr_log_info("%zu of 400 mutated files were rejected", failed);
    free(copy);
    free(full);
}

Test(hostile, length_claims_past_the_end, .timeout = 10)
{
    /* ModelProto.graph (field 7, length-delimited) claiming 2 GB. */
    const uint8_t claim[] = {0x3a, 0x80, 0x80, 0x80, 0x80, 0x08, 0x0a, 0x00};
    cr_expect_eq(s_try(claim, sizeof claim, false), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "claims"), "%s", tc_errmsg());
    /* A varint that never ends. */
    const uint8_t varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff};
    cr_expect_eq(s_try(varint, sizeof varint, false), TC_EPARSE);
    /* Group wire types are not ONNX. */
    const uint8_t group[] = {0x0b, 0x0c};
    cr_expect_eq(s_try(group, sizeof group, false), TC_EPARSE);
}

/* graph -> node -> attribute -> graph -> ... nested `depth` times. */
static uint8_t *s_nested(size_t depth, size_t *len)
{
    size_t cap = depth * 24 + 64, pos = cap;
    uint8_t *buf = malloc(cap);
    size_t body = 0; /* bytes after pos */
    for (size_t i = 0; i < depth; i++) {
        /* Wrap the current body as: tag, length varint, body. Field order
         * from inside out: AttributeProto.g (6), NodeProto.attribute (5),
         * GraphProto.node (1). */
        static const uint8_t tags[] = {0x32, 0x2a, 0x0a};
        uint8_t tag = tags[i % 3];
        uint8_t v[10];
        size_t n = 0, l = body;
        do {
            v[n++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
            l >>= 7;
        } while (l);
        pos -= n;
        memcpy(buf + pos, v, n);
        buf[--pos] = tag;
        body += n + 1;
    }
    /* ModelProto.graph */
    uint8_t v[10];
    size_t n = 0, l = body;
    do {
        v[n++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
        l >>= 7;
    } while (l);
    pos -= n;
    memcpy(buf + pos, v, n);
    buf[--pos] = 0x3a;
    body += n + 1;
    memmove(buf, buf + pos, body);
    *len = body;
    return buf;
}

Test(hostile, deep_nesting_is_refused_before_unpacking, .timeout = 30)
{
    size_t len;
    uint8_t *b = s_nested(300000, &len);
    cr_expect_eq(s_try(b, len, false), TC_ELIMIT);
    cr_expect(strstr(tc_errmsg(), "nested"), "%s", tc_errmsg());
    free(b);
    b = s_nested(30, &len);
    cr_expect_lt(s_try(b, len, false), 0, "shallow nesting still is no model");
    free(b);
}

Test(hostile, empty_submessages_cannot_amplify_memory, .timeout = 30)
{
    /* Millions of empty NodeProtos: two bytes each on disk, a whole struct
     * each in protobuf-c. */
    size_t nodes = 4u << 20, body = 2 * nodes;
    uint8_t *b = malloc(body + 16);
    size_t pos = 0;
    b[pos++] = 0x3a;
    for (size_t l = body; ; l >>= 7) {
        b[pos++] = (uint8_t)((l & 0x7f) | (l > 0x7f ? 0x80 : 0));
        if (l <= 0x7f)
            break;
    }
    for (size_t i = 0; i < nodes; i++) {
        b[pos++] = 0x0a;
        b[pos++] = 0x00;
    }
    cr_expect_eq(s_try(b, pos, false), TC_ELIMIT);
    cr_expect(strstr(tc_errmsg(), "allocate"), "%s", tc_errmsg());
    free(b);
}

Test(hostile, size_cap, .timeout = 10)
{
    size_t len;
    uint8_t *full = s_read("tests/data/alexnet.onnx", &len);
    tc_model_opts_t o = {.max_file_bytes = 1000};
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_bytes(full, len, "x", &o, &m), TC_ELIMIT);
    cr_expect_null(m);
    free(full);
}

Test(hostile, huge_dimensions, .timeout = 10)
{
    /* An initializer claiming 2^62 elements (no data). */
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_weight(tb, "w", 4, (int64_t[]){1LL << 31, 1LL << 31, 3, 3});
    tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    tc_tb_free(&tb);
    /* Negative and oversized dims. */
    tb = tc_tb_new(3, 8, 8);
    tc_tb_weight(tb, "w", 4, (int64_t[]){-4, 3, 3, 3});
    tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 1LL << 40, 8);
    tc_tb_node(tb, "Relu", "relu", "x", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    /* Every dim legal, the product over 2^40. */
    tb = tc_tb_new(1 << 20, 1 << 20, 1 << 20);
    tc_tb_node(tb, "Relu", "relu", "x", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    tc_tb_free(&tb);
    /* Tiling to an overflow. */
    tb = tc_tb_new(1 << 20, 1 << 10, 1);
    tc_tb_ints(tb, "rep", 4, (int64_t[]){1, 1LL << 40, 1LL << 40, 1});
    tc_tb_node(tb, "Tile", "tile", "x,rep", "y");
    tc_tb_output(tb, "y");
    cr_expect_lt(s_try_tb(tb), 0);
    tc_tb_free(&tb);
    /* A reshape target multiplying to an overflow. */
    tb = tc_tb_new(4, 4, 4);
    tc_tb_ints(tb, "t", 4, (int64_t[]){1LL << 62, 1LL << 62, 4, 0});
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    cr_expect_lt(s_try_tb(tb), 0);
    tc_tb_free(&tb);
}

Test(hostile, data_that_does_not_match_its_shape, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_ints(tb, "t", 3, (int64_t[]){0, 1, 2});
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    Onnx__TensorProto *t = tc_tb_model(tb)->graph->initializer[0];
    t->dims[0] = 1LL << 30; /* claims a billion values, carries three */
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    t->dims[0] = 3;
    t->has_raw_data = 1;
    t->raw_data.len = 5; /* and raw bytes that fit no int64 count */
    t->raw_data.data = (uint8_t *)"abcde";
    t->n_int64_data = 0;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
}

/* Typed data in a field its element type does not use, or spread over
 * several fields whose sum matches the shape: refused, never read past the
 * end of the shorter array (an over-read that AddressSanitizer caught in
 * the ASan build of this test). */
Test(hostile, typed_data_in_the_wrong_fields, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_ints(tb, "t", 6, (int64_t[]){1, 3, 8, 8, 1, 1});
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    Onnx__TensorProto *t = tc_tb_model(tb)->graph->initializer[0];
    int32_t *i32 = tc_tb_alloc(tb, 4 * sizeof *i32);
    /* 2 int64 + 4 int32 values for 6 elements of type INT64. */
    t->n_int64_data = 2;
    t->int32_data = i32;
    t->n_int32_data = 4;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "%s", tc_errmsg());
    cr_expect(strstr(tc_errmsg(), "int64_data"), "%s", tc_errmsg());
    /* All six in int32_data, which INT64 does not use. */
    int32_t *six = tc_tb_alloc(tb, 6 * sizeof *six);
    t->n_int64_data = 0;
    t->int32_data = six;
    t->n_int32_data = 6;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "%s", tc_errmsg());
    /* uint64 values claimed by a FLOAT tensor. */
    uint64_t *u64 = tc_tb_alloc(tb, 6 * sizeof *u64);
    t->n_int32_data = 0;
    t->uint64_data = u64;
    t->n_uint64_data = 6;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "%s", tc_errmsg());
    tc_tb_free(&tb);
}

Test(hostile, rank_over_the_cap, .timeout = 10)
{
    int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tc_tb_t *tb = tc_tb_new_rank(9, dims);
    tc_tb_node(tb, "Relu", "relu", "x", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED);
    tc_tb_free(&tb);
    tb = tc_tb_new(2, 2, 2);
    tc_tb_weight(tb, "w", 9, dims);
    tc_tb_node(tb, "Add", "add", "x,w", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    tc_tb_free(&tb);
    tb = tc_tb_new(2, 2, 2);
    tc_tb_ints(tb, "ax", 6, (int64_t[]){0, 1, 2, 3, 4, 5});
    tc_tb_node(tb, "Unsqueeze", "u", "x,ax", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    tc_tb_free(&tb);
}

Test(hostile, cycles, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Add", "a", "x,b_out", "a_out");
    tc_tb_node(tb, "Relu", "b", "a_out", "b_out");
    tc_tb_output(tb, "b_out");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "cycle"), "%s", tc_errmsg());
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "self", "y", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
}

Test(hostile, missing_and_duplicate_values, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Add", "add", "x,nowhere", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "nowhere") && strstr(tc_errmsg(), "add"), "%s", tc_errmsg());
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "r1", "x", "y");
    tc_tb_node(tb, "Relu", "r2", "x", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "r1", "x", "y");
    tc_tb_output(tb, "not_produced");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Conv", "conv", "x", "y"); /* no weight */
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "r", "x", ""); /* no output named */
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
}

/* A matrix product whose one output has an empty name, an optional output
 * not produced (found by fuzz_model): its flops come from the shapes, never
 * from an output value it does not have, and the model is refused for the
 * node that produces nothing, by name. */
Test(hostile, products_without_an_output, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_weight(tb, "w", 2, (const int64_t[]){8, 4});
    Onnx__NodeProto *mm = tc_tb_node(tb, "MatMul", "mm", "x,w", "unnamed");
    mm->output[0] = "";
    tc_tb_node(tb, "Relu", "r", "x", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "'mm'"), "%s", tc_errmsg());
    tc_tb_free(&tb);
    tb = tc_tb_new(3, 8, 8);
    tc_tb_weight(tb, "w", 2, (const int64_t[]){4, 192});
    tc_tb_node(tb, "Flatten", "f", "x", "flat");
    Onnx__NodeProto *g = tc_tb_node(tb, "Gemm", "gemm", "flat,w", "unnamed");
    g->output[0] = "";
    tc_tb_attr_int(tb, g, "transB", 1);
    tc_tb_node(tb, "Relu", "r", "flat", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "'gemm'"), "%s", tc_errmsg());
    tc_tb_free(&tb);
}

Test(hostile, structural_problems, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "r", "x", "y");
    tc_tb_output(tb, "y");
    Onnx__ModelProto *m = tc_tb_model(tb);
    m->n_opset_import = 0;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "no opset");
    m->n_opset_import = 1;
    Onnx__GraphProto *g = m->graph;
    m->graph = NULL;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "no graph");
    m->graph = g;
    size_t n = g->n_node;
    g->n_node = 0;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "no nodes");
    g->n_node = n;
    char *op = g->node[0]->op_type;
    g->node[0]->op_type = "";
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "no op type");
    g->node[0]->op_type = op;
    cr_expect_eq(s_try_tb(tb), 0, "%s", tc_errmsg());
    tc_tb_free(&tb);
}

Test(hostile, wrong_attribute_types_and_values, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 8, 8);
    tc_tb_weight(tb, "w", 4, (int64_t[]){4, 4, 3, 3});
    Onnx__NodeProto *c = tc_tb_node(tb, "Conv", "conv", "x,w", "y");
    tc_tb_attr_str(tb, c, "group", "four");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    cr_expect(strstr(tc_errmsg(), "group"), "%s", tc_errmsg());
    tc_tb_free(&tb);
    static const struct {
        const char *attr;
        int64_t v[4];
        int n;
    } bad[] = {
        {"strides", {0, 1}, 2},          {"strides", {1, 1, 1}, 3},
        {"pads", {-1, 0, 0, 0}, 4},      {"dilations", {1LL << 40, 1}, 2},
        {"group", {3}, 1},                {"pads", {1LL << 40, 0, 0, 0}, 4},
        {"kernel_shape", {5, 5}, 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tb = tc_tb_new(4, 8, 8);
        tc_tb_weight(tb, "w", 4, (int64_t[]){4, 4, 3, 3});
        c = tc_tb_node(tb, "Conv", "conv", "x,w", "y");
        if (bad[i].n == 1)
            tc_tb_attr_int(tb, c, bad[i].attr, bad[i].v[0]);
        else
            tc_tb_attr_ints(tb, c, bad[i].attr, bad[i].n, bad[i].v);
        tc_tb_output(tb, "y");
        cr_expect_eq(s_try_tb(tb), TC_EPARSE, "bad %s", bad[i].attr);
        tc_tb_free(&tb);
    }
}

Test(hostile, bad_axes_and_indices, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(4, 8, 8);
    Onnx__NodeProto *n = tc_tb_node(tb, "Concat", "cat", "x,x", "y");
    tc_tb_attr_int(tb, n, "axis", 17);
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "i", 1, (int64_t[]){99});
    tc_tb_node(tb, "Gather", "gather", "s,i", "g");
    tc_tb_output(tb, "g");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    n = tc_tb_node(tb, "Transpose", "t", "x", "y");
    tc_tb_attr_ints(tb, n, "perm", 4, (int64_t[]){0, 1, 1, 2});
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    tc_tb_ints(tb, "t", 2, (int64_t[]){-1, -1});
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EPARSE);
    tc_tb_free(&tb);
}

Test(hostile, batch_games, .timeout = 10)
{
    Onnx__NodeProto *n0;
    /* A reshape that folds the batch into another dimension keeps it as a
     * multiple of the batch ([-1] of [B, 4, 8, 8] is 256 B), counted per
     * sample; a batch plus a constant cannot stay symbolic: refused with a
     * message, not miscounted. */
    tc_tb_t *tb = tc_tb_new(4, 8, 8);
    tc_tb_ints(tb, "t", 1, (int64_t[]){-1});
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), 0);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    tc_tb_node(tb, "Shape", "shape", "x", "s");
    tc_tb_const_ints(tb, "zero", 1, (int64_t[]){0});
    n0 = tc_tb_node(tb, "Gather", "gather", "s,zero", "b");
    tc_tb_attr_int(tb, n0, "axis", 0);
    tc_tb_const_ints(tb, "one", 1, (int64_t[]){1});
    tc_tb_node(tb, "Add", "add", "b,one", "b1");
    tc_tb_const_ints(tb, "m1", 1, (int64_t[]){-1});
    n0 = tc_tb_node(tb, "Concat", "concat", "b1,m1", "t");
    tc_tb_attr_int(tb, n0, "axis", 0);
    tc_tb_node(tb, "Reshape", "r", "x,t", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    Onnx__NodeProto *n = tc_tb_node(tb, "Concat", "cat", "x,x", "y");
    tc_tb_attr_int(tb, n, "axis", 0);
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED);
    tc_tb_free(&tb);
    tb = tc_tb_new(4, 8, 8);
    n = tc_tb_node(tb, "Flatten", "f", "x", "y");
    tc_tb_attr_int(tb, n, "axis", 0);
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED);
    tc_tb_free(&tb);
}

Test(hostile, many_nodes_hit_the_cap, .timeout = 120)
{
    tc_tb_t *tb = tc_tb_new(1, 1, 1);
    char in[32] = "x", out[32], name[32];
    for (int i = 0; i < 200001; i++) {
        snprintf(out, sizeof out, "v%d", i);
        snprintf(name, sizeof name, "n%d", i);
        tc_tb_node(tb, "Relu", name, in, out);
        memcpy(in, out, sizeof in);
    }
    tc_tb_output(tb, in);
    cr_expect_eq(s_try_tb(tb), TC_ELIMIT);
    tc_tb_free(&tb);
}

Test(hostile, two_inputs_and_bad_input, .timeout = 10)
{
    tc_tb_t *tb = tc_tb_new(3, 8, 8);
    tc_tb_node(tb, "Relu", "r", "x", "y");
    tc_tb_output(tb, "y");
    Onnx__GraphProto *g = tc_tb_model(tb)->graph;
    Onnx__ValueInfoProto **in = tc_tb_alloc(tb, 2 * sizeof *in);
    in[0] = g->input[0];
    in[1] = g->input[0];
    g->input = in;
    g->n_input = 2;
    cr_expect_lt(s_try_tb(tb), 0, "the same input twice");
    Onnx__ValueInfoProto *other = tc_tb_alloc(tb, sizeof *other);
    onnx__value_info_proto__init(other);
    other->name = "second";
    other->type = in[0]->type;
    in[1] = other;
    cr_expect_eq(s_try_tb(tb), TC_EUNSUPPORTED, "two data inputs");
    g->n_input = 1;
    Onnx__TypeProto *type = in[0]->type;
    in[0]->type = NULL;
    cr_expect_eq(s_try_tb(tb), TC_EPARSE, "input without a type");
    in[0]->type = type;
    type->tensor_type->shape->dim[2]->value_case =
        ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    type->tensor_type->shape->dim[2]->dim_param = "height";
    cr_expect_eq(s_try_tb(tb), TC_EINVAL, "symbolic height needs an input size");
    size_t len;
    const uint8_t *b = tc_tb_pack(tb, &len);
    tc_model_opts_t o = {.input_size = 32};
    tc_model_t *m = NULL;
    cr_expect_eq(tc_model_load_bytes(b, len, "x", &o, &m), 0, "%s", tc_errmsg());
    tc_model_destroy(&m);
    tc_tb_free(&tb);
}

Test(hostile, range_and_slice_games, .timeout = 10)
{
    /* Range: a huge delta gives one element, a huge length is refused, a
     * zero delta is an error; a Slice with a huge step folds nothing wrong. */
    static const int64_t cases[][3] = {
        {0, 10, INT64_MAX}, {0, -10, INT64_MIN}, {-2147483647, 2147483647, 1}, {0, 5, 0}};
    static const int want[] = {0, 0, TC_EPARSE, TC_EPARSE};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_tb_t *tb = tc_tb_new(4, 8, 8);
        tc_tb_const_ints(tb, "a", 1, &cases[i][0]);
        tc_tb_const_ints(tb, "b", 1, &cases[i][1]);
        tc_tb_const_ints(tb, "c", 1, &cases[i][2]);
        tc_tb_node(tb, "Range", "r", "a,b,c", "y");
        tc_tb_output(tb, "y");
        cr_expect_eq(s_try_tb(tb), want[i], "case %zu", i);
        tc_tb_free(&tb);
    }
    tc_tb_t *tb = tc_tb_new(4, 8, 8);
    tc_tb_const_ints(tb, "v", 6, (int64_t[]){1, 2, 3, 4, 5, 6});
    tc_tb_ints(tb, "shape", 2, (int64_t[]){2, 3});
    tc_tb_node(tb, "Reshape", "r", "v,shape", "v2");
    tc_tb_const_ints(tb, "s", 1, (int64_t[]){0});
    tc_tb_const_ints(tb, "e", 1, (int64_t[]){INT64_MAX});
    tc_tb_const_ints(tb, "ax", 1, (int64_t[]){1});
    tc_tb_const_ints(tb, "st", 1, (int64_t[]){INT64_MAX});
    tc_tb_node(tb, "Slice", "sl", "v2,s,e,ax,st", "y");
    tc_tb_output(tb, "y");
    cr_expect_eq(s_try_tb(tb), 0);
    tc_tb_free(&tb);
}
