/* Kernels that tools/proxy/register-proxy.sh --check must flag, and one it
 * must not (its test, gpu_proxy_registers_flags, in tests/CMakeLists.txt). */

/* A private array read at an index known only at run time: no compiler can
 * keep it in registers, so NVPTX puts it in local (off-chip) memory. */
kernel void private_array_dynamic_index(global float *out, int pick)
{
    float a[16];
    for (int i = 0; i < 16; i++) a[i] = out[i] * (float)i;
    out[get_global_id(0)] = a[pick & 15];
}

/* A helper the compiler must not inline: a real call on AMDGPU. */
__attribute__((noinline)) float called_helper(float x) { return x * x + 1.0f; }

kernel void real_call(global float *out) { out[get_global_id(0)] = called_helper(out[0]); }

kernel void clean_scale(global float *out) { out[get_global_id(0)] *= 2.0f; }
