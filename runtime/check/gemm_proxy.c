/*
 * The GEMM part of the GPU proxy (clformer_check_gemm_proxy_list/run,
 * include/clformer_check.h; tools/proxy/gemm_proxy.c is its command and
 * tools/proxy/gemm-proxy.sh reads what Oclgrind counts): one CLBlast SGEMM
 * on Oclgrind's simulated device with the parameters a GPU would run.
 * CLBlast generates its kernels' source at run time, so its own call is the
 * simplest way to run them as a GPU would.
 *
 * Sets (NVIDIA's, runtime/device/gemm_candidates.c):
 *   h100-own  what CLBlast 1.5.3 gives an H100 or H200 (its NVIDIA default
 *             sets and switch, 1472^3: today's GPU runs)
 *   xI        Xgemm candidate I of the GEMM search on NVIDIA GPUs, every
 *             product sent to it (the indirect kernel)
 *   dI        XgemmDirect candidate I, every product sent to it
 *   tiled128, tiled64, tiled32
 *             clformer's own kernel (the tiled provider, cl/gemm.cl) with
 *             that tile set forced, through a clformer context on Oclgrind
 * Shapes, each standing for a base-model product (d_model 512, batch 64 x
 * length 64) at a size Oclgrind runs in seconds (the per-FMA figures of a
 * kernel depend on its tiles, not on m and n, once a tile is full):
 *   linear    the query/key/value projection's forward, NT: 4096 x 1536 x
 *             512 in the model, simulated 128 x 128 x 128
 *   attention attention scores, strided-batched NT: 64 x 64 x 64, 512 of
 *             them in the model, simulated 2
 * The simulated product runs on the kernel the set sends the model's
 * product to. The facts line gives that kernel, the useful multiply-adds
 * (m*n*k*batch of the simulated shape: padding the kernel computes is
 * overhead), and the work-groups one launch of it has on the model's shape,
 * from the set's tile sizes.
 */
#include "clformer_check.h"
#include "context.h"
#include "gemm.h"
#include "gemm_candidates.h"
#include "gemm_provider.h"
#include "gemm_tuning.h"
#include "status.h"

#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;
    bool ta, tb;
    size_t m, n, k, batch;             /* simulated */
    size_t model_m, model_n, model_k, model_batch;
} shape;

static const shape shapes[] = {
    {"linear", false, true, 128, 128, 128, 1, 4096, 1536, 512, 1},
    {"attention", false, true, 64, 64, 64, 2, 64, 64, 64, 512},
};

typedef struct {
    char name[16];
    const cf_gemm_candidate *xgemm, *direct;
    size_t switch_size;
    int tiled; /* the tiled provider's tile set, 1-based (cf_gemm_tile_sets); 0: CLBlast */
} set;

/* h100-own, then x0.., then d0.., then tiled128.. */
static size_t all_sets(set *out, size_t cap)
{
    size_t n = 0, nx = 0, nd = 0;
    const cf_gemm_candidate *x = cf_gemm_candidates_of("nvidia", false, &nx);
    const cf_gemm_candidate *d = cf_gemm_candidates_of("nvidia", true, &nd);
    out[n++] = (set){"h100-own", &cf_gemm_nvidia_fallback_xgemm, &cf_gemm_nvidia_fallback_direct,
                     CF_GEMM_NVIDIA_FALLBACK_SWITCH};
    for (size_t i = 0; i < nx && n < cap; i++, n++) {
        out[n] = (set){"", &x[i], &cf_gemm_nvidia_fallback_direct, 1};
        snprintf(out[n].name, sizeof out[n].name, "x%zu", i);
    }
    for (size_t i = 0; i < nd && n < cap; i++, n++) {
        out[n] = (set){"", &cf_gemm_nvidia_fallback_xgemm, &d[i], 65536};
        snprintf(out[n].name, sizeof out[n].name, "d%zu", i);
    }
    for (int i = 0; i < CF_GEMM_TILE_SETS && n < cap; i++, n++) {
        out[n] = (set){"", NULL, NULL, 0, i + 1};
        snprintf(out[n].name, sizeof out[n].name, "tiled%d", cf_gemm_tile_sets[i].gm);
    }
    return n;
}

static size_t param(const char *params, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s=", name);
    char padded[1024];
    snprintf(padded, sizeof padded, " %s", params);
    const char *p = strstr(padded, key);
    return p ? strtoul(p + strlen(key), NULL, 10) : 0;
}

static size_t ceil_div(size_t a, size_t b) { return b ? (a + b - 1) / b : 0; }

/* Work-groups of the kernel's launch on m x n (x batch). CLBlast computes a
 * row-major C as the column-major C^T: its "m" is our n, its "n" our m. */
static size_t work_groups(bool direct, const set *s, size_t m, size_t n, size_t batch)
{
    if (direct) {
        const size_t wgd = param(s->direct->params, "WGD");
        return ceil_div(n, wgd) * ceil_div(m, wgd) * batch;
    }
    return ceil_div(n, param(s->xgemm->params, "MWG")) *
           ceil_div(m, param(s->xgemm->params, "NWG")) * batch;
}

static cl_device_id oclgrind_device(void)
{
    cl_platform_id platforms[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, platforms, &np) != CL_SUCCESS) return NULL;
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = "";
        clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        cl_device_id d = NULL;
        if (strstr(name, "Oclgrind") &&
            clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL) == CL_SUCCESS)
            return d;
    }
    return NULL;
}

/* The product through a clformer context on Oclgrind with the tiled
 * provider and the set's tiles forced. */
static clformer_status run_tiled(const set *s, const shape *sh, FILE *out)
{
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = "oclgrind", params.gemm = "tiled", params.cache = false;
    clformer_context *ctx = NULL;
    CF_TRY(clformer_context_create_with_params(&params, &ctx));
    const cf_gemm_tiles *t = &cf_gemm_tile_sets[s->tiled - 1];
    clformer_status st = clformer_check_gemm_tiles(ctx, t->gm);
    if (st != CLFORMER_OK) {
        clformer_context_free(ctx);
        return st;
    }
    const size_t na = sh->m * sh->k * sh->batch, nb = sh->k * sh->n * sh->batch,
                 nc = sh->m * sh->n * sh->batch;
    cl_int err;
    cl_mem mem[3] = {NULL, NULL, NULL};
    const size_t counts[3] = {na, nb, nc};
    for (int i = 0; i < 3 && st == CLFORMER_OK; i++) {
        mem[i] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, counts[i] * 4, NULL, &err);
        if (err != CL_SUCCESS) st = cf_fail_cl(err, "clCreateBuffer", __FILE__, __LINE__);
        const float zero = 0.0f;
        if (st == CLFORMER_OK)
            err = clEnqueueFillBuffer(ctx->queue, mem[i], &zero, sizeof zero, 0, counts[i] * 4,
                                      0, NULL, NULL);
        if (st == CLFORMER_OK && err != CL_SUCCESS)
            st = cf_fail_cl(err, "clEnqueueFillBuffer", __FILE__, __LINE__);
    }
    const size_t lda = sh->ta ? sh->m : sh->k, ldb = sh->tb ? sh->k : sh->n;
    if (st == CLFORMER_OK)
        st = cf_gemm_strided_batched(ctx, sh->ta, sh->tb, sh->m, sh->n, sh->k, 1.0f, mem[0], 0,
                                     lda, sh->m * sh->k, mem[1], 0, ldb, sh->k * sh->n, 0.0f,
                                     mem[2], 0, sh->n, sh->m * sh->n, sh->batch);
    if (st == CLFORMER_OK && (err = clFinish(ctx->queue)) != CL_SUCCESS)
        st = cf_fail_cl(err, "clFinish", __FILE__, __LINE__);
    if (st == CLFORMER_OK) {
        const size_t groups = (sh->model_m + (size_t)t->gm - 1) / (size_t)t->gm *
                              ((sh->model_n + (size_t)t->gn - 1) / (size_t)t->gn) *
                              sh->model_batch;
        fprintf(out,
                "gemm_proxy set=%s shape=%s kernel=gemm_tiled fma=%zu model_work_groups=%zu "
                "params=GM=%d,GN=%d,GK=%d,WM=%d,WN=%d\n",
                s->name, sh->name, sh->m * sh->n * sh->k * sh->batch, groups, t->gm, t->gn,
                t->gk, t->wm, t->wn);
        fflush(out);
    }
    for (int i = 0; i < 3; i++)
        if (mem[i]) clReleaseMemObject(mem[i]);
    clformer_context_free(ctx);
    return st;
}

static clformer_status run(const set *s, const shape *sh, FILE *out)
{
    if (s->tiled) return run_tiled(s, sh, out);
    cl_device_id dev = oclgrind_device();
    if (!dev)
        return cf_fail(CLFORMER_ERR_NO_DEVICE, "no Oclgrind device: install oclgrind, and let "
                       "OCL_ICD_VENDORS list its ICD (e.g. build/icd)");
    /* the simulated product goes to the kernel the model's product takes */
    const double cut = (double)s->switch_size * s->switch_size * s->switch_size;
    const bool direct = (double)sh->model_m * sh->model_n * sh->model_k < cut;
    char sw[64];
    snprintf(sw, sizeof sw, "XGEMM_MIN_INDIRECT_SIZE=%d", direct ? 65536 : 1);
    if (cf_clblast_override_on(dev, "Xgemm", s->xgemm->params) != CLFORMER_OK ||
        cf_clblast_override_on(dev, "XgemmDirect", s->direct->params) != CLFORMER_OK ||
        cf_clblast_override_on(dev, "GemmRoutine", sw) != CLFORMER_OK)
        return CLFORMER_ERR_CLBLAST;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    const size_t na = sh->m * sh->k * sh->batch, nb = sh->k * sh->n * sh->batch,
                 nc = sh->m * sh->n * sh->batch;
    float *host = malloc((na > nb ? na : nb) * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < (na > nb ? na : nb); i++) host[i] = (float)(i % 7) * 0.125f;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, na * 4, host, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nb * 4, host, &err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nc * 4, NULL, &err);
    const size_t lda = sh->ta ? sh->m : sh->k, ldb = sh->tb ? sh->k : sh->n;
    const CLBlastTranspose ta = sh->ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tb = sh->tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    const int st = sh->batch == 1
        ? CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, sh->m, sh->n, sh->k, 1.0f, a, 0, lda, b, 0,
                       ldb, 0.0f, c, 0, sh->n, &q, NULL)
        : CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, sh->m, sh->n, sh->k, 1.0f, a,
                                     0, lda, sh->m * sh->k, b, 0, ldb, sh->k * sh->n, 0.0f, c, 0,
                                     sh->n, sh->m * sh->n, sh->batch, &q, NULL);
    clFinish(q);
    free(host);
    if (st != 0) {
        /* what is made stays: its context is Oclgrind's, gone with the process */
        return cf_fail(CLFORMER_ERR_CLBLAST, "CLBlast status %d for set %s on %s", st, s->name,
                       sh->name);
    }
    fprintf(out, "gemm_proxy set=%s shape=%s kernel=%s fma=%zu model_work_groups=%zu params=%s\n",
           s->name, sh->name, direct ? "XgemmDirect" : "Xgemm",
           sh->m * sh->n * sh->k * sh->batch,
           work_groups(direct, s, sh->model_m, sh->model_n, sh->model_batch),
           direct ? s->direct->params : s->xgemm->params);
    fflush(out);
    /* CLBlast's cached programs go before the context: released at exit,
     * after Oclgrind freed them with the context, they corrupt the heap
     * (seen here as an abort at exit; gemm.h tells the same of clformer) */
    CLBlastClearCache();
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return CLFORMER_OK;
}

void clformer_check_gemm_proxy_list(FILE *out)
{
    set sets[32];
    const size_t n_sets = all_sets(sets, sizeof sets / sizeof *sets);
    for (size_t s = 0; s < n_sets; s++) {
        if (sets[s].tiled) {
            const cf_gemm_tiles *t = &cf_gemm_tile_sets[sets[s].tiled - 1];
            fprintf(out, "set %s gemm_tiled 'GM=%d GN=%d GK=%d WM=%d WN=%d' (cl/gemm.cl)\n",
                    sets[s].name, t->gm, t->gn, t->gk, t->wm, t->wn);
            continue;
        }
        fprintf(out, "set %s Xgemm '%s' XgemmDirect '%s' switch %zu (%s / %s)\n", sets[s].name,
                sets[s].xgemm->params, sets[s].direct->params, sets[s].switch_size,
                sets[s].xgemm->origin, sets[s].direct->origin);
    }
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        fprintf(out, "shape %s %s%s %zux%zux%zu x%zu (model %zux%zux%zu x%zu)\n", shapes[s].name,
                shapes[s].ta ? "T" : "N", shapes[s].tb ? "T" : "N", shapes[s].m, shapes[s].n,
                shapes[s].k, shapes[s].batch, shapes[s].model_m, shapes[s].model_n,
                shapes[s].model_k, shapes[s].model_batch);
}

clformer_status clformer_check_gemm_proxy_run(const char *set_name, const char *shape_name,
                                              FILE *out)
{
    set sets[32];
    const size_t n_sets = all_sets(sets, sizeof sets / sizeof *sets);
    const set *s = NULL;
    const shape *sh = NULL;
    for (size_t i = 0; set_name && i < n_sets; i++)
        if (!strcmp(sets[i].name, set_name)) s = &sets[i];
    for (size_t i = 0; shape_name && i < sizeof shapes / sizeof *shapes; i++)
        if (!strcmp(shapes[i].name, shape_name)) sh = &shapes[i];
    if (!s || !sh)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no GEMM proxy set '%s' or shape '%s': "
                       "see gemm_proxy --list", set_name ? set_name : "", shape_name ? shape_name : "");
    return run(s, sh, out);
}

