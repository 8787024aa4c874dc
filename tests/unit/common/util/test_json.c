/* Strict, bounded JSON reading on jansson (common/util/tc_json.h): valid documents,
 * every class of malformed input, and the size, depth and count limits. */
#include "tc_error.h"
#include "tc_json.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tc_json_t *s_ok(const char *text)
{
    tc_json_t *doc = NULL;
    int rc = tc_json_parse(text, strlen(text), NULL, &doc);
    cr_assert_eq(rc, 0, "parsing %s: %s", text, tc_errmsg());
    cr_assert_not_null(doc);
    return doc;
}

static void s_bad(const char *text, int code, const char *needle)
{
    tc_json_t *doc = (tc_json_t *)1;
    int rc = tc_json_parse(text, strlen(text), NULL, &doc);
    cr_assert_eq(rc, code, "'%s' gave %d (%s), expected %d", text, rc, tc_errmsg(), code);
    cr_assert_null(doc, "a failed parse returns no document");
    cr_assert(strstr(tc_errmsg(), needle), "'%s': message '%s' lacks '%s'", text, tc_errmsg(),
              needle);
}

Test(json, parses_a_protocol_line, .timeout = 10)
{
    tc_json_t *doc = s_ok(" {\"type\":\"iter\",\"index\":3,\"warmup\":false,\"ms\":12.5e0,"
                          "\"at_us\":1700000000123456,\"tags\":[1,-2.5,null,true,\"x\"],"
                          "\"nested\":{\"a\":{}}} \r\n");
    const tc_json_value_t *o = tc_json_root(doc);
    cr_assert_eq(tc_json_type(o), TC_JSON_OBJECT);
    cr_assert_eq(tc_json_len(o), 7);
    const char *order[] = {"type", "index", "warmup", "ms", "at_us", "tags", "nested"};
    size_t k = 0;
    for (const tc_json_member_t *m = tc_json_first(o); m; m = tc_json_next(o, m), k++) {
        cr_assert_lt(k, 7);
        cr_assert_str_eq(tc_json_member_key(m), order[k], "members keep the document's order");
        cr_assert_eq(tc_json_member_value(m), tc_json_get(o, order[k]));
    }
    cr_assert_eq(k, 7);
    cr_assert_null(tc_json_first(tc_json_get(tc_json_get(o, "nested"), "a")));
    cr_assert_null(tc_json_first(tc_json_get(o, "tags")), "an array has no members");
    cr_assert_str_eq(tc_json_string(tc_json_get(o, "type")), "iter");
    int64_t i;
    cr_assert(tc_json_int(tc_json_get(o, "index"), &i));
    cr_assert_eq(i, 3);
    cr_assert(tc_json_int(tc_json_get(o, "at_us"), &i));
    cr_assert_eq(i, 1700000000123456LL, "integers keep every digit");
    cr_assert_eq(tc_json_type(tc_json_get(o, "warmup")), TC_JSON_BOOL);
    cr_assert(!tc_json_bool(tc_json_get(o, "warmup")));
    cr_assert_float_eq(tc_json_number(tc_json_get(o, "ms")), 12.5, 1e-12);
    cr_assert(!tc_json_int(tc_json_get(o, "ms"), &i), "12.5e0 is not an integer literal");
    const tc_json_value_t *tags = tc_json_get(o, "tags");
    cr_assert_eq(tc_json_len(tags), 5);
    cr_assert_float_eq(tc_json_number(tc_json_at(tags, 1)), -2.5, 1e-12);
    cr_assert_eq(tc_json_type(tc_json_at(tags, 2)), TC_JSON_NULL);
    cr_assert(tc_json_bool(tc_json_at(tags, 3)));
    cr_assert_str_eq(tc_json_string(tc_json_at(tags, 4)), "x");
    cr_assert_null(tc_json_at(tags, 5));
    cr_assert_null(tc_json_get(o, "missing"));
    cr_assert_eq(tc_json_len(tc_json_get(tc_json_get(o, "nested"), "a")), 0);
    tc_json_destroy(&doc);
    cr_assert_null(doc);
    tc_json_destroy(&doc);
}

Test(json, decodes_escapes_and_utf8, .timeout = 10)
{
    tc_json_t *doc = s_ok("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\\u20ac\\ud83d\\ude00\","
                          " \"caf\xc3\xa9\"]");
    const tc_json_value_t *a = tc_json_root(doc);
    cr_assert_str_eq(tc_json_string(tc_json_at(a, 0)), "a\"b\\c/d\b\f\n\r\t");
    cr_assert_str_eq(tc_json_string(tc_json_at(a, 1)), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    cr_assert_eq(tc_json_string_len(tc_json_at(a, 1)), 9);
    cr_assert_str_eq(tc_json_string(tc_json_at(a, 2)), "caf\xc3\xa9");
    tc_json_destroy(&doc);
}

Test(json, scalars_at_top_level, .timeout = 10)
{
    const char *ok[] = {"0", "-0", "1e3", "-1.5E-3", "\"\"", "true", "null", "[]", "{}"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        tc_json_t *doc = s_ok(ok[i]);
        tc_json_destroy(&doc);
    }
    tc_json_t *doc = s_ok("9223372036854775807");
    int64_t v;
    cr_assert(tc_json_int(tc_json_root(doc), &v));
    cr_assert_eq(v, INT64_MAX);
    tc_json_destroy(&doc);
    doc = s_ok("9223372036854775808");
    cr_assert(!tc_json_int(tc_json_root(doc), &v), "beyond int64 is only a double");
    tc_json_destroy(&doc);
}

Test(json, rejects_malformed_text, .timeout = 10)
{
    s_bad("", TC_EPARSE, "invalid JSON at byte");
    s_bad("   ", TC_EPARSE, "invalid JSON at byte");
    s_bad("{", TC_EPARSE, "invalid JSON at byte");
    s_bad("{\"a\":1", TC_EPARSE, "invalid JSON at byte");
    s_bad("{\"a\" 1}", TC_EPARSE, "invalid JSON at byte");
    s_bad("{a:1}", TC_EPARSE, "invalid JSON at byte");
    s_bad("{'a':1}", TC_EPARSE, "invalid JSON at byte");
    s_bad("[1,2,]", TC_EPARSE, "invalid JSON at byte");
    s_bad("{\"a\":1,}", TC_EPARSE, "invalid JSON at byte");
    s_bad("[1 2]", TC_EPARSE, "invalid JSON at byte");
    s_bad("{} {}", TC_EPARSE, "invalid JSON at byte");
    s_bad("{}x", TC_EPARSE, "invalid JSON at byte");
    s_bad("tru", TC_EPARSE, "invalid JSON at byte");
    s_bad("nul", TC_EPARSE, "invalid JSON at byte");
    s_bad("// c\n{}", TC_EPARSE, "invalid JSON at byte");
    s_bad("{\"a\":1,\"a\":2}", TC_EPARSE, "duplicate object key");
}

Test(json, rejects_bad_numbers, .timeout = 10)
{
    s_bad("NaN", TC_EPARSE, "invalid JSON at byte");
    s_bad("Infinity", TC_EPARSE, "invalid JSON at byte");
    s_bad("-Infinity", TC_EPARSE, "invalid JSON at byte");
    s_bad("{\"ms\":NaN}", TC_EPARSE, "invalid JSON at byte");
    s_bad("01", TC_EPARSE, "invalid JSON at byte");
    s_bad("-", TC_EPARSE, "invalid JSON at byte");
    s_bad("1.", TC_EPARSE, "invalid JSON at byte");
    s_bad(".5", TC_EPARSE, "invalid JSON at byte");
    s_bad("+1", TC_EPARSE, "invalid JSON at byte");
    s_bad("1e", TC_EPARSE, "invalid JSON at byte");
    s_bad("0x10", TC_EPARSE, "invalid JSON at byte");
    s_bad("1e999", TC_EPARSE, "out of range");
    s_bad("-1e400", TC_EPARSE, "out of range");
    /* An integer beyond 64 bits is a number, not an integer. */
    char longnum[200];
    memset(longnum, '1', sizeof longnum - 1);
    longnum[sizeof longnum - 1] = '\0';
    tc_json_t *doc = s_ok(longnum);
    int64_t v;
    cr_assert(!tc_json_int(tc_json_root(doc), &v));
    cr_assert(tc_json_number(tc_json_root(doc)) > 1e198);
    tc_json_destroy(&doc);
}

Test(json, rejects_bad_strings, .timeout = 10)
{
    s_bad("\"abc", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"a\\\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"a\nb\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"a\tb\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\x41\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\u12\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\u0000\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\ud83d\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\ud83d\\u0041\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\\ude00\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\xff\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\xc3\"", TC_EPARSE, "invalid JSON at byte");
    s_bad("\"\xc0\xaf\"", TC_EPARSE, "invalid JSON at byte");     /* overlong '/' */
    s_bad("\"\xed\xa0\x80\"", TC_EPARSE, "invalid JSON at byte"); /* encoded surrogate */
    s_bad("\"\xf4\x90\x80\x80\"", TC_EPARSE, "invalid JSON at byte"); /* above U+10FFFF */
    /* A NUL byte inside the text is a control character, not an end. */
    tc_json_t *doc = NULL;
    cr_assert_eq(tc_json_parse("\"a\0b\"", 5, NULL, &doc), TC_EPARSE);
    cr_assert_eq(tc_json_parse("{}\0", 3, NULL, &doc), TC_EPARSE);
}

Test(json, enforces_limits, .timeout = 10)
{
    tc_json_t *doc = NULL;
    tc_json_limits_t lim = {.max_bytes = 16};
    cr_assert_eq(tc_json_parse("[1,2,3,4,5,6,7,8,9]", 19, &lim, &doc), TC_ELIMIT);
    cr_assert(strstr(tc_errmsg(), "16 byte limit"), "%s", tc_errmsg());

    lim = (tc_json_limits_t){.max_depth = 3};
    cr_assert_eq(tc_json_parse("[[[1]]]", 7, &lim, &doc), 0, "%s", tc_errmsg());
    tc_json_destroy(&doc);
    cr_assert_eq(tc_json_parse("[[[[1]]]]", 9, &lim, &doc), TC_ELIMIT);
    cr_assert(strstr(tc_errmsg(), "deeper than 3"), "%s", tc_errmsg());

    lim = (tc_json_limits_t){.max_values = 4};
    cr_assert_eq(tc_json_parse("[1,2,3]", 7, &lim, &doc), 0, "%s", tc_errmsg());
    tc_json_destroy(&doc);
    cr_assert_eq(tc_json_parse("[1,2,3,4]", 9, &lim, &doc), TC_ELIMIT);
    cr_assert(strstr(tc_errmsg(), "more than 4 values"), "%s", tc_errmsg());
}

Test(json, hostile_nesting_stops_at_the_default_depth, .timeout = 10)
{
    size_t n = 100000;
    char *text = malloc(2 * n);
    memset(text, '[', n);
    memset(text + n, ']', n);
    tc_json_t *doc = NULL;
    cr_assert_eq(tc_json_parse(text, 2 * n, NULL, &doc), TC_ELIMIT);
    cr_assert(strstr(tc_errmsg(), "deeper than 32"), "%s", tc_errmsg());
    free(text);
}

Test(json, large_flat_documents_parse, .timeout = 30)
{
    /* 50000 members: the duplicate-key check and arena stay workable. */
    size_t n = 5000;
    char *text = malloc(n * 24 + 8), *w = text;
    *w++ = '{';
    for (size_t i = 0; i < n; i++)
        w += sprintf(w, "%s\"k%zu\":%zu", i ? "," : "", i, i);
    *w++ = '}';
    tc_json_t *doc = NULL;
    cr_assert_eq(tc_json_parse(text, (size_t)(w - text), NULL, &doc), 0, "%s", tc_errmsg());
    const tc_json_value_t *o = tc_json_root(doc);
    cr_assert_eq(tc_json_len(o), n);
    int64_t v;
    cr_assert(tc_json_int(tc_json_get(o, "k4321"), &v));
    cr_assert_eq(v, 4321);
    tc_json_destroy(&doc);
    free(text);
}

/* Every prefix of a valid document is rejected cleanly, never read past. */
Test(json, every_truncation_fails_cleanly, .timeout = 30)
{
    const char *full = "{\"type\":\"footer\",\"peak\":123,\"ops\":{\"conv\":1.5e2,\"s\":\"\\u00e9x\"},"
                       "\"l\":[true,false,null]}";
    size_t n = strlen(full);
    for (size_t k = 0; k < n; k++) {
        char *copy = malloc(k ? k : 1); /* exact size: ASan sees any overread */
        memcpy(copy, full, k);
        tc_json_t *doc = NULL;
        int rc = tc_json_parse(copy, k, NULL, &doc);
        cr_assert_lt(rc, 0, "prefix of %zu bytes parsed", k);
        cr_assert_null(doc);
        free(copy);
    }
}

/* Random mutations of valid lines (a fixed seed, so failures reproduce):
 * every outcome is a clean accept or a clean parse/limit error. Run under
 * -DTRAINCAST_SANITIZE=ON this doubles as a memory-safety check. */
Test(json, random_mutations_never_crash, .timeout = 60)
{
    const char *seeds[] = {
        "{\"type\":\"iter\",\"index\":3,\"warmup\":false,\"ms\":12.5,\"at_us\":1700000000123456}",
        "{\"type\":\"footer\",\"peak_memory_bytes\":1,\"op_times_ms\":{\"conv\":1e2,\"bn\":0}}",
        "[\"\\u00e9\\ud83d\\ude00\",-0.5e-3,true,false,null,{\"a\":[[]]}]",
    };
    unsigned state = 12345;
    char buf[256];
    size_t accepted = 0;
    for (int round = 0; round < 20000; round++) {
        const char *seed = seeds[round % 3];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int edits = 1 + round % 4;
        for (int e = 0; e < edits && n > 0; e++) {
            state = state * 1103515245u + 12345u;
            size_t at = (state >> 8) % n;
            state = state * 1103515245u + 12345u;
            switch ((state >> 16) % 3) {
            case 0: buf[at] = (char)(state >> 4); break;                  /* replace */
            case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break; /* delete */
            default: n = at + 1; break;                                   /* cut */
            }
        }
        char *copy = malloc(n ? n : 1);
        memcpy(copy, buf, n);
        tc_json_t *doc = NULL;
        int rc = tc_json_parse(copy, n, NULL, &doc);
        cr_assert(rc == 0 || rc == TC_EPARSE || rc == TC_ELIMIT, "round %d: rc %d", round, rc);
        cr_assert_eq(rc == 0, doc != NULL);
        accepted += rc == 0;
        tc_json_destroy(&doc);
        free(copy);
    }
    cr_assert_lt(accepted, 20000, "mutations must break some documents");
}
