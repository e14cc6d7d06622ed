/*
 * What holds for every `clformer` command from its first instruction to its
 * last (issue 21):
 *  - SIGINT or SIGTERM ends it with exit status 130 and one line saying so,
 *    at any moment: while data loads, kernels compile, translate or eval
 *    run, or after a training run already saved on a stop request (a
 *    training run installs its own handler for its steps, train_run.c);
 *    the temp file of a write in progress is removed first (the door's
 *    clformer_door_remove_temps), so nothing half-written stays;
 *  - output that did not reach stdout is a failure: a full disk or a closed
 *    pipe turns exit 0 into exit 1 with one line naming stdout.
 */
#ifndef CLFORMER_EXIT_GUARD_H
#define CLFORMER_EXIT_GUARD_H

#include <stdbool.h>

/* Installs the SIGINT/SIGTERM handler for `command` (its line reads
 * "clformer COMMAND: interrupted"). `quiet`: end without a word (MPI ranks
 * other than 0). */
void exit_guard_install(const char *command, bool quiet);

/* A line about the interruption was already printed (a training run's stop
 * message): a later signal ends the process at once, without another. */
void exit_guard_said(void);

/* Flushes and checks stdout (and stderr); returns `rc`, or 1 after one line
 * on stderr when rc was 0 and stdout lost output. */
int exit_guard_finish(const char *command, int rc);

#endif
