/* The flat parameter layout: building one, finding a tensor, initialising it. */
#include "params.h"
#include "status.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clformer_status cf_param_builder_start(cf_param_builder *b, cf_param_layout *l,
                                       size_t max_entries, int n_enc, int n_dec)
{
    memset(l, 0, sizeof *l);
    l->entries = calloc(max_entries, sizeof *l->entries);
    /* at least one entry each: a decoder-only model has no encoder layers */
    l->enc = calloc((size_t)n_enc + 1, sizeof *l->enc);
    l->dec = calloc((size_t)n_dec + 1, sizeof *l->dec);
    if (!l->entries || !l->enc || !l->dec) {
        cf_param_layout_free(l);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    *b = (cf_param_builder){l, max_entries, 0};
    return CLFORMER_OK;
}

size_t cf_param_add(cf_param_builder *b, int rank, size_t rows, size_t cols, int init,
                    const char *fmt, ...)
{
    cf_param_layout *l = b->layout;
    cf_param_entry *e = &l->entries[l->n_entries++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->name, sizeof e->name, fmt, ap);
    va_end(ap);
    e->rank = rank;
    e->rows = rank == 2 ? rows : 0;
    e->cols = cols;
    e->init = init;
    e->offset = b->next;
    b->next += rank == 2 ? rows * cols : cols;
    return e->offset;
}

void cf_param_builder_finish(cf_param_builder *b, size_t decay_end)
{
    b->layout->decay_end = decay_end;
    b->layout->total = b->next;
}

void cf_param_layout_free(cf_param_layout *l)
{
    free(l->entries);
    free(l->enc);
    free(l->dec);
    memset(l, 0, sizeof *l);
}

const cf_param_entry *cf_param_find(const cf_param_layout *l, const char *name)
{
    for (size_t i = 0; i < l->n_entries; i++)
        if (!strcmp(l->entries[i].name, name)) return &l->entries[i];
    return NULL;
}

/* splitmix64 -> uniform doubles; the stream depends only on seed and entry index. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void cf_param_init(const cf_param_layout *l, uint64_t seed, float *host)
{
    for (size_t i = 0; i < l->n_entries; i++) {
        const cf_param_entry *e = &l->entries[i];
        float *p = host + e->offset;
        size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        if (e->init == CF_INIT_XAVIER) {
            /* Xavier-uniform on the tensor as stored: fan_in = cols, fan_out = rows */
            double bound = sqrt(6.0 / (double)(e->rows + e->cols));
            uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (i + 1));
            for (size_t k = 0; k < n; k++)
                p[k] = (float)(bound * (2.0 * (double)(mix(&s) >> 11) / 9007199254740992.0 - 1.0));
        } else if (e->init == CF_INIT_NORMAL) {
            /* Box-Muller on the entry's own stream, two values a pair of draws */
            uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (i + 1));
            for (size_t k = 0; k < n; k += 2) {
                const double u1 = ((double)(mix(&s) >> 11) + 1.0) / 9007199254740993.0;
                const double u2 = (double)(mix(&s) >> 11) / 9007199254740992.0;
                const double r = 0.02 * sqrt(-2.0 * log(u1)), a = 6.283185307179586 * u2;
                p[k] = (float)(r * cos(a));
                if (k + 1 < n) p[k + 1] = (float)(r * sin(a));
            }
        } else {
            for (size_t k = 0; k < n; k++) p[k] = e->init == CF_INIT_ONES ? 1.0f : 0.0f;
        }
    }
}
