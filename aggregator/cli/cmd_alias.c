/* aggregator alias: the short names of device classes that predict's table,
 * its plot, --gpu and --prices use. */
#include "cli_db.h"
#include "commands.h"
#include "device_match.h"
#include "store.h"
#include "store_model.h"

#include "tc_cli.h"
#include "tc_error.h"
#include "tc_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const tc_col_t s_cols[] = {
    {"device", TC_COL_TEXT},
    {"alias", TC_COL_TEXT},
    {"alias_set", TC_COL_BOOL},
};

/* Every device with its alias, set or default. */
static int s_list(const tc_device_class_t *all, size_t n, tc_format_t fmt)
{
    tc_table_t *t = tc_table_new("aliases", s_cols, sizeof s_cols / sizeof s_cols[0]);
    int rc = t ? 0 : tc_fail(TC_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *row[] = {all[i].name, all[i].alias, all[i].alias_set ? "true" : "false"};
        rc = tc_table_add_row(t, row);
    }
    if (rc == 0)
        rc = tc_table_print(stdout, fmt, &t, 1);
    tc_table_destroy(&t);
    return rc;
}

/* Set (or with alias NULL reset) the alias of the device `which` names. */
static int s_set(tc_store_t *store, tc_device_class_t *all, size_t n, const char *which,
                 const char *alias)
{
    size_t hit = 0;
    int rc = tc_device_match(all, n, which, "DEVICE", &hit);
    if (rc == 0 && alias)
        rc = tc_device_alias_check(alias);
    if (rc < 0)
        return rc;
    /* A default alias of another device is taken too: --gpu and --prices
     * would not know which of the two was meant. */
    for (size_t j = 0; alias && j < n; j++) {
        if (j != hit && !strcasecmp(all[j].alias, alias))
            return tc_fail(TC_EINVAL, "the alias '%s' is %s of '%s'; choose another", alias,
                           all[j].alias_set ? "the alias" : "the default alias", all[j].name);
        if (j != hit && !strcasecmp(all[j].name, alias))
            return tc_fail(TC_EINVAL, "the alias '%s' is the name of another device; choose "
                                      "another",
                           alias);
    }
    rc = tc_store_device_alias_set(store, all[hit].name, alias);
    if (rc == TC_ENOTFOUND)
        rc = TC_EINVAL;
    if (rc < 0)
        return rc;
    if (alias) {
        printf("'%s' is now '%s'\n", all[hit].name, alias);
    } else {
        char def[TC_DEVICE_ALIAS_MAX + 1];
        all[hit].alias_set = false;
        tc_device_alias_defaults(all, n);
        snprintf(def, sizeof def, "%s", all[hit].alias);
        printf("'%s' is '%s' again (its default)\n", all[hit].name, def);
    }
    return 0;
}

int tc_cmd_alias(int argc, char **argv)
{
    const char *db = NULL, *format = "table";
    bool reset = false;
    const tc_opt_t opts[] = {
        {"reset", TC_OPT_FLAG, &reset, NULL,
         "give DEVICE its default alias again (derived from its name)"},
        {"format", TC_OPT_STR, &format, "table|csv|json",
         "output format of the list (default: table)"},
        TC_DB_OPT(&db),
        {0},
    };
    const tc_cmd_spec_t spec = {
        .prog = "aggregator alias",
        .summary = "Show or set the short names of devices: predict's table and plot use them, "
                   "and --gpu and\n--prices accept them.",
        .positional = "[DEVICE [ALIAS]]",
        .max_positional = 2,
        .epilog = "Without arguments, lists every device with its alias (alias_set: false for "
                  "the default,\nderived from the name, e.g. 'EPYC 2t' for 'AMD EPYC (2 "
                  "threads) [...]'). DEVICE is the full\nname, its alias, or a part of the name "
                  "that matches one device only. An alias has at most\n16 characters and no "
                  "',', '=' or '#', and is unique among the devices (ignoring case).",
        .opts = opts,
    };
    tc_cli_result_t cli;
    int rc = tc_cli_begin(&spec, argc, argv, &cli);
    if (rc < 0 || cli.help_shown)
        return rc;
    tc_format_t fmt = TC_FMT_TABLE;
    tc_store_t *store = NULL;
    tc_device_class_t *all = NULL;
    size_t n = 0;
    const char *which = cli.n_positional > 0 ? cli.positional[0] : NULL;
    const char *alias = cli.n_positional > 1 ? cli.positional[1] : NULL;
    rc = tc_format_parse(format, &fmt);
    if (rc == 0 && reset && (!which || alias))
        rc = tc_fail(TC_EUSAGE, "--reset takes a DEVICE and no ALIAS");
    else if (rc == 0 && which && !alias && !reset)
        rc = tc_fail(TC_EUSAGE, "give DEVICE ALIAS to set an alias, DEVICE --reset for the "
                                "default, or nothing to list them");
    if (rc == 0)
        rc = tc_store_open(tc_default_dsn(db), &store);
    if (rc == 0)
        rc = tc_store_check_schema(store);
    if (rc == 0)
        rc = tc_store_device_classes(store, &all, &n);
    if (rc == 0)
        tc_device_alias_defaults(all, n);
    if (rc == 0 && which)
        rc = s_set(store, all, n, which, alias);
    else if (rc == 0)
        rc = s_list(all, n, fmt);
    free(all);
    tc_store_destroy(&store);
    tc_cli_result_free(&cli);
    return rc;
}
