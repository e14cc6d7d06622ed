/* The `clformer` subcommands: each takes argv with argv[0] = its name and
 * returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef CLFORMER_COMMANDS_H
#define CLFORMER_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
