/*
 * attention_proxy: writes the attention kernels of a GPU's profile as
 * Oclgrind simulator files (clformer_check_attention_sims) and prints one
 * line a launch, for tools/proxy/attention-proxy.sh:
 *   kernel=K phase=forward|backward sim=PATH groups=N items=N local_bytes=N pairs=N
 *   options=BUILD OPTIONS (the rest of the line)
 */
#include "clformer_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int usage(FILE *f, int rc)
{
    fprintf(f, "usage: attention_proxy --out DIR [--kernels tiled|rows] [--B N] [--H N] [--T N] "
               "[--dh N] [--vendor nvidia|amd]\n\n"
               "Writes the fused attention of B x H heads of T queries and keys of dh floats, as "
               "a reference GPU\n(NVIDIA's OpenCL limits) runs it, as Oclgrind .sim files under "
               "DIR (made if missing), and\nprints one line a launch (tools/proxy/attention-proxy.sh reads "
               "them). tiled: the tiled kernels\n(cl/flash_attention_tiled.cl); rows: the per-row "
               "ones GPUs ran before (cl/flash_attention.cl).\n--vendor: whose profile picks the "
               "tiled kernels' tiles.\nDefaults: tiled, B 2, H 4, T 128, dh 64, nvidia. "
               "CLFORMER_KERNEL_DIR reads cl/ from there.\n");
    return rc;
}

static bool count(const char *flag, const char *text, long max, size_t *out)
{
    char *end;
    errno = 0;
    const long v = strtol(text, &end, 10);
    if (errno || *end || v < 1 || v > max) {
        fprintf(stderr, "attention_proxy: %s '%s' must be a whole number from 1 to %ld\n", flag,
                text, max);
        return false;
    }
    *out = (size_t)v;
    return true;
}

typedef struct {
    size_t pairs;
} manifest;

static void print_sim(const clformer_check_sim *s, void *user)
{
    const manifest *m = user;
    printf("kernel=%s phase=%s sim=%s groups=%zu items=%zu local_bytes=%llu pairs=%zu "
           "options=%s\n",
           s->kernel, s->phase, s->sim, s->groups, s->items, (unsigned long long)s->local_bytes,
           m->pairs, s->build_options);
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *kernels = "tiled", *vendor = "nvidia";
    size_t B = 2, H = 4, T = 128, dh = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout, 0);
        if (i + 1 >= argc) {
            fprintf(stderr, "attention_proxy: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        bool ok = true;
        if (!strcmp(a, "--out")) dir = v;
        else if (!strcmp(a, "--kernels")) kernels = v;
        else if (!strcmp(a, "--vendor")) vendor = v;
        else if (!strcmp(a, "--B")) ok = count(a, v, 64, &B);
        else if (!strcmp(a, "--H")) ok = count(a, v, 64, &H);
        else if (!strcmp(a, "--T")) ok = count(a, v, 4096, &T);
        else if (!strcmp(a, "--dh")) ok = count(a, v, 256, &dh);
        else {
            fprintf(stderr, "attention_proxy: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (!ok) return 2;
    }
    if (!dir) {
        fprintf(stderr, "attention_proxy: --out DIR is required (see --help)\n");
        return 2;
    }
    if (strcmp(kernels, "tiled") && strcmp(kernels, "rows")) {
        fprintf(stderr, "attention_proxy: --kernels '%s': use tiled or rows\n", kernels);
        return 2;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "attention_proxy: cannot make %s: %s\n", dir, strerror(errno));
        return 1;
    }
    manifest m = {B * H * T * T};
    if (clformer_check_attention_sims(dir, getenv("CLFORMER_KERNEL_DIR"), B, H, T, dh,
                                      !strcmp(kernels, "tiled"), vendor, print_sim,
                                      &m) != CLFORMER_OK) {
        fprintf(stderr, "attention_proxy: %s\n", clformer_last_error());
        return 1;
    }
    return 0;
}
