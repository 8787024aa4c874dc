/* The aggregator's subcommands, one file each (cmd_*.c). */
#ifndef TC_AGGREGATOR_COMMANDS_H
#define TC_AGGREGATOR_COMMANDS_H

int tc_cmd_migrate(int argc, char **argv);
int tc_cmd_serve(int argc, char **argv);
int tc_cmd_status(int argc, char **argv);
int tc_cmd_keygen(int argc, char **argv);
int tc_cmd_predict(int argc, char **argv);
int tc_cmd_fit(int argc, char **argv);
int tc_cmd_validate(int argc, char **argv);
int tc_cmd_export(int argc, char **argv);
int tc_cmd_import(int argc, char **argv);
int tc_cmd_report(int argc, char **argv);
int tc_cmd_devices(int argc, char **argv);
int tc_cmd_models(int argc, char **argv);

#endif
