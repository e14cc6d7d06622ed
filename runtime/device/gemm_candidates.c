/*
 * Candidate CLBlast parameter sets for the per-shape GEMM search (see
 * gemm_candidates.h). The database sets are written in the order of
 * CLBlast's Params{...} rows, so each can be checked against its source
 * line; the macros spell out the names.
 */
#include "gemm_candidates.h"
#include "gemm_tuning.h"

#include <stdio.h>
#include <string.h>

/* Xgemm: GEMMK KREG KWG KWI MDIMA MDIMC MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN */
#define XG(g, kr, kwg, kwi, mda, mdc, mwg, ndb, ndc, nwg, sa, sb, strm, strn, vwm, vwn)          \
    "GEMMK=" #g " KREG=" #kr " KWG=" #kwg " KWI=" #kwi " MDIMA=" #mda " MDIMC=" #mdc            \
    " MWG=" #mwg " NDIMB=" #ndb " NDIMC=" #ndc " NWG=" #nwg " SA=" #sa " SB=" #sb               \
    " STRM=" #strm " STRN=" #strn " VWM=" #vwm " VWN=" #vwn
/* XgemmDirect: KWID MDIMAD MDIMCD NDIMBD NDIMCD PADA PADB VWMD VWND WGD */
#define XD(kwid, mda, mdc, ndb, ndc, pa, pb, vwm, vwn, wgd)                                     \
    "KWID=" #kwid " MDIMAD=" #mda " MDIMCD=" #mdc " NDIMBD=" #ndb " NDIMCD=" #ndc " PADA=" #pa \
    " PADB=" #pb " VWMD=" #vwm " VWND=" #vwn " WGD=" #wgd

/* NVIDIA: the architectures' defaults of recent GPUs and the sets most
 * often best among the tuned NVIDIA devices, then our own large tiles:
 * 128 x 128 (and 64 x 128) blocks, 16 x 16 (8 x 16) work-items of 8 x 8
 * results each, both operands staged in local memory - the usual shape of
 * a fast single-precision GEMM on these GPUs. */
static const cf_gemm_candidate nvidia_xgemm[] = {
    {"CLBlast database: NVIDIA SM8.0 (A100) default", XG(0, 1, 32, 2, 8, 8, 32, 16, 16, 64, 1, 1, 0, 0, 4, 4)},
    {"own: 128x128 tiles, KWG 16", XG(0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
    {"own: 128x128 tiles, KWG 32", XG(0, 1, 32, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
    {"own: 64x128 tiles", XG(0, 1, 16, 2, 8, 8, 64, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
    {"CLBlast database: NVIDIA GeForce RTX 3080 and 8 others", XG(0, 1, 32, 2, 8, 8, 64, 32, 16, 128, 1, 1, 1, 1, 2, 2)},
    {"CLBlast database: NVIDIA GeForce RTX 4090", XG(0, 1, 32, 2, 32, 32, 128, 8, 8, 64, 0, 1, 1, 1, 4, 4)},
    {"CLBlast database: NVIDIA SM7.5 (Tesla T4) default", XG(0, 1, 16, 2, 16, 16, 128, 32, 16, 128, 1, 1, 1, 1, 1, 2)},
    {"CLBlast database: NVIDIA GeForce RTX 4080", XG(0, 1, 16, 2, 8, 8, 32, 8, 16, 128, 1, 0, 1, 1, 4, 8)},
    {"CLBlast database: NVIDIA SM8.9 default (GEMMK 1)", XG(1, 8, 1, 1, 8, 8, 64, 8, 8, 64, 0, 0, 0, 0, 4, 8)},
};
static const cf_gemm_candidate nvidia_direct[] = {
    {"CLBlast database: NVIDIA, most often best", XD(2, 8, 8, 8, 8, 1, 1, 1, 1, 32)},
    {"CLBlast database: NVIDIA SM8.0 (A100) default", XD(8, 8, 16, 32, 16, 1, 1, 2, 1, 32)},
    {"CLBlast database: NVIDIA SM7.5 default", XD(2, 16, 8, 8, 16, 1, 1, 2, 1, 64)},
    {"CLBlast database: NVIDIA GeForce GTX 1080 Ti and 4 others", XD(2, 8, 8, 8, 8, 1, 1, 4, 4, 32)},
    {"own: 64x64 tiles, 16x16 work-items", XD(2, 16, 16, 16, 16, 1, 1, 4, 4, 64)},
};

/* AMD: its default and the sets most often best among tuned AMD GPUs. */
static const cf_gemm_candidate amd_xgemm[] = {
    {"CLBlast database: AMD default", XG(0, 1, 32, 2, 16, 16, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4)},
    {"CLBlast database: AMD, most often best", XG(0, 1, 32, 2, 8, 8, 128, 32, 16, 128, 1, 1, 1, 1, 4, 4)},
    {"CLBlast database: AMD, often best", XG(0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 0, 0, 4, 4)},
    {"own: 128x128 tiles, KWG 16", XG(0, 1, 16, 2, 16, 16, 128, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
    {"own: 64x128 tiles", XG(0, 1, 16, 2, 8, 8, 64, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
};
static const cf_gemm_candidate amd_direct[] = {
    {"CLBlast database: AMD default", XD(2, 16, 16, 8, 8, 1, 1, 2, 4, 32)},
    {"CLBlast database: AMD, often best", XD(2, 8, 8, 32, 32, 1, 1, 2, 1, 32)},
    {"CLBlast database: AMD, often best", XD(2, 16, 16, 8, 8, 1, 1, 2, 2, 32)},
};

/* Intel GPUs: the default and the GEMMK 1 sets tuned Intel GPUs chose. */
static const cf_gemm_candidate intel_xgemm[] = {
    {"CLBlast database: Intel GPU default", XG(0, 1, 32, 2, 16, 16, 64, 8, 8, 64, 1, 1, 0, 0, 4, 2)},
    {"CLBlast database: Intel GPU, most often best", XG(1, 4, 1, 1, 16, 16, 64, 8, 8, 64, 0, 0, 0, 0, 4, 4)},
    {"CLBlast database: Intel GPU", XG(1, 4, 1, 1, 8, 8, 64, 8, 8, 64, 0, 0, 0, 0, 4, 4)},
    {"own: 64x128 tiles", XG(0, 1, 16, 2, 8, 8, 64, 16, 16, 128, 1, 1, 1, 1, 4, 4)},
};
static const cf_gemm_candidate intel_direct[] = {
    {"CLBlast database: Intel GPU default", XD(2, 8, 8, 16, 16, 1, 1, 4, 1, 32)},
    {"CLBlast database: Intel GPU, often best", XD(2, 16, 16, 8, 8, 1, 1, 2, 1, 32)},
    {"CLBlast database: Intel GPU, often best", XD(8, 16, 16, 8, 8, 0, 0, 4, 2, 64)},
};

/* Everything else (CPU devices, other GPUs): CLBlast's generic default,
 * the sets tuned for PoCL in gemm_tuning.c and one mid-sized tile. */
static const cf_gemm_candidate other_xgemm[] = {
    {"CLBlast database: generic default", XG(0, 1, 32, 2, 8, 8, 32, 8, 8, 32, 1, 1, 0, 0, 4, 4)},
    {"clformer's PoCL table (gemm_tuning.c)", XG(0, 1, 16, 2, 16, 8, 128, 32, 8, 64, 0, 0, 1, 0, 8, 2)},
    {"own: 64x64 tiles", XG(0, 1, 16, 2, 8, 8, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4)},
};
static const cf_gemm_candidate other_direct[] = {
    {"CLBlast database: generic default", XD(2, 8, 8, 8, 8, 1, 1, 1, 1, 16)},
    {"clformer's PoCL table (gemm_tuning.c)", XD(2, 8, 8, 8, 8, 1, 1, 1, 2, 32)},
    {"CLBlast database: Intel CPU default", XD(2, 8, 8, 8, 8, 1, 1, 4, 4, 32)},
};

const cf_gemm_candidate cf_gemm_nvidia_fallback_xgemm = {
    "CLBlast 1.5.3 database: NVIDIA default", XG(0, 1, 32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 0, 0, 4, 4)};
const cf_gemm_candidate cf_gemm_nvidia_fallback_direct = {
    "CLBlast 1.5.3 database: NVIDIA default", XD(2, 8, 8, 16, 16, 1, 1, 4, 2, 32)};

#define N(a) (sizeof(a) / sizeof *(a))

static const struct {
    const char *vendor; /* clformer_device_profile.vendor */
    const cf_gemm_candidate *xgemm, *direct;
    size_t n_xgemm, n_direct;
} lists[] = {
    {"nvidia", nvidia_xgemm, nvidia_direct, N(nvidia_xgemm), N(nvidia_direct)},
    {"amd", amd_xgemm, amd_direct, N(amd_xgemm), N(amd_direct)},
    {"intel", intel_xgemm, intel_direct, N(intel_xgemm), N(intel_direct)},
    {NULL, other_xgemm, other_direct, N(other_xgemm), N(other_direct)},
};

const cf_gemm_candidate *cf_gemm_candidates_of(const char *vendor, bool direct, size_t *count)
{
    size_t l = 0;
    while (lists[l].vendor && strcmp(lists[l].vendor, vendor) != 0) l++;
    *count = direct ? lists[l].n_direct : lists[l].n_xgemm;
    return direct ? lists[l].direct : lists[l].xgemm;
}

const cf_gemm_candidate *cf_gemm_candidates_all(bool direct, size_t *count)
{
    /* one array of every list, for the tests; built once */
    static cf_gemm_candidate all[2][64];
    static size_t n[2];
    if (!n[direct]) {
        for (size_t l = 0; l < N(lists); l++) {
            const cf_gemm_candidate *c = direct ? lists[l].direct : lists[l].xgemm;
            size_t cn = direct ? lists[l].n_direct : lists[l].n_xgemm;
            for (size_t i = 0; i < cn && n[direct] < N(all[0]); i++) all[direct][n[direct]++] = c[i];
        }
    }
    *count = n[direct];
    return all[direct];
}

/* ------------------------------------------------------------------------- */
/* Fitting a device                                                           */
/* ------------------------------------------------------------------------- */

static bool get(const char *name, const char **names, const size_t *values, size_t n, size_t *v)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name)) {
            *v = values[i];
            return true;
        }
    return false;
}

static bool multiple(size_t x, size_t of) { return of != 0 && x % of == 0; }

/* CLBlast's tuner constraints (src/tuning/kernels/xgemm.hpp and
 * xgemm_direct.hpp), with the parameters in the order the messages name them. */
static bool constraints_hold(bool direct, const size_t *v, char *why, size_t cap)
{
    if (direct) {
        const size_t kwid = v[0], mda = v[1], mdc = v[2], ndb = v[3], ndc = v[4], vwm = v[5],
                     vwn = v[6], wgd = v[7];
        const bool ok = multiple(wgd, kwid) && multiple(wgd, mdc * vwm) &&
                        multiple(wgd, ndc * vwn) && multiple(wgd, mda * vwm) &&
                        multiple(wgd, ndb * vwn) && mda && ndb &&
                        multiple(wgd, mdc * ndc / mda) && multiple(wgd, mdc * ndc / ndb);
        if (!ok) snprintf(why, cap, "breaks CLBlast's XgemmDirect constraints");
        return ok;
    }
    const size_t gemmk = v[0], kreg = v[1], kwg = v[2], kwi = v[3], mda = v[4], mdc = v[5],
                 mwg = v[6], ndb = v[7], ndc = v[8], nwg = v[9], vwm = v[10], vwn = v[11];
    bool ok = multiple(kwg, kwi) && multiple(mwg, mdc * vwm) && multiple(nwg, ndc * vwn) &&
              multiple(mwg, mda * vwm) && multiple(nwg, ndb * vwn) && mda && ndb;
    if (ok && gemmk == 0)
        ok = multiple(kwg, mdc * ndc / mda) && multiple(kwg, mdc * ndc / ndb);
    if (ok && gemmk == 1) ok = multiple(kreg, vwn) && mdc == mda && ndc == ndb;
    if (!ok) snprintf(why, cap, "breaks CLBlast's Xgemm constraints");
    return ok;
}

bool cf_gemm_candidate_fits(const clformer_device_info *d, bool direct, const char *params,
                            char *why, size_t cap)
{
    static const char *const xgemm_names[] = {"GEMMK", "KREG", "KWG",  "KWI",  "MDIMA", "MDIMC",
                                              "MWG",   "NDIMB", "NDIMC", "NWG", "VWM",   "VWN",
                                              "SA",    "SB",   "STRM", "STRN"};
    static const char *const direct_names[] = {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD",
                                               "VWMD", "VWND",   "WGD",    "PADA",   "PADB"};
    const char *const *want = direct ? direct_names : xgemm_names;
    const size_t n_want = direct ? N(direct_names) : N(xgemm_names);
    char buf[1024];
    const char *names[CF_CLBLAST_MAX_PARAMS];
    size_t values[CF_CLBLAST_MAX_PARAMS], n = 0, v[16];
    if (cf_clblast_params_parse(params, buf, sizeof buf, names, values, &n) != CLFORMER_OK) {
        snprintf(why, cap, "%s", clformer_last_error());
        cf_clear_error();
        return false;
    }
    for (size_t i = 0; i < n_want; i++)
        if (!get(want[i], names, values, n, &v[i])) {
            snprintf(why, cap, "has no %s", want[i]);
            return false;
        }
    if (n != n_want) {
        snprintf(why, cap, "has %zu parameters, the kernel takes %zu", n, n_want);
        return false;
    }
    if (!constraints_hold(direct, v, why, cap)) return false;
    const char *kernel = direct ? "XgemmDirect" : "Xgemm";
    const size_t wg = cf_clblast_params_work_group(kernel, params);
    if (wg > d->max_work_group_size) {
        snprintf(why, cap, "needs work-groups of %zu, the device allows %zu", wg,
                 d->max_work_group_size);
        return false;
    }
    /* local memory in floats: Xgemm stages KWG x MWG of A (SA) and KWG x NWG
     * of B (SB); XgemmDirect WGD x (WGD + PADA) and WGD x (WGD + PADB) */
    const size_t floats = direct ? v[7] * (v[7] + v[8]) + v[7] * (v[7] + v[9])
                                 : v[12] * v[2] * v[6] + v[13] * v[2] * v[9];
    if (4 * (uint64_t)floats > d->local_mem_bytes) {
        snprintf(why, cap, "needs %zu bytes of local memory, the device has %llu", 4 * floats,
                 (unsigned long long)d->local_mem_bytes);
        return false;
    }
    return true;
}

size_t cf_gemm_candidates(cf_ctx *ctx, bool direct, const cf_gemm_candidate **out,
                          size_t cap)
{
    /* the vendors' lists are for their GPUs; CPUs and the rest take the last */
    const bool gpu = ctx->device_profile.kind == CLFORMER_KIND_GPU;
    size_t n = 0;
    const cf_gemm_candidate *c =
        cf_gemm_candidates_of(gpu ? ctx->device_profile.vendor : "", direct, &n);
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        char why[256];
        if (cf_gemm_candidate_fits(&ctx->info, direct, c[i].params, why, sizeof why))
            out[k++] = &c[i];
        else
            cf_log(&ctx->log, CF_LOG_DEBUG, "gemm search: skipping %s set '%s' (%s): %s",
                   direct ? "XgemmDirect" : "Xgemm", c[i].origin, c[i].params, why);
    }
    return k;
}
