/*
 * gemm_proxy: the GEMM part of the GPU proxy, one CLBlast product on
 * Oclgrind's device with an NVIDIA GPU's parameter sets
 * (clformer_check_gemm_proxy_run; runtime/check/gemm_proxy.c says which).
 * tools/proxy/gemm-proxy.sh runs it under OCLGRIND_INST_COUNTS=1, which makes
 * Oclgrind print each kernel's executed instructions, and reads them.
 *
 *   gemm_proxy --list                    the sets and shapes, one per line
 *   gemm_proxy --set NAME --shape NAME   one product; prints a line of facts
 */
#include "clformer_check.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *set = NULL, *shape = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list")) {
            clformer_check_gemm_proxy_list(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            set = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
            shape = argv[++i];
        } else {
            const bool help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
            fprintf(help ? stdout : stderr, "usage: gemm_proxy --list | --set NAME --shape NAME\n");
            return help ? 0 : 2;
        }
    }
    if (!set || !shape) {
        fprintf(stderr, "gemm_proxy: give --set and --shape from gemm_proxy --list\n");
        return 2;
    }
    if (clformer_check_gemm_proxy_run(set, shape, stdout) != CLFORMER_OK) {
        fprintf(stderr, "gemm_proxy: %s\n", clformer_last_error());
        return 1;
    }
    return 0;
}
