#include "tc_json.h"

#include "tc_error.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_MAX_BYTES (1u << 20)
#define DEFAULT_MAX_DEPTH 32u
#define DEFAULT_MAX_VALUES 65536u

/* A tc_json_value_t is a json_t of the document, and a tc_json_member_t a
 * jansson object iterator: the wrapper only changes the names. */
#define J(v) ((json_t *)(v))
#define V(j) ((const tc_json_value_t *)(j))

struct tc_json {
    json_t *root;
};

/* Depth and value count of a parsed document, against the limits. */
static int s_walk(const json_t *j, size_t depth, const tc_json_limits_t *lim, size_t *values)
{
    if (++*values > lim->max_values)
        return tc_fail(TC_ELIMIT, "JSON has more than %zu values", lim->max_values);
    if (!json_is_array(j) && !json_is_object(j))
        return 0;
    if (depth + 1 > lim->max_depth)
        return tc_fail(TC_ELIMIT, "JSON is nested deeper than %zu levels", lim->max_depth);
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            int rc = s_walk(json_array_get(j, i), depth + 1, lim, values);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    for (void *it = json_object_iter((json_t *)j); it;
         it = json_object_iter_next((json_t *)j, it)) {
        int rc = s_walk(json_object_iter_value(it), depth + 1, lim, values);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int tc_json_parse(const char *text, size_t len, const tc_json_limits_t *limits, tc_json_t **out)
{
    *out = NULL;
    tc_json_limits_t lim = limits ? *limits : (tc_json_limits_t){0};
    if (!lim.max_bytes)
        lim.max_bytes = DEFAULT_MAX_BYTES;
    if (!lim.max_depth)
        lim.max_depth = DEFAULT_MAX_DEPTH;
    if (!lim.max_values)
        lim.max_values = DEFAULT_MAX_VALUES;
    if (len > lim.max_bytes)
        return tc_fail(TC_ELIMIT, "JSON text of %zu bytes is over the %zu byte limit", len,
                       lim.max_bytes);
    size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES;
    json_error_t err;
    json_t *root = json_loadb(text, len, flags, &err);
    if (!root && json_error_code(&err) == json_error_numeric_overflow)
        /* An integer beyond 64 bits is still a number: read them all as
         * doubles (tc_json_int then says no). A real out of range fails
         * again. */
        root = json_loadb(text, len, flags | JSON_DECODE_INT_AS_REAL, &err);
    if (!root) {
        switch (json_error_code(&err)) {
        case json_error_out_of_memory:
            return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
        case json_error_stack_overflow:
            return tc_fail(TC_ELIMIT, "JSON is nested deeper than %zu levels", lim.max_depth);
        case json_error_numeric_overflow:
            return tc_fail(TC_EPARSE, "invalid JSON at byte %d: number out of range (%s)",
                           err.position, err.text);
        default:
            return tc_fail(TC_EPARSE, "invalid JSON at byte %d: %s", err.position, err.text);
        }
    }
    size_t values = 0;
    int rc = s_walk(root, 0, &lim, &values);
    if (rc < 0) {
        json_decref(root);
        return rc;
    }
    tc_json_t *doc = malloc(sizeof *doc);
    if (!doc) {
        json_decref(root);
        return tc_fail(TC_ENOMEM, "out of memory parsing JSON");
    }
    doc->root = root;
    *out = doc;
    return 0;
}

void tc_json_destroy(tc_json_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    json_decref((*self_p)->root);
    free(*self_p);
    *self_p = NULL;
}

const tc_json_value_t *tc_json_root(const tc_json_t *doc)
{
    return doc ? V(doc->root) : NULL;
}

tc_json_type_t tc_json_type(const tc_json_value_t *v)
{
    switch (v ? json_typeof(J(v)) : JSON_NULL) {
    case JSON_TRUE:
    case JSON_FALSE: return TC_JSON_BOOL;
    case JSON_INTEGER:
    case JSON_REAL: return TC_JSON_NUMBER;
    case JSON_STRING: return TC_JSON_STRING;
    case JSON_ARRAY: return TC_JSON_ARRAY;
    case JSON_OBJECT: return TC_JSON_OBJECT;
    default: return TC_JSON_NULL;
    }
}

const char *tc_json_type_name(tc_json_type_t t)
{
    static const char *names[] = {"null", "bool", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

bool tc_json_bool(const tc_json_value_t *v)
{
    return v && json_is_true(J(v));
}

double tc_json_number(const tc_json_value_t *v)
{
    return v && json_is_number(J(v)) ? json_number_value(J(v)) : 0;
}

bool tc_json_int(const tc_json_value_t *v, int64_t *out)
{
    if (!v || !json_is_integer(J(v)))
        return false;
    *out = (int64_t)json_integer_value(J(v));
    return true;
}

const char *tc_json_string(const tc_json_value_t *v)
{
    return v && json_is_string(J(v)) ? json_string_value(J(v)) : NULL;
}

size_t tc_json_string_len(const tc_json_value_t *v)
{
    return v && json_is_string(J(v)) ? json_string_length(J(v)) : 0;
}

size_t tc_json_len(const tc_json_value_t *v)
{
    if (v && json_is_array(J(v)))
        return json_array_size(J(v));
    if (v && json_is_object(J(v)))
        return json_object_size(J(v));
    return 0;
}

const tc_json_value_t *tc_json_at(const tc_json_value_t *v, size_t i)
{
    return v && json_is_array(J(v)) ? V(json_array_get(J(v), i)) : NULL;
}

const tc_json_value_t *tc_json_get(const tc_json_value_t *v, const char *key)
{
    return v && json_is_object(J(v)) ? V(json_object_get(J(v), key)) : NULL;
}

const tc_json_member_t *tc_json_first(const tc_json_value_t *obj)
{
    return obj && json_is_object(J(obj)) ? json_object_iter(J(obj)) : NULL;
}

const tc_json_member_t *tc_json_next(const tc_json_value_t *obj, const tc_json_member_t *m)
{
    return json_object_iter_next(J(obj), (void *)m);
}

const char *tc_json_member_key(const tc_json_member_t *m)
{
    return json_object_iter_key((void *)m);
}

const tc_json_value_t *tc_json_member_value(const tc_json_member_t *m)
{
    return V(json_object_iter_value((void *)m));
}
