/* Subcommand dispatch shared by the agent and aggregator binaries. A command
 * returns 0 or a negative TC_E* code with a message recorded by tc_fail();
 * the dispatcher prints the message once and maps the code to the exit
 * status (0 ok, 1 runtime failure, 2 bad usage or input). */
#ifndef TC_MAIN_H
#define TC_MAIN_H

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    const char *summary;
} tc_command_t;

/* `commands` ends with an entry whose name is NULL. */
int tc_main_dispatch(const char *prog, const char *summary, const tc_command_t *commands,
                     int argc, char **argv);

#endif
