/* Declarative command-line options shared by every subcommand.
 *
 * Options are long only (--name VALUE or --name=VALUE). A command that sets
 * `config_file` accepts --config FILE: a file of `key = value` lines with the
 * same keys as the flags ('#' starts a comment); flags on the command line
 * win over the file; an unknown key is an error that names the key. --help
 * prints usage generated from the same table, so it cannot drift. */
#ifndef TC_CLI_H
#define TC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    TC_OPT_END = 0,
    TC_OPT_FLAG,   /* bool *        */
    TC_OPT_STR,    /* const char ** (points into argv or the config file) */
    TC_OPT_INT,    /* long *        */
    TC_OPT_UINT,   /* unsigned long * (rejects negatives) */
    TC_OPT_DOUBLE, /* double *      */
} tc_opt_type_t;

typedef struct {
    const char *name; /* without the leading "--" */
    tc_opt_type_t type;
    void *dest;
    const char *metavar; /* shown in help, e.g. "N" */
    const char *help;
    bool required;
} tc_opt_t;

typedef struct {
    const char *prog;        /* "agent bench-conv" */
    const char *summary;     /* one line */
    const char *positional;  /* e.g. "FILE" or NULL */
    int min_positional;
    int max_positional;      /* -1: unbounded */
    bool config_file;        /* accept --config FILE */
    const char *epilog;      /* extra help text or NULL */
    const tc_opt_t *opts;    /* terminated by an entry with type TC_OPT_END */
} tc_cmd_spec_t;

/* Result of tc_cli_parse beyond a status. */
typedef struct {
    char **positional; /* points into argv */
    int n_positional;
    bool help_shown;   /* --help was printed, or --check-config found the options
                          valid: the command returns 0 without running */
    char *config_text; /* owned: the config file's text, if one was read */
} tc_cli_result_t;

/* Parse argv (argv[0] is the subcommand name). Returns 0, or TC_EUSAGE /
 * TC_EINVAL with a message naming the flag. */
int tc_cli_parse(const tc_cmd_spec_t *spec, int argc, char **argv, tc_cli_result_t *res);
void tc_cli_result_free(tc_cli_result_t *res);

/* tc_cli_parse at the start of a command. When it fails, or when
 * help_shown says the command does not run, `res` is freed already (with
 * help_shown kept), so the command returns at once:
 *     int rc = tc_cli_begin(&spec, argc, argv, &cli);
 *     if (rc < 0 || cli.help_shown)
 *         return rc;
 * Otherwise the command frees `res` (tc_cli_result_free) when done. */
int tc_cli_begin(const tc_cmd_spec_t *spec, int argc, char **argv, tc_cli_result_t *res);

/* Print generated help for `spec` to stdout. */
void tc_cli_print_help(const tc_cmd_spec_t *spec);

/* True if the option was given (on the command line or in the config file)
 * in the last tc_cli_parse of that spec. */
bool tc_cli_given(const tc_cmd_spec_t *spec, const char *name);

/* Parse a list of unsigned integers: "8,16,32", "8..256" (powers of two from
 * 8 to 256), "8..64:8" (8 to 64 in steps of 8), or combinations separated by
 * commas. Result is sorted and deduplicated; values must be within
 * [min, max]. `what` names the flag in error messages. Caller frees *out. */
int tc_parse_uint_list(const char *text, const char *what, unsigned long min, unsigned long max,
                       unsigned long **out, size_t *n_out);

/* Split a comma-separated list of names. Empty items are an error. Caller
 * frees each string and the array (tc_free_strv). */
int tc_parse_name_list(const char *text, const char *what, char ***out, size_t *n_out);
void tc_free_strv(char **v, size_t n);

#endif
