/* Kernels that tools/proxy/register-proxy.sh --check must flag, and two it
 * must not, one of them to count shared-memory loads on (its test,
 * gpu_proxy_registers_flags, in tests/CMakeLists.txt). */

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

/* Four shared-memory loads (a float4 broadcast to every item, and three
 * floats) and eight multiply-adds: 0.500 shared loads per multiply-add. */
kernel void shared_reads(global float *out, global const float4 *in)
{
    local float4 t[4];
    local float u[64];
    const int i = get_local_id(0);
    if (i < 4) t[i] = in[i];
    u[i] = out[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    const float4 a = t[1];
    float s = out[get_global_id(0)];
    s = fma(a.x, s, a.y), s = fma(a.z, s, a.w), s = fma(a.x, s, a.z), s = fma(a.y, s, a.w);
    s = fma(u[(i + 1) & 63], s, u[(i + 7) & 63]);
    s = fma(u[(i + 3) & 63], s, 1.0f), s = fma(s, s, 2.0f), s = fma(s, s, 3.0f);
    out[get_global_id(0)] = s;
}
