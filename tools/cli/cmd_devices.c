/* `clformer devices`: every platform and device, and the one selected. */
#include "blas_kernels.h"
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "pocl_devices.h"
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The GEMM provider this device gets under CLFORMER_GEMM; NULL (with the
 * reason recorded) where CLFORMER_GEMM names one it cannot use. */
static const char *gemm_provider(const clformer_device_info *d)
{
    clformer_context_params params;
    clformer_gemm_provider p;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK ||
        clformer_gemm_provider_for(d, params.gemm, &p) != CLFORMER_OK)
        return NULL;
    return clformer_gemm_provider_name(p);
}

/* Whether CLBlast's parameters are searched per GEMM shape on this device
 * under CLFORMER_GEMM_TUNING (docs/DEVICES.md): `search` anywhere, unset,
 * `1` or `auto` where the profile says so. */
static bool gemm_searched(const clformer_device_profile *p)
{
    clformer_context_params params;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK) return false;
    const char *t = params.gemm_tuning;
    if (t && !strcmp(t, "search")) return true;
    return p->gemm_search && (!t || !*t || !strcmp(t, "1") || !strcmp(t, "auto"));
}

/* Whether the tiled attention kernels' tiles are searched per head size on
 * this device under CLFORMER_ATTENTION_TUNING (docs/DEVICES.md): `search`
 * anywhere, unset or `auto` where the profile says so. */
static bool attention_searched(const clformer_device_profile *p)
{
    clformer_context_params params;
    if (!p->tiled_attention || clformer_context_params_from_env(&params) != CLFORMER_OK)
        return false;
    const char *t = params.attention_tuning;
    if (t && !strcasecmp(t, "search")) return true;
    return p->attention_search && (!t || !*t || !strcasecmp(t, "auto"));
}

/* Whether the GEMM search also times clformer's tiled kernel on this device
 * (runtime/device/gemm_search.h): where CLFORMER_GEMM leaves the choice to
 * the rule and the device takes the tiled provider. */
static bool tiled_in_search(const clformer_device_info *d)
{
    clformer_context_params params;
    clformer_gemm_provider p;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK) return false;
    const char *g = params.gemm;
    const bool chosen_by_rule = !g || !*g || !strcasecmp(g, "auto");
    return chosen_by_rule && clformer_gemm_provider_for(d, "tiled", &p) == CLFORMER_OK;
}

/* The device profile a context on this device would make under
 * CLFORMER_PROFILE; false (with the reason recorded) for a bad word. */
static bool profile_of(const clformer_device_info *d, clformer_device_profile *p)
{
    clformer_context_params params;
    return clformer_context_params_from_env(&params) == CLFORMER_OK &&
           clformer_device_profile_for(d, params.profile, p) == CLFORMER_OK;
}

static json_t *profile_json(const clformer_device_info *d)
{
    clformer_device_profile p;
    if (!profile_of(d, &p)) return json_null();
    json_t *sub = json_array();
    for (uint32_t i = 0; sub && i < p.n_subgroup_sizes; i++)
        json_array_append_new(sub, json_integer(p.subgroup_sizes[i]));
    json_t *facts = json_pack(
        "{s:s, s:s, s:I, s:I, s:o, s:b, s:b, s:b, s:b, s:b, s:I, s:I, s:I}", "kind",
        clformer_device_kind_name(p.kind), "vendor", p.vendor, "vector_width_float",
        (json_int_t)p.vector_width_float, "native_vector_width_float",
        (json_int_t)p.native_vector_width_float, "subgroup_sizes", sub ? sub : json_null(),
        "fp16", p.fp16, "fp64", p.fp64, "bf16", p.bf16, "native_kernels", p.native_kernels,
        "unified_memory", p.unified_memory, "max_alloc_bytes", (json_int_t)p.max_alloc_bytes,
        "max_work_group_size", (json_int_t)p.max_work_group_size, "local_mem_bytes",
        (json_int_t)p.local_mem_bytes);
    json_t *choices = json_pack(
        "{s:o, s:b, s:I, s:I, s:I, s:b, s:b, s:b, s:b, s:b, s:b, s:I, s:b, s:b, s:I, s:b}",
        "forced",
        p.forced ? json_string(p.forced) : json_null(), "gpu_layouts", p.gpu_layouts,
        "reduce_wg", (json_int_t)p.reduce_wg, "elementwise_wg", (json_int_t)p.elementwise_wg,
        "reduce_partials", (json_int_t)p.reduce_partials, "scalar_attention",
        p.scalar_attention, "host_gemm", p.host_gemm, "stage_uploads", p.stage_uploads,
        "keep_released_buffers",
        p.keep_released_buffers, "batched_gemm_one_by_one", p.batched_gemm_one_by_one,
        "gemm_search", p.gemm_search, "compile_threads", (json_int_t)p.compile_threads,
        "timings_meaningful", p.timings_meaningful, "tiled_attention", p.tiled_attention,
        "gemm_split_groups", (json_int_t)p.gemm_split_groups, "attention_search",
        p.attention_search);
    if (facts && choices && json_object_update(facts, choices) == 0) {
        json_decref(choices);
        return facts;
    }
    json_decref(facts);
    json_decref(choices);
    return NULL;
}

static bool print_json(const clformer_device_info *d, size_t n, long selected)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < n; i++) {
        const clformer_device_info *x = &d[i];
        json_t *o = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b, s:b}",
            "selector", x->selector, "platform", x->platform, "vendor", x->vendor, "name",
            x->name, "type", clformer_device_type_name(x->type), "selected", (long)i == selected,
            "driver_version", x->driver_version, "opencl_c_version", x->c_version,
            "compute_units", (json_int_t)x->compute_units, "clock_mhz", (json_int_t)x->clock_mhz,
            "global_mem_bytes", (json_int_t)x->global_mem_bytes, "local_mem_bytes",
            (json_int_t)x->local_mem_bytes, "max_alloc_bytes", (json_int_t)x->max_alloc_bytes,
            "max_work_group_size", (json_int_t)x->max_work_group_size, "fp16", x->fp16, "fp64",
            x->fp64, "simulator", x->simulator);
        /* fp16: cl_khr_fp16 (half arithmetic); bf16: a bfloat16 extension such as
         * cl_intel_bfloat16. 16-bit storage needs neither (cl/cast.cl). */
        if (o && json_object_set_new(o, "bf16", json_boolean(x->bf16))) {
            json_decref(o);
            o = NULL;
        }
        const char *gemm = gemm_provider(x);
        if (o && (json_object_set_new(o, "native_kernels", json_boolean(x->native_kernels)) ||
                  json_object_set_new(o, "gemm_provider",
                                      gemm ? json_string(gemm) : json_null()) ||
                  json_object_set_new(o, "profile", profile_json(x)))) {
            json_decref(o);
            o = NULL;
        }
        if (!o || json_array_append_new(list, o) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return cli_print_json(list ? json_pack("{s:o}", "devices", list) : NULL);
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
        printf("        limits    work-group %zu; fp64 %s\n", x->max_work_group_size,
               x->fp64 ? "yes" : "no");
        printf("        16-bit    bf16/fp16 storage yes (core OpenCL); fp16 arithmetic "
               "(cl_khr_fp16) %s; bfloat16 extension %s\n",
               x->fp16 ? "yes" : "no", x->bf16 ? "yes" : "no");
        printf("        driver    %s; %s\n", x->driver_version, x->c_version);
        clformer_device_profile p;
        if (profile_of(x, &p))
            printf("        profile   %s (%s), %s layouts, reduce %zu x %zu, float vectors "
                   "%u, %s attention%s%s%s%s\n",
                   clformer_device_kind_name(p.kind), p.vendor, p.gpu_layouts ? "GPU" : "CPU",
                   p.reduce_partials, p.reduce_wg, p.vector_width_float,
                   p.tiled_attention ? "tiled" : "per-row",
                   attention_searched(&p) ? " (its tiles searched per head size on first use, "
                                            "same bits: CLFORMER_ATTENTION_TUNING)"
                                          : "",
                   p.forced ? " (forced by CLFORMER_PROFILE=" : "", p.forced ? p.forced : "",
                   p.forced ? ")" : "");
        else
            printf("        profile   unusable: %s\n", clformer_last_error());
        const char *gemm = gemm_provider(x);
        if (!gemm)
            printf("        gemm      unusable: %s\n", clformer_last_error());
        else if (strcmp(gemm, "host") == 0) {
            char product[160];
            blas_kernels_describe(product, sizeof product);
            printf("        gemm      host: %s in native kernels (CLFORMER_GEMM=clblast for "
                   "CLBlast)\n", product);
        } else if (strcmp(gemm, "tiled") == 0)
            printf("        gemm      tiled: clformer's own kernel (cl/gemm.cl), as CLFORMER_GEMM "
                   "asks\n");
        else if (!(profile_of(x, &p) && gemm_searched(&p)))
            printf("        gemm      clblast%s\n", x->native_kernels ? "" : " (no native kernels)");
        else
            printf("        gemm      clblast%s; its parameters searched per shape on first use%s "
                   "(CLFORMER_GEMM_TUNING)\n",
                   x->native_kernels ? "" : " (no native kernels)",
                   tiled_in_search(x) ? ", and clformer's tiled kernel where faster, same bits"
                                      : "");
    }
}

/* Whether CLFORMER_DEVICE=candidate alone selects device `chosen` in a new
 * process: the same choice among the same devices. */
static bool reproduces(const clformer_device_info *devs, size_t n, size_t chosen,
                       const char *candidate)
{
    size_t i;
    return candidate && *candidate && pocl_devices_same_list(candidate) &&
           clformer_select_device(devs, n, candidate, &i) == CLFORMER_OK && i == chosen;
}

/* The export line that selects the chosen device again: its index pair, or
 * (when the pair would not, e.g. for PoCL's basic device, which only a
 * selector naming it turns on) a name, or the selector as given. Names
 * survive drivers installed later, which move index pairs: the device's
 * name, or its platform's and its own where the name alone is ambiguous
 * (Intel's CPU runtime and PoCL's device on an Intel CPU share theirs). */
static void print_export(const clformer_device_info *devs, size_t n, size_t chosen,
                         const char *selector)
{
    const clformer_device_info *d = &devs[chosen];
    char qualified[sizeof d->platform + sizeof d->name + 1];
    snprintf(qualified, sizeof qualified, "%s:%s", d->platform, d->name);
    const char *stable = reproduces(devs, n, chosen, d->name)      ? d->name
                         : reproduces(devs, n, chosen, qualified) ? qualified
                                                                  : NULL;
    printf("\n* selected %s. To choose it explicitly:\n",
           selector && *selector ? "by CLFORMER_DEVICE" : "by default");
    if (reproduces(devs, n, chosen, d->selector)) {
        printf("export CLFORMER_DEVICE=%s\n", d->selector);
        if (stable)
            printf("# or, stable across driver installs: export CLFORMER_DEVICE='%s'\n", stable);
    } else if (stable) {
        printf("export CLFORMER_DEVICE='%s'\n", stable);
    } else if (reproduces(devs, n, chosen, selector)) {
        printf("export CLFORMER_DEVICE='%s'\n", selector);
    }
}

/* Under mpirun: which device each rank takes (ranks.h), one line per rank. */
static int print_ranks(clformer_device_info *devs, size_t n, const char *selector)
{
    const ranks_info *ri = ranks_get();
    size_t index = 0, matches = 0;
    char line[512];
    clformer_status st =
        clformer_select_device_for_rank(devs, n, selector, ri->local_rank, &index, &matches);
    if (st == CLFORMER_OK)
        snprintf(line, sizeof line, "rank %d of %d (local rank %d): %s %s (match %zu of %zu)",
                 ri->rank, ri->size, ri->local_rank, devs[index].selector, devs[index].name,
                 (size_t)ri->local_rank % matches + 1, matches);
    else
        snprintf(line, sizeof line, "rank %d of %d (local rank %d): no device: %s", ri->rank,
                 ri->size, ri->local_rank, clformer_last_error());
    clformer_free(devs);
    ranks_print_in_order(line);
    return ranks_any(st != CLFORMER_OK) ? 1 : 0; /* printed before any rank ends the job */
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
        "CLFORMER_GEMM=clblast|host|auto overrides that. The profile is every choice made\n"
        "from what the device is; CLFORMER_PROFILE=gpu-layouts|cpu-layouts forces the\n"
        "work-group layouts and reduction partition of a GPU or a CPU (for tests).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    /* CLFORMER_DEVICE and the rest, read in one place; a bad setting
     * (CLFORMER_LOG=verbose) is its own error, not a device's */
    clformer_context_params env;
    if (clformer_context_params_from_env(&env) != CLFORMER_OK) {
        cli_runtime_error("devices", NULL);
        return 1;
    }
    clformer_device_info *devs = NULL;
    size_t n = 0;
    if (clformer_list_devices(&devs, &n) != CLFORMER_OK) {
        cli_runtime_error("devices", "listing OpenCL devices");
        return 1;
    }
    const char *selector = env.device;
    size_t chosen = 0;
    clformer_status st = clformer_select_device(devs, n, selector, &chosen);
    long selected = st == CLFORMER_OK ? (long)chosen : -1;
    if (ranks_get()->size > 1) return print_ranks(devs, n, selector);
    if (json) {
        if (!print_json(devs, n, selected)) {
            /* jansson refuses strings that are not UTF-8 */
            cli_error("devices", "cannot write the device list as JSON: out of memory, or a "
                      "driver reports a name that is not valid UTF-8");
            clformer_free(devs);
            return 1;
        }
    } else if (n && st == CLFORMER_OK) { /* else the selector's error lists them */
        print_table(devs, n, selected);
    }
    if (st != CLFORMER_OK) {
        cli_runtime_error("devices", selector && *selector ? "CLFORMER_DEVICE" : NULL);
        clformer_free(devs);
        return 1;
    }
    if (!json) print_export(devs, n, chosen, selector);
    clformer_free(devs);
    return 0;
}
