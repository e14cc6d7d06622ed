/* `clformer check`: does this device compute the right numbers? Runs every
 * op, forward and backward, against the double-precision reference. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "clformer_check.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    json_t *results; /* --json: the results so far; NULL for the table */
    const char *device;
    int failures;
    int count;
} report;

static void print_result(const clformer_check_result *r, void *user)
{
    report *rep = user;
    if (!r->pass) rep->failures++;
    rep->count++;
    if (rep->results) {
        /* errors are NaN when the device returned NaN: null in JSON */
        json_array_append_new(
            rep->results,
            json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:b, s:o}", "op", r->op,
                      "precision", r->precision, "device", rep->device, "shape", r->shape, "max_abs_err",
                      cli_json_number(r->max_abs_err), "max_rel_err",
                      cli_json_number(r->max_rel_err), "nmse", cli_json_number(r->nmse),
                      "rule", r->rule, "pass", r->pass, "ms", cli_json_number(r->ms)));
        return;
    }
    printf("%-34s %-4s %-24s %10.3g %10.3g  %-42s %-4s %9.2f\n", r->op, r->precision, r->shape,
           r->max_abs_err,
           r->max_rel_err, r->rule,
           r->pass ? "pass" : "FAIL", r->ms);
    fflush(stdout);
}

/* The precisions --precision names: all three, or one. */
static size_t precisions_of(const char *word, clformer_precision out[3])
{
    if (!strcmp(word, "all")) {
        out[0] = CLFORMER_FP32, out[1] = CLFORMER_BF16, out[2] = CLFORMER_FP16;
        return 3;
    }
    return clformer_precision_parse(word, &out[0]) == CLFORMER_OK ? 1 : 0;
}

static int check_device(const char *selector, bool quick, const char *only,
                        const clformer_precision *precisions, size_t n_precisions, report *rep)
{
    clformer_context *ctx;
    if (clformer_context_create(selector, &ctx) != CLFORMER_OK) {
        cli_runtime_error("check", "opening the device");
        return 1;
    }
    const clformer_device_info *dev = clformer_context_device(ctx);
    rep->device = dev->name;
    /* the device's whole name on its own line: names run to 60 characters
     * and more (PoCL's name the CPU's), too wide for a column */
    if (!rep->results) {
        printf("device: %s (%s)\n", dev->name, dev->selector);
        printf("%-34s %-4s %-24s %10s %10s  %-42s %-4s %9s\n", "op", "prec", "shape", "max_abs",
               "max_rel", "tolerance", "", "ms");
    }
    const clformer_device_profile *profile = clformer_context_profile(ctx);
    bool small = quick || !profile->timings_meaningful;
    if (!rep->results && small && !quick)
        printf("(%s is a simulator: using --quick shapes)\n", dev->name);
    if (!rep->results && profile->forced)
        printf("(%s: %s layouts and %s attention forced by CLFORMER_PROFILE=%s)\n", dev->name,
               profile->gpu_layouts ? "GPU" : "CPU", profile->tiled_attention ? "tiled" : "per-row",
               profile->forced);
    int errors = 0;
    char fp32_only[256] = "";
    for (size_t p = 0; p < n_precisions; p++)
        for (size_t i = 0; i < clformer_check_layer_count(); i++) {
            const char *layer = clformer_check_layer_name(i);
            if (only && fnmatch(only, layer, 0) != 0) continue;
            if (!clformer_check_layer_has_precision(i, precisions[p])) {
                /* named once, under the table: these ops store no activations in 16 bits */
                if (p == n_precisions - 1 && strlen(fp32_only) + strlen(layer) + 3 < sizeof fp32_only)
                    snprintf(fp32_only + strlen(fp32_only), sizeof fp32_only - strlen(fp32_only),
                             "%s%s", *fp32_only ? ", " : "", layer);
                continue;
            }
            if (clformer_check_layer_in(ctx, i, small, precisions[p], print_result, rep) !=
                CLFORMER_OK) {
                fprintf(stderr, "clformer check: error: %s (%s) on %s could not run: %s\n", layer,
                        clformer_precision_name(precisions[p]), dev->name, clformer_last_error());
                errors++;
            }
        }
    if (!rep->results && *fp32_only && precisions[n_precisions - 1] != CLFORMER_FP32)
        printf("(checked in fp32 only, no 16-bit storage: %s)\n", fp32_only);
    clformer_context_free(ctx);
    return errors;
}

int cmd_check(int argc, char **argv)
{
    bool all = false, json = false, quick = false;
    const char *only = NULL, *precision = "all";
    const cli_option options[] = {
        {"--all", CLI_FLAG, &all, NULL, "check every OpenCL device, not only the selected one"},
        {"--quick", CLI_FLAG, &quick, NULL, "small shapes only (automatic on simulators)"},
        {"--json", CLI_FLAG, &json, NULL,
         "print {\"results\": [{\"op\", \"precision\", \"device\", \"max_abs_err\", \"max_rel_err\", \"pass\"}]}"},
        {"--layer", CLI_STRING, &only, "GLOB", "only the layers matching GLOB (e.g. 'att*')"},
        {"--precision", CLI_CHOICE, &precision, NULL,
         "storage precision of the activations: all (default: fp32, then bf16, then fp16) or one",
         0, 0, "all|fp32|bf16|fp16"},
    };
    const cli_spec spec = {
        "check",
        "Run every operation (forward and backward, GEMM included) on random inputs on the\n"
        "device, compare with clformer's double-precision C reference, and print a table:\n"
        "op, precision, shape, max abs error, max rel error, tolerance rule, pass/fail, time\n"
        "(ms), under a line naming each device in full. In bf16 and fp16 the inputs are\n"
        "rounded to the format, every activation an op writes must be a value of it, and\n"
        "the tolerance is PyTorch assert_close's for the format (rtol 1.6e-2 / 1e-3, atol\n"
        "1e-5) plus the fp32 rule (docs/TESTING.md).\n"
        "Exits non-zero when any op fails or cannot run.",
        "clformer check [--all] [--quick] [--json] [--layer GLOB] [--precision all|fp32|bf16|fp16]",
        "The device is CLFORMER_DEVICE's choice (see clformer devices).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    if (only) { /* a pattern that names no layer: said before any device work */
        size_t matched = 0;
        char names[1024] = "";
        for (size_t i = 0; i < clformer_check_layer_count(); i++) {
            const char *layer = clformer_check_layer_name(i);
            matched += fnmatch(only, layer, 0) == 0;
            if (strlen(names) + strlen(layer) + 3 < sizeof names) {
                if (i) strcat(names, ", ");
                strcat(names, layer);
            }
        }
        if (!matched) {
            cli_error("check", "--layer '%s' matches no layer; the layers are %s", only, names);
            return EXIT_USAGE;
        }
    }
    clformer_precision precisions[3];
    const size_t n_precisions = precisions_of(precision, precisions);
    if (n_precisions == 0) { /* CLI_CHOICE has checked the word */
        cli_error("check", "--precision must be all, fp32, bf16 or fp16");
        return EXIT_USAGE;
    }
    report rep = {json ? json_array() : NULL, "", 0, 0};
    int errors = 0;
    if (all) {
        clformer_device_info *devs = NULL;
        size_t n = 0;
        if (clformer_list_devices(&devs, &n) != CLFORMER_OK || n == 0) {
            json_decref(rep.results);
            cli_runtime_error("check", n == 0 ? "no OpenCL device found" : "listing devices");
            clformer_free(devs);
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            errors += check_device(devs[i].selector, quick, only, precisions, n_precisions, &rep);
        clformer_free(devs);
    } else {
        errors += check_device(NULL, quick, only, precisions, n_precisions, &rep);
    }
    if (json) {
        /* a results array shorter than the count: an entry could not be made */
        bool whole = json_array_size(rep.results) == (size_t)rep.count;
        if (!whole) json_decref(rep.results);
        if (!whole || !cli_print_json(json_pack("{s:o}", "results", rep.results))) {
            cli_error("check", "cannot write the results as JSON: out of memory, or a device "
                      "name that is not valid UTF-8");
            return 1;
        }
    } else
        printf("\n%d checks, %d failed%s\n", rep.count, rep.failures,
               errors ? ", some layers could not run" : "");
    if (rep.count == 0 && errors == 0) {
        cli_error("check", "no check matched --layer '%s' in --precision %s (layers without "
                  "16-bit storage, such as gemm, run in fp32 only)", only ? only : "", precision);
        return 1;
    }
    return rep.failures || errors ? 1 : 0;
}
