/* The agent's subcommands, one file each (cmd_*.c). */
#ifndef TC_AGENT_COMMANDS_H
#define TC_AGENT_COMMANDS_H

int tc_cmd_trace(int argc, char **argv);

#endif
