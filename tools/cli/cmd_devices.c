/* `clformer devices`: every platform and device, and the one selected. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

/* The GEMM provider this device gets under CLFORMER_GEMM; NULL (with the
 * reason recorded) where CLFORMER_GEMM names one it cannot use. */
static const char *gemm_provider(const clformer_device_info *d)
{
    clformer_gemm_provider p;
    if (clformer_gemm_provider_for(d, getenv("CLFORMER_GEMM"), &p) != CLFORMER_OK) return NULL;
    return clformer_gemm_provider_name(p);
}

static void print_json(const clformer_device_info *d, size_t n, long selected)
{
    printf("{\"devices\": [");
    for (size_t i = 0; i < n; i++) {
        const clformer_device_info *x = &d[i];
        printf("%s\n  {\"selector\": ", i ? "," : "");
        json_string(x->selector);
        printf(", \"platform\": ");
        json_string(x->platform);
        printf(", \"vendor\": ");
        json_string(x->vendor);
        printf(", \"name\": ");
        json_string(x->name);
        printf(", \"type\": \"%s\", \"selected\": %s, \"driver_version\": ", clformer_device_type_name(x->type),
               (long)i == selected ? "true" : "false");
        json_string(x->driver_version);
        printf(", \"opencl_c_version\": ");
        json_string(x->c_version);
        printf(", \"compute_units\": %u, \"clock_mhz\": %u, \"global_mem_bytes\": %llu, "
               "\"local_mem_bytes\": %llu, \"max_alloc_bytes\": %llu, "
               "\"max_work_group_size\": %zu, \"fp16\": %s, \"fp64\": %s, \"simulator\": %s",
               x->compute_units, x->clock_mhz, (unsigned long long)x->global_mem_bytes,
               (unsigned long long)x->local_mem_bytes, (unsigned long long)x->max_alloc_bytes,
               x->max_work_group_size, x->fp16 ? "true" : "false", x->fp64 ? "true" : "false",
               x->simulator ? "true" : "false");
        const char *gemm = gemm_provider(x);
        printf(", \"native_kernels\": %s, \"gemm_provider\": ", x->native_kernels ? "true" : "false");
        if (gemm) json_string(gemm);
        else printf("null");
        printf("}");
    }
    printf("\n]}\n");
}

static void print_table(const clformer_device_info *d, size_t n, long selected)
{
    for (size_t i = 0; i < n; i++) {
        const clformer_device_info *x = &d[i];
        printf("%s %-5s %s\n", (long)i == selected ? "*" : " ", x->selector, x->name);
        printf("        platform  %s (%s); device vendor %s\n", x->platform, x->platform_vendor,
               x->vendor);
        printf("        type      %s%s, %u compute units at %u MHz\n", clformer_device_type_name(x->type),
               x->simulator ? " (simulator: used only when named)" : "", x->compute_units,
               x->clock_mhz);
        printf("        memory    %.0f MiB global, %.0f KiB local, %.0f MiB max allocation\n",
               x->global_mem_bytes / 1048576.0, x->local_mem_bytes / 1024.0,
               x->max_alloc_bytes / 1048576.0);
        printf("        limits    work-group %zu; fp16 %s, fp64 %s\n", x->max_work_group_size,
               x->fp16 ? "yes" : "no", x->fp64 ? "yes" : "no");
        printf("        driver    %s; %s\n", x->driver_version, x->c_version);
        const char *gemm = gemm_provider(x);
        if (!gemm)
            printf("        gemm      unusable: %s\n", clformer_last_error());
        else if (strcmp(gemm, "host") == 0)
            printf("        gemm      host: OpenBLAS sgemm in native kernels (CLFORMER_GEMM=clblast "
                   "for CLBlast)\n");
        else
            printf("        gemm      clblast%s\n", x->native_kernels ? "" : " (no native kernels)");
    }
}

int cmd_devices(int argc, char **argv)
{
    bool json = false;
    const cli_option options[] = {
        {"--json", CLI_FLAG, &json, NULL, "print JSON: {\"devices\": [{\"selector\", ...}]}"},
    };
    const cli_spec spec = {
        "devices", "List every OpenCL platform and device with its capabilities; mark the one\n"
                   "CLFORMER_DEVICE selects and print the export line that reproduces it.",
        "clformer devices [--json]",
        "CLFORMER_DEVICE grammar: P:D (indices), gpu | cpu | accelerator, or parts of the\n"
        "platform/vendor and device names: amd, intel:gpu, pocl:pthread, oclgrind.\n"
        "Unset: the best GPU, else an accelerator, else a CPU (simulators only when named).\n"
        "GEMM: CPU devices that run native kernels use OpenBLAS (\"host\"), others CLBlast;\n"
        "CLFORMER_GEMM=clblast|host|auto overrides that.",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    clformer_device_info *devs = NULL;
    size_t n = 0;
    if (clformer_list_devices(&devs, &n) != CLFORMER_OK) {
        cli_runtime_error("devices", "listing OpenCL devices");
        return 1;
    }
    const char *selector = getenv("CLFORMER_DEVICE");
    size_t chosen = 0;
    clformer_status st = clformer_select_device(devs, n, selector, &chosen);
    long selected = st == CLFORMER_OK ? (long)chosen : -1;
    if (json) print_json(devs, n, selected);
    else if (n) print_table(devs, n, selected);
    if (st != CLFORMER_OK) {
        cli_runtime_error("devices", selector && *selector ? "CLFORMER_DEVICE" : NULL);
        free(devs);
        return 1;
    }
    if (!json) {
        printf("\n* selected %s. To choose it explicitly:\nexport CLFORMER_DEVICE=%s\n",
               selector && *selector ? "by CLFORMER_DEVICE" : "by default", devs[chosen].selector);
        /* Index pairs move when ICDs are added; a name survives that. */
        size_t by_name;
        if (clformer_select_device(devs, n, devs[chosen].name, &by_name) == CLFORMER_OK &&
            by_name == chosen)
            printf("# or, stable across driver installs: export CLFORMER_DEVICE='%s'\n",
                   devs[chosen].name);
    }
    free(devs);
    return 0;
}
