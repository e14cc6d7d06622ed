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
#include "profile.h"

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
    assert_false(gpu.scalar_attention);
    assert_true(gpu.tiled_attention);
    assert_true(gpu.timings_meaningful);
    assert_null(gpu.forced);

    const clformer_device_profile cpu = profile(device(CLFORMER_DEVICE_CPU, false, 4096), NULL);
    assert_false(cpu.gpu_layouts);
    assert_int_equal(cpu.reduce_wg, 16);
    assert_int_equal(cpu.reduce_partials, 16);
    assert_true(cpu.host_gemm);
    assert_false(cpu.tiled_attention);
    assert_int_equal(cpu.compile_threads, 0);

    const clformer_device_profile sim = profile(device(CLFORMER_DEVICE_CPU, true, 1024), NULL);
    assert_false(sim.gpu_layouts);
    assert_true(sim.scalar_attention && sim.stage_uploads && sim.keep_released_buffers &&
                sim.batched_gemm_one_by_one);
    assert_false(sim.host_gemm || sim.timings_meaningful ||
                 sim.tiled_attention);
    assert_int_equal(sim.compile_threads, 1);

    /* a small device: the reduction group shrinks to fit (a power of two) */
    const clformer_device_profile small = profile(device(CLFORMER_DEVICE_GPU, false, 200), NULL);
    assert_int_equal(small.reduce_wg, 128);
    const clformer_device_profile tiny = profile(device(CLFORMER_DEVICE_GPU, false, 32), NULL);
    assert_int_equal(tiny.elementwise_wg, 32);
}

/* CLFORMER_PROFILE: the layouts and partition of the other kind, nothing else;
 * or the fused attention's kernels alone */
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
    assert_true(sim.tiled_attention);  /* which the tiled kernels take first */
    assert_int_equal(sim.kind, CLFORMER_KIND_SIMULATOR);

    const clformer_device_profile gpu =
        profile(device(CLFORMER_DEVICE_GPU, false, 1024), "CPU-layouts");
    assert_false(gpu.gpu_layouts);
    assert_int_equal(gpu.reduce_partials, 16);
    assert_string_equal(gpu.forced, "cpu-layouts");
    assert_false(gpu.tiled_attention);

    /* the attention kernels alone, to time one against the other */
    const clformer_device_profile cpu_tiled =
        profile(device(CLFORMER_DEVICE_CPU, false, 4096), "Tiled-Attention");
    assert_true(cpu_tiled.tiled_attention);
    assert_false(cpu_tiled.gpu_layouts);
    assert_int_equal(cpu_tiled.reduce_partials, 16);
    assert_string_equal(cpu_tiled.forced, "tiled-attention");
    const clformer_device_profile gpu_rows =
        profile(device(CLFORMER_DEVICE_GPU, false, 1024), "row-attention");
    assert_false(gpu_rows.tiled_attention);
    assert_true(gpu_rows.gpu_layouts);
    assert_string_equal(gpu_rows.forced, "row-attention");

    /* weight gradients split below 4 tiles a compute unit with GPU layouts,
     * forced or not; whole-gradients turns that alone off */
    clformer_device_info gpu_units = device(CLFORMER_DEVICE_GPU, false, 1024);
    gpu_units.compute_units = 132;
    assert_int_equal(profile(gpu_units, NULL).gemm_split_groups, 528);
    const clformer_device_profile whole = profile(gpu_units, "whole-gradients");
    assert_int_equal(whole.gemm_split_groups, 0);
    assert_true(whole.gpu_layouts && whole.tiled_attention);
    assert_string_equal(whole.forced, "whole-gradients");
    clformer_device_info cpu_units = device(CLFORMER_DEVICE_CPU, false, 4096);
    cpu_units.compute_units = 2;
    assert_int_equal(profile(cpu_units, NULL).gemm_split_groups, 0);
    assert_int_equal(profile(cpu_units, "gpu-layouts").gemm_split_groups, 8);

    assert_null(profile(device(CLFORMER_DEVICE_GPU, false, 1024), "auto").forced);
    assert_null(profile(device(CLFORMER_DEVICE_GPU, false, 1024), "").forced);

    clformer_device_info d = device(CLFORMER_DEVICE_GPU, false, 1024);
    clformer_device_profile p;
    assert_int_equal(clformer_device_profile_for(&d, "gpu", &p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_PROFILE"));
    assert_non_null(strstr(clformer_last_error(), "gpu-layouts"));
}

static cf_attention_tiles tiles(size_t max_wg, uint64_t local, size_t dh)
{
    clformer_device_info d = device(CLFORMER_DEVICE_GPU, false, max_wg);
    d.local_mem_bytes = local;
    const clformer_device_profile p = profile(d, NULL);
    cf_attention_tiles t;
    const char *why = "unset";
    assert_true(cf_attention_tiles_for(&p, dh, &t, &why));
    assert_null(why);
    return t;
}

/* The tiles of cl/flash_attention_tiled.cl: NVIDIA's limits at dh 64 (the
 * figures tools/gpu-proxy.sh reports), then every head size on several
 * devices: the groups and the local memory fit, and each kernel's rule. */
static void attention_tiles(void **state)
{
    (void)state;
    const cf_attention_tiles t = tiles(1024, 48 << 10, 64);
    assert_int_equal(t.head_dim, 64);
    assert_int_equal(t.fwd_rows, 128), assert_int_equal(t.fwd_split, 2);
    assert_int_equal(t.fwd_keys, 8);
    assert_int_equal(t.dq_rows, 128), assert_int_equal(t.dq_split, 2);
    assert_int_equal(t.dq_keys, 8);
    assert_int_equal(t.dkv_keys, 64), assert_int_equal(t.dkv_split, 4);
    assert_int_equal(t.dkv_rows, 8);
    char options[256];
    cf_attention_tiles_options(&t, options, sizeof options);
    assert_string_equal(options, "-DHEAD_DIM=64 -DFWD_ROWS=128 -DFWD_SPLIT=2 -DFWD_KEYS=8 "
                                 "-DDQ_ROWS=128 -DDQ_SPLIT=2 -DDQ_KEYS=8 -DDKV_KEYS=64 "
                                 "-DDKV_SPLIT=4 -DDKV_ROWS=8 "
                                 "-DFWD_PER_ITEM=1 -DDQ_PER_ITEM=1 -DDKV_PER_ITEM=1");

    static const struct {
        size_t wg;
        uint64_t local;
    } devices[] = {{1024, 48 << 10}, {256, 64 << 10}, {1024, 32 << 10}, {64, 16 << 10},
                   {4096, 4 << 20}};
    for (size_t i = 0; i < sizeof devices / sizeof *devices; i++)
        for (size_t dh = 1; dh <= 256; dh++) {
            const cf_attention_tiles u = tiles(devices[i].wg, devices[i].local, dh);
            const size_t wg = devices[i].wg < 256 ? devices[i].wg : 256;
            const uint64_t local = devices[i].local < (48 << 10) ? devices[i].local : 48 << 10;
            assert_true(u.fwd_rows * u.fwd_split <= wg && u.dq_rows * u.dq_split <= wg &&
                        u.dkv_keys * u.dkv_split <= wg);
            assert_true(cf_attention_tiles_local_bytes(&u) <= local);
            assert_true(u.fwd_keys >= 4 && u.dq_keys >= 4 && u.dkv_rows >= 4);
            /* tiles of 8 rows at most, 4 at 8 items a row (registers) */
            assert_true(u.fwd_keys <= (u.fwd_split >= 8 ? 4u : 8u));
            assert_true(u.dq_keys <= (u.dq_split >= 8 ? 4u : 8u));
            assert_true(u.dkv_rows <= (u.dkv_split >= 8 ? 4u : 8u));
            /* a row's columns in registers: at most 96 floats a kernel's arrays */
            assert_true(2 * dh <= 96 * u.fwd_split || u.fwd_split * 4 >= dh);
            assert_true(4 * dh <= 96 * u.dkv_split || u.dkv_split * 4 >= dh);
            /* dQ adds D up in the order of dK/dV's slices */
            assert_int_equal(u.dkv_split % u.dq_split, 0);
        }

    clformer_device_info d = device(CLFORMER_DEVICE_GPU, false, 1024);
    d.local_mem_bytes = 48 << 10;
    clformer_device_profile p = profile(d, NULL);
    cf_attention_tiles u;
    const char *why = NULL;
    assert_false(cf_attention_tiles_for(&p, 257, &u, &why));
    assert_non_null(strstr(why, "256"));
    p = profile(device(CLFORMER_DEVICE_CPU, false, 4096), NULL);
    assert_false(cf_attention_tiles_for(&p, 64, &u, &why));
    assert_non_null(why);
    d = device(CLFORMER_DEVICE_CPU, false, 4096);
    d.local_mem_bytes = 256 << 10;
    p = profile(d, "gpu-layouts");
    assert_true(cf_attention_tiles_for(&p, 64, &u, &why));

    /* items holding several rows (keys): a group is rows / per_item x split
     * items, its local memory that of its rows */
    d = device(CLFORMER_DEVICE_GPU, false, 256);
    d.local_mem_bytes = 48 << 10;
    p = profile(d, NULL);
    assert_true(cf_attention_tiles_for(&p, 64, &u, &why));
    assert_int_equal(u.fwd_per_item, 1), assert_int_equal(u.dq_per_item, 1);
    assert_int_equal(u.dkv_per_item, 1);
    cf_attention_tiles held = u;
    held.fwd_per_item = held.dq_per_item = held.dkv_per_item = 2;
    assert_true(cf_attention_tiles_fit(&p, &held, &why));
    assert_int_equal(cf_attention_tiles_local_bytes(&held), cf_attention_tiles_local_bytes(&u));
    held.fwd_rows *= 2; /* 256 rows x 2 items: 256 items held 2 rows each */
    assert_true(cf_attention_tiles_fit(&p, &held, &why));
    held.fwd_per_item = 1; /* the same rows an item each: 512 items */
    assert_false(cf_attention_tiles_fit(&p, &held, &why));
    assert_non_null(strstr(why, "larger than the device allows"));
    held = u;
    held.dkv_per_item = 3; /* 64 keys do not share out over items of 3 */
    assert_false(cf_attention_tiles_fit(&p, &held, &why));
    assert_non_null(strstr(why, "divide the group's rows"));
    held.dkv_per_item = 0;
    assert_false(cf_attention_tiles_fit(&p, &held, &why));
    held = u;
    held.fwd_per_item = 8;
    assert_false(cf_attention_tiles_fit(&p, &held, &why));
}

/* NVIDIA's GPUs: the three kernels split a row alike, not at all up to dh
 * 32, else over the fewest items holding 64 floats of it each, 2 at least,
 * and the forward's groups own 64 rows: the tiles an H200 ran fastest at
 * dh 32, 64 and 128 (profile.c). */
static void nvidia_attention_tiles(void **state)
{
    (void)state;
    clformer_device_info d = device(CLFORMER_DEVICE_GPU, false, 1024);
    snprintf(d.vendor, sizeof d.vendor, "%s", "NVIDIA Corporation");
    d.local_mem_bytes = 48 << 10;
    const clformer_device_profile p = profile(d, NULL);
    assert_string_equal(p.vendor, "nvidia");
    cf_attention_tiles t;
    const char *why = "unset";
    assert_true(cf_attention_tiles_for(&p, 64, &t, &why));
    char options[256];
    cf_attention_tiles_options(&t, options, sizeof options);
    assert_string_equal(options, "-DHEAD_DIM=64 -DFWD_ROWS=64 -DFWD_SPLIT=2 -DFWD_KEYS=8 "
                                 "-DDQ_ROWS=128 -DDQ_SPLIT=2 -DDQ_KEYS=8 -DDKV_KEYS=128 "
                                 "-DDKV_SPLIT=2 -DDKV_ROWS=8 "
                                 "-DFWD_PER_ITEM=1 -DDQ_PER_ITEM=1 -DDKV_PER_ITEM=1");
    assert_true(cf_attention_tiles_for(&p, 128, &t, &why));
    cf_attention_tiles_options(&t, options, sizeof options);
    assert_string_equal(options, "-DHEAD_DIM=128 -DFWD_ROWS=64 -DFWD_SPLIT=2 -DFWD_KEYS=8 "
                                 "-DDQ_ROWS=128 -DDQ_SPLIT=2 -DDQ_KEYS=8 -DDKV_KEYS=128 "
                                 "-DDKV_SPLIT=2 -DDKV_ROWS=8 "
                                 "-DFWD_PER_ITEM=1 -DDQ_PER_ITEM=1 -DDKV_PER_ITEM=1");
    assert_true(cf_attention_tiles_for(&p, 32, &t, &why));
    cf_attention_tiles_options(&t, options, sizeof options);
    assert_string_equal(options, "-DHEAD_DIM=32 -DFWD_ROWS=64 -DFWD_SPLIT=1 -DFWD_KEYS=8 "
                                 "-DDQ_ROWS=128 -DDQ_SPLIT=1 -DDQ_KEYS=8 -DDKV_KEYS=128 "
                                 "-DDKV_SPLIT=1 -DDKV_ROWS=8 "
                                 "-DFWD_PER_ITEM=1 -DDQ_PER_ITEM=1 -DDKV_PER_ITEM=1");
    for (size_t dh = 1; dh <= 256; dh++) {
        assert_true(cf_attention_tiles_for(&p, dh, &t, &why));
        assert_true(cf_attention_tiles_fit(&p, &t, &why));
        assert_int_equal(t.fwd_split, t.dq_split);
        assert_int_equal(t.dkv_split, t.dq_split);
        assert_int_equal(t.dq_split, dh <= 32 ? 1 : dh <= 128 ? 2 : 4);
        assert_true(t.fwd_rows <= 64);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_and_facts),
        cmocka_unit_test(gpu_and_cpu_choices),
        cmocka_unit_test(forced_layouts),
        cmocka_unit_test(attention_tiles),
        cmocka_unit_test(nvidia_attention_tiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
