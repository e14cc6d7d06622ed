/*
 * kernel_resources: what the device's OpenCL compiler made of every kernel
 * clformer builds for it (clformer_check_kernel_resources), one line a
 * kernel; tools/device-check.sh runs it on a lent GPU, and its figures are
 * what tools/proxy/register-proxy.sh estimates without one.
 */
#include "clformer_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: kernel_resources [--dh N,N,...] [--log]\n\n"
               "Builds every kernel program from source for the device CLFORMER_DEVICE "
               "selects, with the\noptions its profile gives (the tiled attention kernels "
               "once per head size: --dh, default\n32,64,80,96,128, where the profile runs "
               "them), and prints one line a kernel: private bytes\nper work item (off-chip "
               "on GPUs), local bytes per group, the largest group it may launch\nwith, the "
               "preferred multiple, and on NVIDIA ptxas' registers and spilled bytes (from "
               "the\nbuild log, built with -cl-nv-verbose). --log also prints each program's "
               "build log.\n");
    return rc;
}

/* NVIDIA's log: "Compiling entry function 'K'" then "N bytes spill stores"
 * and "Used N registers" for it. -1 where the log has no such lines. */
static void ptxas_figures(const char *log, const char *kernel, long *registers, long *spilled)
{
    *registers = *spilled = -1;
    char key[300];
    snprintf(key, sizeof key, "entry function '%s'", kernel);
    const char *at = strstr(log, key);
    if (!at) return;
    const char *next = strstr(at + 1, "entry function '");
    const char *spill = strstr(at, "bytes spill stores"), *used = strstr(at, "Used ");
    if (spill && (!next || spill < next)) {
        const char *p = spill;
        while (p > at && p[-1] == ' ') p--;
        while (p > at && p[-1] >= '0' && p[-1] <= '9') p--;
        *spilled = strtol(p, NULL, 10);
    }
    if (used && (!next || used < next)) *registers = strtol(used + 5, NULL, 10);
}

typedef struct {
    bool log;
    const char *program; /* the program (and head size) whose log was printed last */
    size_t head_dim;
} printer;

static void print_kernel(const clformer_check_kernel *k, void *user)
{
    printer *p = user;
    if (p->log && (!p->program || strcmp(k->program, p->program) || k->head_dim != p->head_dim)) {
        printf("# build log of cl/%s.cl%s:\n%s\n", k->program, k->head_dim ? " (this head size)" : "",
               *k->build_log ? k->build_log : "(empty)");
        p->program = k->program;
        p->head_dim = k->head_dim;
    }
    long registers, spilled;
    ptxas_figures(k->build_log, k->kernel, &registers, &spilled);
    char dh[24] = "-", regs[24] = "-", spill[24] = "-";
    if (k->head_dim) snprintf(dh, sizeof dh, "%zu", k->head_dim);
    if (registers >= 0) snprintf(regs, sizeof regs, "%ld", registers);
    if (spilled >= 0) snprintf(spill, sizeof spill, "%ld", spilled);
    printf("%-22s %4s %-34s %8llu %8llu %6zu %4zu %5s %6s\n", k->program, dh, k->kernel,
           (unsigned long long)k->private_bytes, (unsigned long long)k->local_bytes,
           k->max_work_group, k->preferred_multiple, regs, spill);
}

/* "32,64" into dims; false with a message on anything else. */
static bool parse_dims(const char *text, size_t *dims, size_t cap, size_t *n)
{
    *n = 0;
    for (const char *p = text; *p;) {
        char *end;
        errno = 0;
        const long v = strtol(p, &end, 10);
        if (errno || end == p || v < 1 || v > 256 || (*end && *end != ',') || *n == cap) {
            fprintf(stderr, "kernel_resources: --dh '%s': give up to %zu head sizes from 1 to "
                            "256, as N,N,...\n", text, cap);
            return false;
        }
        dims[(*n)++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return *n > 0;
}

int main(int argc, char **argv)
{
    size_t dims[16] = {32, 64, 80, 96, 128}, n = 5;
    printer p = {false, NULL, 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout, 0);
        if (!strcmp(argv[i], "--log")) {
            p.log = true;
        } else if (!strcmp(argv[i], "--dh") && i + 1 < argc) {
            if (!parse_dims(argv[++i], dims, sizeof dims / sizeof *dims, &n)) return 2;
        } else {
            fprintf(stderr, "kernel_resources: unknown option or missing value '%s' (see "
                            "--help)\n", argv[i]);
            return 2;
        }
    }
    clformer_context *ctx = NULL;
    if (clformer_context_create(NULL, &ctx) != CLFORMER_OK) {
        fprintf(stderr, "kernel_resources: %s\n", clformer_last_error());
        return 1;
    }
    const clformer_device_info *dev = clformer_context_device(ctx);
    printf("# device: %s | %s | driver %s\n", dev->platform, dev->name, dev->driver_version);
    printf("%-22s %4s %-34s %8s %8s %6s %4s %5s %6s\n", "program", "dh", "kernel", "private",
           "local", "group", "mult", "regs", "spill");
    const clformer_status st = clformer_check_kernel_resources(ctx, dims, n, print_kernel, &p);
    if (st != CLFORMER_OK) fprintf(stderr, "kernel_resources: %s\n", clformer_last_error());
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}
