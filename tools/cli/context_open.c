/* Opening the device with a progress line on a terminal (context_open.h). */
#include "context_open.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One line, redrawn in place and cleared when the wait is over, so that
 * the command's own output (a training line) starts on a clean line. The
 * GEMM search counts candidate parameter sets, the rest programs. */
void cli_show_progress(const char *what, size_t done, size_t total, void *user)
{
    (void)user;
    const bool gemm = strncmp(what, "tuning GEMM", 11) == 0;
    fprintf(stderr, "\r\033[K%s: %zu/%zu %s", what, done, total, gemm ? "candidates" : "programs");
    if (done == total) fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

clformer_status cli_context_create(const char *selector, clformer_context **ctx)
{
    clformer_context_params params;
    clformer_status st = clformer_context_params_from_env(&params);
    if (st != CLFORMER_OK) return st;
    if (selector) params.device = selector;
    if (isatty(STDERR_FILENO)) params.progress = cli_show_progress;
    return clformer_context_create_with_params(&params, ctx);
}
