/* The aggregator's subcommands, one file each (cmd_*.c). */
#ifndef TC_AGGREGATOR_COMMANDS_H
#define TC_AGGREGATOR_COMMANDS_H

int tc_cmd_migrate(int argc, char **argv);
int tc_cmd_predict(int argc, char **argv);
int tc_cmd_fit(int argc, char **argv);
int tc_cmd_validate(int argc, char **argv);

/* The --db value, falling back to $TRAINCAST_DB. NULL if neither is set. */
const char *tc_default_dsn(const char *flag_value);

#endif
