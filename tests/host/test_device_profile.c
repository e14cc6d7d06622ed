/* The device profile's choices over made-up devices (clformer_device_profile_for
 * is pure: no OpenCL), and CLFORMER_PROFILE's words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clformer.h"

static clformer_device_info device(clformer_device_type type, bool simulator, size_t max_wg)
{
    clformer_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.vendor, sizeof d.vendor, "%s", "Advanced Micro Devices, Inc.");
    d.type = type;
    d.simulator = simulator;
    d.native_kernels = true;
    d.max_work_group_size = max_wg;
    d.vector_width_float = 4;
    d.n_subgroup_sizes = 2;
    d.subgroup_sizes[0] = 16;
    d.subgroup_sizes[1] = 32;
    return d;
}

static clformer_device_profile profile(clformer_device_info d, const char *force)
{
    clformer_device_profile p;
    assert_int_equal(clformer_device_profile_for(&d, force, &p), CLFORMER_OK);
    assert_int_equal(p.size, sizeof p);
    return p;
}

static void kinds_and_facts(void **state)
{
    (void)state;
    assert_int_equal(profile(device(CLFORMER_DEVICE_GPU, false, 1024), NULL).kind,
                     CLFORMER_KIND_GPU);
    assert_int_equal(profile(device(CLFORMER_DEVICE_CPU, false, 4096), NULL).kind,
                     CLFORMER_KIND_CPU);
    assert_int_equal(profile(device(CLFORMER_DEVICE_ACCELERATOR, false, 256), NULL).kind,
                     CLFORMER_KIND_ACCELERATOR);
    /* Oclgrind reports itself as a CPU; the profile sets it apart */
    assert_int_equal(profile(device(CLFORMER_DEVICE_CPU, true, 1024), NULL).kind,
                     CLFORMER_KIND_SIMULATOR);
    assert_string_equal(clformer_device_kind_name(CLFORMER_KIND_SIMULATOR), "simulator");
    assert_string_equal(clformer_device_kind_name(CLFORMER_KIND_ACCELERATOR), "accelerator");
    const clformer_device_profile p = profile(device(CLFORMER_DEVICE_GPU, false, 1024), NULL);
    assert_string_equal(p.vendor, "amd");
    assert_int_equal(p.vector_width_float, 4);
    assert_int_equal(p.n_subgroup_sizes, 2);
    assert_int_equal(p.subgroup_sizes[1], 32);
}

static void gpu_and_cpu_choices(void **state)
{
    (void)state;
    const clformer_device_profile gpu = profile(device(CLFORMER_DEVICE_GPU, false, 1024), NULL);
    assert_true(gpu.gpu_layouts);
    assert_int_equal(gpu.reduce_wg, 256);
    assert_int_equal(gpu.reduce_partials, 1024);
    assert_int_equal(gpu.elementwise_wg, 64);
    assert_false(gpu.host_gemm);
    assert_false(gpu.fused_attention_long);
    assert_false(gpu.scalar_attention);
    assert_true(gpu.timings_meaningful);
    assert_null(gpu.forced);

    const clformer_device_profile cpu = profile(device(CLFORMER_DEVICE_CPU, false, 4096), NULL);
    assert_false(cpu.gpu_layouts);
    assert_int_equal(cpu.reduce_wg, 16);
    assert_int_equal(cpu.reduce_partials, 16);
    assert_true(cpu.host_gemm);
    assert_true(cpu.fused_attention_long);
    assert_int_equal(cpu.compile_threads, 0);

    const clformer_device_profile sim = profile(device(CLFORMER_DEVICE_CPU, true, 1024), NULL);
    assert_false(sim.gpu_layouts);
    assert_true(sim.scalar_attention && sim.stage_uploads && sim.keep_released_buffers &&
                sim.batched_gemm_one_by_one);
    assert_false(sim.host_gemm || sim.fused_attention_long || sim.timings_meaningful);
    assert_int_equal(sim.compile_threads, 1);

    /* a small device: the reduction group shrinks to fit (a power of two) */
    const clformer_device_profile small = profile(device(CLFORMER_DEVICE_GPU, false, 200), NULL);
    assert_int_equal(small.reduce_wg, 128);
    const clformer_device_profile tiny = profile(device(CLFORMER_DEVICE_GPU, false, 32), NULL);
    assert_int_equal(tiny.elementwise_wg, 32);
}

/* CLFORMER_PROFILE: the layouts and partition of the other kind, nothing else */
static void forced_layouts(void **state)
{
    (void)state;
    const clformer_device_profile sim =
        profile(device(CLFORMER_DEVICE_CPU, true, 1024), "gpu-layouts");
    assert_true(sim.gpu_layouts);
    assert_int_equal(sim.reduce_wg, 256);
    assert_int_equal(sim.reduce_partials, 1024);
    assert_string_equal(sim.forced, "gpu-layouts");
    assert_true(sim.scalar_attention); /* still a simulator */
    assert_int_equal(sim.kind, CLFORMER_KIND_SIMULATOR);

    const clformer_device_profile gpu =
        profile(device(CLFORMER_DEVICE_GPU, false, 1024), "CPU-layouts");
    assert_false(gpu.gpu_layouts);
    assert_int_equal(gpu.reduce_partials, 16);
    assert_string_equal(gpu.forced, "cpu-layouts");

    assert_null(profile(device(CLFORMER_DEVICE_GPU, false, 1024), "auto").forced);
    assert_null(profile(device(CLFORMER_DEVICE_GPU, false, 1024), "").forced);

    clformer_device_info d = device(CLFORMER_DEVICE_GPU, false, 1024);
    clformer_device_profile p;
    assert_int_equal(clformer_device_profile_for(&d, "gpu", &p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_PROFILE"));
    assert_non_null(strstr(clformer_last_error(), "gpu-layouts"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_and_facts),
        cmocka_unit_test(gpu_and_cpu_choices),
        cmocka_unit_test(forced_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
