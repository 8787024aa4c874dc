/* The agent's subcommands, one file each (cmd_*.c). */
#ifndef TC_AGENT_COMMANDS_H
#define TC_AGENT_COMMANDS_H

int tc_cmd_info(int argc, char **argv);
int tc_cmd_bench_conv(int argc, char **argv);
int tc_cmd_bench_matmul(int argc, char **argv);
int tc_cmd_bench(int argc, char **argv);
int tc_cmd_keygen(int argc, char **argv);
int tc_cmd_push(int argc, char **argv);
int tc_cmd_serve(int argc, char **argv);
int tc_cmd_run(int argc, char **argv);
int tc_cmd_model(int argc, char **argv); /* cmd_model.c */
int tc_cmd_trace(int argc, char **argv);
int tc_cmd_status(int argc, char **argv);
int tc_cmd_routes(int argc, char **argv);

#endif
