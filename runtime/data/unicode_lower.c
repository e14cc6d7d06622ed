/*
 * Python's str.lower() on UTF-8 (see unicode_lower.h). The string is decoded
 * to code points first, because the final-sigma rule looks both ways; each
 * code point is then looked up in the generated tables and written back.
 */
#include "unicode_lower.h"
#include "status.h"
#include "utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { CAPITAL_SIGMA = 0x03A3, SMALL_SIGMA = 0x03C3, FINAL_SIGMA = 0x03C2 };

size_t cf_lower_code_point(uint32_t cp, uint32_t out[CF_LOWER_MAX])
{
    out[0] = cp;
    if (cp < 0x80) { /* the common case, and no ASCII letter lowers to more */
        if (cp >= 'A' && cp <= 'Z') out[0] = cp + 32;
        return 1;
    }
    size_t lo = 0, hi = cf_lower_run_count;
    while (lo < hi) { /* the last run starting at or before cp */
        size_t mid = lo + (hi - lo) / 2;
        if (cf_lower_runs[mid].first <= cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0) {
        const cf_lower_run *r = &cf_lower_runs[lo - 1];
        if (cp <= r->last && (cp - r->first) % r->stride == 0) {
            out[0] = (uint32_t)((int32_t)cp + r->delta);
            return 1;
        }
    }
    for (size_t i = 0; i < cf_lower_multi_count; i++) /* one entry in Unicode 14 */
        if (cf_lower_multis[i].cp == cp) {
            for (uint32_t k = 0; k < cf_lower_multis[i].n; k++) out[k] = cf_lower_multis[i].to[k];
            return cf_lower_multis[i].n;
        }
    return 1;
}

static uint32_t sigma_class(uint32_t cp)
{
    size_t lo = 0, hi = cf_sigma_range_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < cf_sigma_ranges[mid].first) hi = mid;
        else if (cp > cf_sigma_ranges[mid].last) lo = mid + 1;
        else return cf_sigma_ranges[mid].cls;
    }
    return 0;
}

/* Unicode's Final_Sigma, as CPython applies it to the capital sigma at
 * cps[i]: a cased letter before it and none after, skipping case-ignorable
 * code points on both sides. */
static bool is_final_sigma(const uint32_t *cps, size_t count, size_t i)
{
    size_t j = i;
    while (j > 0 && sigma_class(cps[j - 1]) == CF_SIGMA_IGNORABLE) j--;
    if (j == 0 || sigma_class(cps[j - 1]) != CF_SIGMA_CASED) return false;
    size_t k = i + 1;
    while (k < count && sigma_class(cps[k]) == CF_SIGMA_IGNORABLE) k++;
    return k == count || sigma_class(cps[k]) != CF_SIGMA_CASED;
}

/* Code points of valid UTF-8 s[0..n) into cps; returns their number. */
static size_t decode(const char *str, size_t n, uint32_t *cps)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t count = 0;
    for (size_t i = 0, len; i < n; i += len) cps[count++] = cf_utf8_get(s + i, n - i, &len);
    return count;
}

/* Bytes of the lower-cased code points (out NULL: only count them). */
static size_t lower_all(const uint32_t *cps, size_t count, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t low[CF_LOWER_MAX];
        size_t m;
        if (cps[i] == CAPITAL_SIGMA) {
            low[0] = is_final_sigma(cps, count, i) ? FINAL_SIGMA : SMALL_SIGMA;
            m = 1;
        } else {
            m = cf_lower_code_point(cps[i], low);
        }
        char bytes[CF_UTF8_MAX];
        for (size_t k = 0; k < m; k++) {
            const size_t len = cf_utf8_put(low[k], bytes);
            if (out) memcpy(out + w, bytes, len);
            w += len;
        }
    }
    return w;
}

clformer_status cf_utf8_lower(const char *s, size_t n, char **out, size_t *out_len)
{
    *out = NULL;
    size_t bad;
    if (!clformer_utf8_valid(s, n, &bad))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "invalid UTF-8 at byte %zu (0x%02x)",
                       bad + 1, (unsigned char)s[bad]);
    uint32_t *cps = malloc((n ? n : 1) * sizeof *cps);
    if (!cps) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory lower-casing text");
    size_t count = decode(s, n, cps), len = lower_all(cps, count, NULL);
    char *text = malloc(len + 1);
    if (!text) {
        free(cps);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory lower-casing text");
    }
    lower_all(cps, count, text);
    text[len] = '\0';
    free(cps);
    *out = text;
    if (out_len) *out_len = len;
    return CLFORMER_OK;
}
