/* Signals and stdout for the whole life of a command (see exit_guard.h). */
#include "exit_guard.h"
#include "cli.h"
#include "clformer.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char interrupted_line[128];
static size_t interrupted_len;
static volatile sig_atomic_t said;

/* Async-signal-safe: unlink(2), write(2) and _exit only. */
static void on_signal(int sig)
{
    (void)sig;
    clformer_door_remove_temps(); /* a save in progress leaves nothing behind */
    if (!said && interrupted_len) {
        said = 1;
        ssize_t ignored = write(2, interrupted_line, interrupted_len);
        (void)ignored;
    }
    _exit(EXIT_INTERRUPTED);
}

void exit_guard_install(const char *command, bool quiet)
{
    interrupted_len = 0;
    if (!quiet) {
        int n = snprintf(interrupted_line, sizeof interrupted_line,
                         "\nclformer %s: interrupted\n", command);
        if (n > 0 && (size_t)n < sizeof interrupted_line) interrupted_len = (size_t)n;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void exit_guard_said(void) { said = 1; }

int exit_guard_finish(const char *command, int rc)
{
    errno = 0;
    const bool lost = fflush(stdout) != 0 || ferror(stdout);
    int err = errno;
    if (lost && err == 0) {
        /* the stream failed in an earlier flush (output longer than its
         * buffer: `devices --json` with four devices), whose errno later
         * calls overwrote; the output is incomplete already, so one more
         * byte is written to learn why */
        clearerr(stdout);
        errno = 0;
        if (fputc('\n', stdout) == EOF || fflush(stdout) != 0) err = errno;
    }
    if (lost && rc == 0) {
        fprintf(stderr, "clformer %s: error: cannot write to stdout: %s\n", command,
                err ? strerror(err) : "write error");
        rc = 1;
    }
    fflush(stderr);
    return rc;
}
