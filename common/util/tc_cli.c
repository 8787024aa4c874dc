#include "tc_cli.h"

#include "tc_error.h"
#include "tc_suggest.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TC_CLI_MAX_OPTS 128
#define TC_CONFIG_MAX_BYTES (1 << 20)

/* Which options of the last parsed spec were given. */
static const tc_cmd_spec_t *s_last_spec;
static bool s_given[TC_CLI_MAX_OPTS];

static int s_find(const tc_cmd_spec_t *spec, const char *name, size_t len)
{
    for (int i = 0; spec->opts[i].type != TC_OPT_END; i++) {
        if (strlen(spec->opts[i].name) == len && strncmp(spec->opts[i].name, name, len) == 0)
            return i;
    }
    return -1;
}

/* " (did you mean --NAME?)" when an option of `spec` is close to the
 * unknown `name` (the first `len` bytes), or "". */
static const char *s_did_you_mean(const tc_cmd_spec_t *spec, const char *name, size_t len,
                                  char *buf, size_t size)
{
    const char *names[TC_CLI_MAX_OPTS + 3];
    size_t n = 0;
    for (int i = 0; spec->opts[i].type != TC_OPT_END && n < TC_CLI_MAX_OPTS; i++)
        names[n++] = spec->opts[i].name;
    if (spec->config_file) {
        names[n++] = "config";
        names[n++] = "check-config";
    }
    names[n++] = "help";
    char typed[256];
    snprintf(typed, sizeof typed, "%.*s", (int)(len < sizeof typed ? len : sizeof typed - 1),
             name);
    const char *best = tc_suggest(typed, names, n);
    if (!best)
        return "";
    snprintf(buf, size, "did you mean --%s? ", best);
    return buf;
}

static int s_assign(const tc_opt_t *opt, const char *value, const char *source)
{
    char *end = NULL;
    errno = 0;
    switch (opt->type) {
    case TC_OPT_STR:
        *(const char **)opt->dest = value;
        return 0;
    case TC_OPT_INT: {
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end)
            return tc_fail(TC_EUSAGE, "%s--%s expects an integer, got '%s'", source, opt->name,
                           value);
        *(long *)opt->dest = v;
        return 0;
    }
    case TC_OPT_UINT: {
        while (isspace((unsigned char)*value))
            value++;
        if (*value == '-')
            return tc_fail(TC_EUSAGE, "%s--%s expects a non-negative integer, got '%s'", source,
                           opt->name, value);
        unsigned long v = strtoul(value, &end, 10);
        if (errno || end == value || *end)
            return tc_fail(TC_EUSAGE, "%s--%s expects a non-negative integer, got '%s'", source,
                           opt->name, value);
        *(unsigned long *)opt->dest = v;
        return 0;
    }
    case TC_OPT_DOUBLE: {
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v))
            return tc_fail(TC_EUSAGE, "%s--%s expects a number, got '%s'", source, opt->name,
                           value);
        *(double *)opt->dest = v;
        return 0;
    }
    case TC_OPT_FLAG: {
        bool v;
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1") ||
            !strcmp(value, "on"))
            v = true;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0") ||
                 !strcmp(value, "off"))
            v = false;
        else
            return tc_fail(TC_EUSAGE, "%s%s expects true or false, got '%s'", source, opt->name,
                           value);
        *(bool *)opt->dest = v;
        return 0;
    }
    case TC_OPT_END:
        break;
    }
    return tc_fail(TC_EUSAGE, "internal: option --%s has no type", opt->name);
}

static char *s_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int s_read_config(const tc_cmd_spec_t *spec, const char *path, tc_cli_result_t *res)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return tc_fail(TC_EINVAL, "cannot open config file %s: %s", path, strerror(errno));
    char *text = calloc(1, TC_CONFIG_MAX_BYTES + 1);
    if (!text) {
        fclose(f);
        return tc_fail(TC_ENOMEM, "out of memory reading %s", path);
    }
    size_t n = fread(text, 1, TC_CONFIG_MAX_BYTES + 1, f);
    fclose(f);
    if (n > TC_CONFIG_MAX_BYTES) {
        free(text);
        return tc_fail(TC_EINVAL, "config file %s is larger than 1 MiB", path);
    }
    res->config_text = text;

    char source[600];
    int lineno = 0;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = s_trim(line);
        line = next;
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            return tc_fail(TC_EINVAL, "%s:%d: expected 'key = value', got '%s'", path, lineno, s);
        *eq = '\0';
        char *key = s_trim(s);
        char *value = s_trim(eq + 1);
        size_t vlen = strlen(value);
        if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"') {
            value[vlen - 1] = '\0';
            value++;
        }
        int idx = s_find(spec, key, strlen(key));
        if (idx < 0 || !strcmp(key, "config") || !strcmp(key, "help")) {
            char hint[300];
            const char *dym = idx < 0 ? s_did_you_mean(spec, key, strlen(key), hint, sizeof hint)
                                      : "";
            return tc_fail(TC_EINVAL,
                           "%s:%d: unknown key '%s' (%skeys are the long flags of '%s')", path,
                           lineno, key, dym, spec->prog);
        }
        if (s_given[idx])
            continue; /* the command line wins */
        snprintf(source, sizeof source, "%s:%d: ", path, lineno);
        int rc = s_assign(&spec->opts[idx], value, source);
        if (rc < 0)
            return rc == TC_EUSAGE ? TC_EINVAL : rc;
        s_given[idx] = true;
    }
    return 0;
}

int tc_cli_parse(const tc_cmd_spec_t *spec, int argc, char **argv, tc_cli_result_t *res)
{
    memset(res, 0, sizeof *res);
    memset(s_given, 0, sizeof s_given);
    s_last_spec = spec;
    const char *config_path = NULL;
    bool check_only = false;
    res->positional = calloc((size_t)(argc > 0 ? argc : 1), sizeof(char *));
    if (!res->positional)
        return tc_fail(TC_ENOMEM, "out of memory");

    bool only_positional = false;
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            res->positional[res->n_positional++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_positional = true;
            continue;
        }
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            tc_cli_print_help(spec);
            res->help_shown = true;
            return 0;
        }
        if (arg[1] != '-')
            return tc_fail(TC_EUSAGE, "unknown option '%s' (options are long: --name; see %s --help)",
                           arg, spec->prog);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (spec->config_file && len == 6 && !strncmp(name, "config", 6)) {
            if (eq)
                config_path = eq + 1;
            else if (i + 1 < argc)
                config_path = argv[++i];
            else
                return tc_fail(TC_EUSAGE, "--config needs a FILE");
            continue;
        }
        if (spec->config_file && !eq && !strcmp(name, "check-config")) {
            check_only = true;
            continue;
        }
        int idx = s_find(spec, name, len);
        if (idx < 0) {
            char hint[300];
            return tc_fail(TC_EUSAGE, "unknown option '--%.*s' (%ssee %s --help)", (int)len,
                           name, s_did_you_mean(spec, name, len, hint, sizeof hint), spec->prog);
        }
        const tc_opt_t *opt = &spec->opts[idx];
        int rc;
        if (opt->type == TC_OPT_FLAG && !eq) {
            *(bool *)opt->dest = true;
            rc = 0;
        } else if (eq) {
            rc = s_assign(opt, eq + 1, "");
        } else if (i + 1 < argc) {
            rc = s_assign(opt, argv[++i], "");
        } else {
            return tc_fail(TC_EUSAGE, "--%s needs a value (%s)", opt->name,
                           opt->metavar ? opt->metavar : "VALUE");
        }
        if (rc < 0)
            return rc;
        s_given[idx] = true;
    }
    if (config_path) {
        int rc = s_read_config(spec, config_path, res);
        if (rc < 0)
            return rc;
    }
    for (int i = 0; spec->opts[i].type != TC_OPT_END; i++) {
        if (spec->opts[i].required && !s_given[i])
            return tc_fail(TC_EUSAGE, "--%s is required (see %s --help)",
                           spec->opts[i].name, spec->prog);
    }
    if (res->n_positional < spec->min_positional)
        return tc_fail(TC_EUSAGE, "missing %s (see %s --help)",
                       spec->positional ? spec->positional : "argument", spec->prog);
    if (spec->max_positional >= 0 && res->n_positional > spec->max_positional)
        return tc_fail(TC_EUSAGE, "unexpected argument '%s' (see %s --help)",
                       res->positional[spec->max_positional], spec->prog);
    if (check_only) {
        printf("%s: the options%s%s are valid\n", spec->prog, config_path ? " and " : "",
               config_path ? config_path : "");
        res->help_shown = true;
    }
    return 0;
}

void tc_cli_result_free(tc_cli_result_t *res)
{
    free(res->positional);
    free(res->config_text);
    memset(res, 0, sizeof *res);
}

int tc_cli_begin(const tc_cmd_spec_t *spec, int argc, char **argv, tc_cli_result_t *res)
{
    int rc = tc_cli_parse(spec, argc, argv, res);
    if (rc < 0 || res->help_shown) {
        bool help_shown = res->help_shown;
        tc_cli_result_free(res);
        res->help_shown = help_shown;
    }
    return rc;
}

bool tc_cli_given(const tc_cmd_spec_t *spec, const char *name)
{
    if (spec != s_last_spec)
        return false;
    int idx = s_find(spec, name, strlen(name));
    return idx >= 0 && s_given[idx];
}

#define S_HELP_LEFT 26  /* width of the option column */
#define S_HELP_WIDTH 100 /* lines wrap before this column */

/* One option's help: the option in a column of S_HELP_LEFT, its
 * description beside it, wrapped at words to S_HELP_WIDTH and indented
 * under itself; an option too long for its column stands on a line of its
 * own with the description under it. */
static void s_help_line(const char *left, const char *text, const char *suffix)
{
    const int indent = 2 + S_HELP_LEFT + 1;
    if ((int)strlen(left) > S_HELP_LEFT)
        printf("  %s\n%*s", left, indent, "");
    else
        printf("  %-*s ", S_HELP_LEFT, left);
    int col = indent;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%s", text ? text : "", suffix ? suffix : "");
    bool line_empty = true;
    for (const char *p = buf; *p;) {
        if (*p == '\n') {
            printf("\n%*s", indent, "");
            col = indent;
            line_empty = true;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t w = strcspn(p, " \n");
        if (!line_empty && col + 1 + (int)w > S_HELP_WIDTH) {
            printf("\n%*s", indent, "");
            col = indent;
            line_empty = true;
        }
        if (!line_empty) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)w, p);
        col += (int)w;
        line_empty = false;
        p += w;
    }
    putchar('\n');
}

void tc_cli_print_help(const tc_cmd_spec_t *spec)
{
    printf("usage: %s [options]%s%s\n", spec->prog, spec->positional ? " " : "",
           spec->positional ? spec->positional : "");
    if (spec->summary)
        printf("\n%s\n", spec->summary);
    printf("\noptions:\n");
    for (int i = 0; spec->opts[i].type != TC_OPT_END; i++) {
        const tc_opt_t *o = &spec->opts[i];
        char left[256];
        if (o->type == TC_OPT_FLAG)
            snprintf(left, sizeof left, "--%s", o->name);
        else
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        s_help_line(left, o->help, o->required ? " (required)" : "");
    }
    if (spec->config_file) {
        s_help_line("--config FILE", "read 'key = value' lines with the same keys as the flags",
                    NULL);
        s_help_line("--check-config",
                    "check the options and the config file (keys, values, required options) "
                    "and exit",
                    NULL);
    }
    s_help_line("--help", "show this help", NULL);
    if (spec->epilog)
        printf("\n%s\n", spec->epilog);
}

static int s_push(unsigned long **v, size_t *n, size_t *cap, unsigned long x)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        unsigned long *nv = realloc(*v, nc * sizeof **v);
        if (!nv)
            return tc_fail(TC_ENOMEM, "out of memory");
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int s_cmp_ul(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

static int s_parse_ul(const char *s, const char *e, unsigned long *out)
{
    if (s == e)
        return -1;
    unsigned long v = 0;
    for (const char *p = s; p < e; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        if (v > (ULONG_MAX - 9) / 10)
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    *out = v;
    return 0;
}

#define TC_LIST_MAX_ITEMS 100000

int tc_parse_uint_list(const char *text, const char *what, unsigned long min, unsigned long max,
                       unsigned long **out, size_t *n_out)
{
    unsigned long *v = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    *out = NULL;
    *n_out = 0;
    if (!text || !*text)
        TC_FAIL_GOTO(TC_EUSAGE, "%s is empty; give values like 8,16,32 or 8..256", what);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *dots = strstr(p, "..");
        if (dots && dots >= end)
            dots = NULL;
        unsigned long a, b, step = 0;
        if (dots) {
            const char *colon = memchr(dots, ':', (size_t)(end - dots));
            if (s_parse_ul(p, dots, &a) < 0 || s_parse_ul(dots + 2, colon ? colon : end, &b) < 0 ||
                (colon && (s_parse_ul(colon + 1, end, &step) < 0 || step == 0)))
                TC_FAIL_GOTO(TC_EUSAGE,
                             "%s: cannot read '%.*s' (use A..B for powers of two, A..B:STEP for steps)",
                             what, (int)(end - p), p);
            if (a > b || a == 0)
                TC_FAIL_GOTO(TC_EUSAGE, "%s: range '%.*s' must go from a positive start up to its end",
                             what, (int)(end - p), p);
            for (unsigned long x = a; x <= b;) {
                if (n >= TC_LIST_MAX_ITEMS)
                    TC_FAIL_GOTO(TC_EUSAGE, "%s: more than %d values", what, TC_LIST_MAX_ITEMS);
                TC_TRY(s_push(&v, &n, &cap, x));
                unsigned long next = step ? x + step : x * 2;
                if (next <= x)
                    break;
                x = next;
            }
        } else {
            if (s_parse_ul(p, end, &a) < 0)
                TC_FAIL_GOTO(TC_EUSAGE, "%s: '%.*s' is not a non-negative integer", what,
                             (int)(end - p), p);
            if (n >= TC_LIST_MAX_ITEMS)
                TC_FAIL_GOTO(TC_EUSAGE, "%s: more than %d values", what, TC_LIST_MAX_ITEMS);
            TC_TRY(s_push(&v, &n, &cap, a));
        }
        p = *end ? end + 1 : end;
        if (*end && !*p)
            TC_FAIL_GOTO(TC_EUSAGE, "%s: trailing comma in '%s'", what, text);
    }
    qsort(v, n, sizeof *v, s_cmp_ul);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < min || v[i] > max)
            TC_FAIL_GOTO(TC_EUSAGE, "%s: %lu is outside %lu..%lu", what, v[i], min, max);
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    }
    *out = v;
    *n_out = m;
    return 0;
err:
    free(v);
    return rc;
}

int tc_parse_name_list(const char *text, const char *what, char ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!text || !*text)
        return tc_fail(TC_EUSAGE, "%s is empty", what);
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == ',';
    char **v = calloc(cap, sizeof *v);
    if (!v)
        return tc_fail(TC_ENOMEM, "out of memory");
    size_t n = 0;
    for (const char *p = text;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (!len) {
            tc_free_strv(v, n);
            return tc_fail(TC_EUSAGE, "%s: empty name in '%s'", what, text);
        }
        v[n] = strndup(p, len);
        if (!v[n]) {
            tc_free_strv(v, n);
            return tc_fail(TC_ENOMEM, "out of memory");
        }
        n++;
        if (!end)
            break;
        p = end + 1;
    }
    *out = v;
    *n_out = n;
    return 0;
}

void tc_free_strv(char **v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}
