/* The CLFORMER_DEVICE grammar and the default rule, over made-up device lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clformer.h"

static clformer_device_info dev(int p, int d, const char *platform, const char *platform_vendor,
                                const char *vendor,
                                const char *name, clformer_device_type type, unsigned cus,
                                unsigned mhz, bool unified)
{
    clformer_device_info i;
    memset(&i, 0, sizeof i);
    i.platform_index = p;
    i.device_index = d;
    snprintf(i.selector, sizeof i.selector, "%d:%d", p, d);
    snprintf(i.platform, sizeof i.platform, "%s", platform);
    snprintf(i.platform_vendor, sizeof i.platform_vendor, "%s", platform_vendor);
    snprintf(i.vendor, sizeof i.vendor, "%s", vendor);
    snprintf(i.name, sizeof i.name, "%s", name);
    i.type = type;
    i.compute_units = cus;
    i.clock_mhz = mhz;
    i.unified_memory = unified;
    i.simulator = strstr(platform, "Oclgrind") != NULL;
    return i;
}

/* A machine with everything: PoCL (2 CPU devices), an integrated Intel GPU,
 * a discrete AMD GPU, a smaller discrete NVIDIA GPU, and Oclgrind. */
static clformer_device_info machine[7];
static const size_t n_machine = 7;

static int setup(void **state)
{
    (void)state;
    machine[0] = dev(0, 0, "Portable Computing Language", "The pocl project",
                     "AuthenticAMD", "basic-skylake-avx512-AMD EPYC", CLFORMER_DEVICE_CPU, 1, 2000, true);
    machine[1] = dev(0, 1, "Portable Computing Language", "The pocl project",
                     "AuthenticAMD", "pthread-skylake-avx512-AMD EPYC", CLFORMER_DEVICE_CPU, 2, 2000, true);
    machine[2] = dev(1, 0, "Intel(R) OpenCL Graphics", "Intel(R) Corporation", "Intel(R) Corporation",
                     "Intel(R) UHD Graphics 770", CLFORMER_DEVICE_GPU, 32, 1550, true);
    machine[3] = dev(2, 0, "AMD Accelerated Parallel Processing", "Advanced Micro Devices, Inc.",
                     "Advanced Micro Devices, Inc.",
                     "gfx1100", CLFORMER_DEVICE_GPU, 48, 2500, false);
    machine[4] = dev(3, 0, "NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA Corporation", "NVIDIA GeForce RTX 3060",
                     CLFORMER_DEVICE_GPU, 28, 1777, false);
    machine[5] = dev(4, 0, "Oclgrind", "University of Bristol", "University of Bristol", "Oclgrind Simulator",
                     CLFORMER_DEVICE_CPU, 1, 1, true);
    machine[6] = dev(5, 0, "Xilinx", "Xilinx", "Xilinx", "xilinx_u250", CLFORMER_DEVICE_ACCELERATOR, 1,
                     300, false);
    return 0;
}

static size_t pick(const clformer_device_info *devs, size_t n, const char *sel)
{
    size_t index = 999;
    clformer_status st = clformer_select_device(devs, n, sel, &index);
    if (st != CLFORMER_OK) fail_msg("selector '%s' failed: %s", sel ? sel : "(null)", clformer_last_error());
    return index;
}

static void default_prefers_biggest_discrete_gpu(void **state)
{
    (void)state;
    assert_int_equal(pick(machine, n_machine, NULL), 3);
    assert_int_equal(pick(machine, n_machine, ""), 3);
    assert_int_equal(pick(machine, n_machine, "  "), 3);
}

static void default_integrated_gpu_before_accelerator_and_cpu(void **state)
{
    (void)state;
    clformer_device_info some[] = {machine[0], machine[1], machine[6], machine[2], machine[5]};
    assert_int_equal(pick(some, 5, NULL), 3); /* the Intel iGPU */
}

static void default_accelerator_before_cpu(void **state)
{
    (void)state;
    clformer_device_info some[] = {machine[0], machine[6], machine[1]};
    assert_int_equal(pick(some, 3, NULL), 1);
}

static void default_cpu_by_compute_units_never_simulator(void **state)
{
    (void)state;
    clformer_device_info some[] = {machine[5], machine[0], machine[1]};
    assert_int_equal(pick(some, 3, NULL), 2); /* pthread: 2 CUs beat basic's 1 */
}

static void simulator_only_when_alone_or_named(void **state)
{
    (void)state;
    clformer_device_info alone[] = {machine[5]};
    assert_int_equal(pick(alone, 1, NULL), 0);
    assert_int_equal(pick(machine, n_machine, "oclgrind"), 5);
    assert_int_equal(pick(machine, n_machine, "OCLGRIND"), 5);
    /* a type selector prefers a real device of that type */
    assert_int_equal(pick(machine, n_machine, "cpu"), 1);
    /* and never takes a simulator, even when no real device has the type:
     * Oclgrind presenting itself as a GPU on a CPU-only machine */
    clformer_device_info gpu_sim = machine[5];
    gpu_sim.type = CLFORMER_DEVICE_GPU;
    clformer_device_info cpu_only[] = {machine[0], machine[1], gpu_sim};
    size_t index = 999;
    assert_int_equal(clformer_select_device(cpu_only, 3, "gpu", &index), CLFORMER_ERR_NO_DEVICE);
    assert_non_null(strstr(clformer_last_error(), "Oclgrind Simulator is a simulator, which a "
                                                  "type never selects: name it"));
    assert_int_equal(pick(cpu_only, 3, "oclgrind"), 2);
    assert_int_equal(pick(cpu_only, 3, "oclgrind:gpu"), 2);
    assert_int_equal(pick(cpu_only, 3, "4:0"), 2);
}

static void index_pairs(void **state)
{
    (void)state;
    assert_int_equal(pick(machine, n_machine, "0:0"), 0);
    assert_int_equal(pick(machine, n_machine, "0:1"), 1);
    assert_int_equal(pick(machine, n_machine, "4:0"), 5);
    size_t index;
    assert_int_equal(clformer_select_device(machine, n_machine, "0:7", &index),
                     CLFORMER_ERR_NO_DEVICE);
    assert_non_null(strstr(clformer_last_error(), "'0:7'"));
}

static void types(void **state)
{
    (void)state;
    assert_int_equal(pick(machine, n_machine, "gpu"), 3);
    assert_int_equal(pick(machine, n_machine, "GPU"), 3);
    assert_int_equal(pick(machine, n_machine, "accelerator"), 6);
    assert_int_equal(pick(machine, n_machine, "cpu"), 1);
}

static void substrings_of_platform_vendor_name(void **state)
{
    (void)state;
    assert_int_equal(pick(machine, n_machine, "amd"), 3);     /* vendor beats EPYC CPUs */
    assert_int_equal(pick(machine, n_machine, "nvidia"), 4);
    assert_int_equal(pick(machine, n_machine, "RTX"), 4);
    assert_int_equal(pick(machine, n_machine, "pocl"), 1);    /* best of the pocl devices */
    assert_int_equal(pick(machine, n_machine, "pthread"), 1);
    assert_int_equal(pick(machine, n_machine, "basic"), 0);
}

static void platform_colon_device(void **state)
{
    (void)state;
    assert_int_equal(pick(machine, n_machine, "pocl:pthread"), 1);
    assert_int_equal(pick(machine, n_machine, "pocl:basic"), 0);
    assert_int_equal(pick(machine, n_machine, "intel:gpu"), 2);
    assert_int_equal(pick(machine, n_machine, "Intel:UHD"), 2);
    assert_int_equal(pick(machine, n_machine, "pocl:cpu"), 1);
    size_t index;
    assert_int_equal(clformer_select_device(machine, n_machine, "pocl:gpu", &index),
                     CLFORMER_ERR_NO_DEVICE);
}

/* On an Intel CPU, PoCL's device carries the CPU's name and vendor
 * ("pthread-...-Intel(R) Xeon(R)", GenuineIntel) and Intel's CPU runtime
 * reports the same CPU: `intel` means Intel's platform, whose devices win
 * over those that only carry the word in their name or vendor. */
static void platform_match_beats_device_name_match(void **state)
{
    (void)state;
    clformer_device_info xeon[] = {
        dev(0, 0, "Portable Computing Language", "The pocl project", "GenuineIntel",
            "pthread-skylake-avx512-Intel(R) Xeon(R) Processor", CLFORMER_DEVICE_CPU, 16, 2100,
            true),
        dev(1, 0, "Intel(R) OpenCL", "Intel(R) Corporation", "Intel(R) Corporation",
            "Intel(R) Xeon(R) Processor", CLFORMER_DEVICE_CPU, 8, 2000, true),
    };
    assert_int_equal(pick(xeon, 2, "intel"), 1);
    assert_int_equal(pick(xeon, 2, "intel:cpu"), 1);
    assert_int_equal(pick(xeon, 2, "Intel:xeon"), 1);
    assert_int_equal(pick(xeon, 2, "pocl"), 0);
    assert_int_equal(pick(xeon, 2, "xeon"), 0); /* both by name: the larger one */
    size_t index = 99, count = 0;
    assert_int_equal(clformer_select_device_for_rank(xeon, 2, "intel", 1, &index, &count),
                     CLFORMER_OK);
    assert_int_equal(index, 1);
    assert_int_equal(count, 1);
}

static void no_match_names_selector_and_lists_devices(void **state)
{
    (void)state;
    size_t index = 42;
    assert_int_equal(clformer_select_device(machine, n_machine, "nosuch", &index),
                     CLFORMER_ERR_NO_DEVICE);
    assert_int_equal(index, 42);
    const char *msg = clformer_last_error();
    assert_non_null(strstr(msg, "'nosuch'"));
    for (size_t i = 0; i < n_machine; i++) assert_non_null(strstr(msg, machine[i].name));
}

static void no_devices_at_all(void **state)
{
    (void)state;
    size_t index;
    assert_int_equal(clformer_select_device(machine, 0, NULL, &index), CLFORMER_ERR_NO_DEVICE);
    assert_non_null(strstr(clformer_last_error(), "no OpenCL device"));
}

static size_t pick_rank(const char *sel, int local_rank, size_t *matches)
{
    size_t index = 99;
    assert_int_equal(clformer_select_device_for_rank(machine, n_machine, sel, local_rank, &index,
                                                     matches),
                     CLFORMER_OK);
    return index;
}

/* Ranks on one machine share out the matches, best first, round robin. */
static void ranks_take_the_matches_in_turn(void **state)
{
    (void)state;
    size_t matches = 0;
    /* gpu: AMD (discrete, biggest), NVIDIA (discrete), Intel (integrated) */
    assert_int_equal(pick_rank("gpu", 0, &matches), 3);
    assert_int_equal(matches, 3);
    assert_int_equal(pick_rank("gpu", 1, NULL), 4);
    assert_int_equal(pick_rank("gpu", 2, NULL), 2);
    assert_int_equal(pick_rank("gpu", 3, NULL), 3);
    /* the default: the devices of the best one's kind (discrete GPUs) */
    assert_int_equal(pick_rank(NULL, 0, &matches), 3);
    assert_int_equal(matches, 2);
    assert_int_equal(pick_rank("", 1, NULL), 4);
    assert_int_equal(pick_rank("", 2, NULL), 3);
    /* pocl: pthread (2 units) before basic; Oclgrind never matches "pocl" */
    assert_int_equal(pick_rank("pocl", 0, &matches), 1);
    assert_int_equal(matches, 2);
    assert_int_equal(pick_rank("pocl", 1, NULL), 0);
    /* an index pair names one device for every rank */
    assert_int_equal(pick_rank("3:0", 5, &matches), 4);
    assert_int_equal(matches, 1);
    /* local rank 0 always agrees with clformer_select_device */
    const char *sels[] = {"gpu", "cpu", "pocl", "intel", "oclgrind", "nvidia:gpu"};
    for (size_t k = 0; k < sizeof sels / sizeof *sels; k++)
        assert_int_equal(pick_rank(sels[k], 0, NULL), pick(machine, n_machine, sels[k]));
}

static void ranks_with_a_bad_selector_or_rank_fail(void **state)
{
    (void)state;
    size_t index;
    assert_int_equal(clformer_select_device_for_rank(machine, n_machine, "nosuch", 1, &index,
                                                     NULL),
                     CLFORMER_ERR_NO_DEVICE);
    assert_non_null(strstr(clformer_last_error(), "nosuch"));
    assert_int_equal(clformer_select_device_for_rank(machine, n_machine, "gpu", -1, &index, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_prefers_biggest_discrete_gpu),
        cmocka_unit_test(default_integrated_gpu_before_accelerator_and_cpu),
        cmocka_unit_test(default_accelerator_before_cpu),
        cmocka_unit_test(default_cpu_by_compute_units_never_simulator),
        cmocka_unit_test(simulator_only_when_alone_or_named),
        cmocka_unit_test(index_pairs),
        cmocka_unit_test(types),
        cmocka_unit_test(substrings_of_platform_vendor_name),
        cmocka_unit_test(platform_colon_device),
        cmocka_unit_test(platform_match_beats_device_name_match),
        cmocka_unit_test(no_match_names_selector_and_lists_devices),
        cmocka_unit_test(no_devices_at_all),
        cmocka_unit_test(ranks_take_the_matches_in_turn),
        cmocka_unit_test(ranks_with_a_bad_selector_or_rank_fail),
    };
    return cmocka_run_group_tests_name("device selection", tests, setup, NULL);
}
