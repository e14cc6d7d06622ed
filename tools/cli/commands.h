/* The `clformer` subcommands: each takes argv with argv[0] = its name and
 * returns the process exit code (0 ok, 1 failure, 2 usage error). */
#ifndef CLFORMER_COMMANDS_H
#define CLFORMER_COMMANDS_H

int cmd_devices(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_translate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_average(int argc, char **argv);
int cmd_presets(int argc, char **argv);

#include <stdbool.h>

/* Draws a JSON-lines training log as loss curves into a PNG (what `clformer
 * plot` does); errors are printed as "clformer CMD: ...". Returns an exit code. */
int plot_training_log(const char *cmd, const char *log_path, const char *png_path,
                      const char *title, bool log_y, int width, int height);

#endif
