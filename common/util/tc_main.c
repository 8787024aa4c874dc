#include "tc_main.h"

#include "tc_error.h"
#include "tc_log.h"
#include "tc_suggest.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static void s_usage(FILE *out, const char *prog, const char *summary, const tc_command_t *commands)
{
    fprintf(out, "usage: %s COMMAND [options]\n\n%s\n\ncommands:\n", prog, summary);
    for (const tc_command_t *c = commands; c->name; c++)
        fprintf(out, "  %-14s %s\n", c->name, c->summary);
    fprintf(out, "\n'%s COMMAND --help' describes a command's options; '%s --version' (-V) "
                 "prints the version.\n"
                 "Environment: TRAINCAST_LOG=error|warn|info|debug sets the log level.\n",
            prog, prog);
}

int tc_main_dispatch(const char *prog, const char *summary, const tc_command_t *commands,
                     int argc, char **argv)
{
    tc_log_set_component(prog);
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        s_usage(argc < 2 ? stderr : stdout, prog, summary, commands);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
        !strcmp(argv[1], "version")) {
        printf("%s (traincast) %s\n", prog, TRAINCAST_VERSION);
        return 0;
    }
    for (const tc_command_t *c = commands; c->name; c++) {
        if (strcmp(c->name, argv[1]) != 0)
            continue;
        tc_err_clear();
        int rc = c->run(argc - 1, argv + 1);
        if (rc >= 0)
            return rc;
        const char *msg = tc_errmsg();
        fprintf(stderr, "%s %s: error: %s\n", prog, c->name, *msg ? msg : tc_strerror(rc));
        if (*tc_errwhere() && tc_log_get_level() >= TC_LOG_DEBUG)
            fprintf(stderr, "  (at %s)\n", tc_errwhere());
        return tc_exit_status(rc);
    }
    const char *names[64];
    size_t n = 0;
    for (const tc_command_t *c = commands; c->name && n < 64; c++)
        names[n++] = c->name;
    const char *best = tc_suggest(argv[1], names, n);
    if (best)
        fprintf(stderr, "%s: unknown command '%s': did you mean '%s'?\n\n", prog, argv[1],
                best);
    else
        fprintf(stderr, "%s: unknown command '%s'\n\n", prog, argv[1]);
    s_usage(stderr, prog, summary, commands);
    return 2;
}
