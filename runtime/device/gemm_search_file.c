/*
 * The GEMM search's file of times, one per device and driver beside the
 * kernel cache: $CLFORMER_CACHE_DIR/gemm-<16 hex digits>.txt, the digits an
 * FNV-1a hash of its header. The header says what the times hold for (the
 * platform, device, driver, CLBlast's own switch and every set timed, in
 * order, then where it is timed too each tile set of the tiled kernel with
 * its source's hash); a file whose header differs (another driver, another
 * CLBlast, other candidates, another cl/gemm.cl) or that does not parse is
 * ignored and replaced at the next save. Then one line per kind of product:
 *
 *   shape S NT 6144 1536 512 1 4096 1536 512 1 : 0.812 0.901 - 1.250 ...
 *
 * routine (S single, B strided-batched), transposes, the size classes of m,
 * n, k and batch, the shape timed, ':' and the milliseconds of each set and
 * tiled slot ('-': left out, it rounds differently or failed). A line that
 * does not parse is dropped. Saving re-reads the file first, so processes that time
 * shapes at the same time lose nothing but the race's last lines.
 */
#include "gemm_search_record.h"
#include "door.h"
#include "fileio.h"
#include "fnv1a.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "clformer GEMM search times, format 1\n"

/* Appends to a growing string; false when out of memory. */
static bool append(char **s, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool append(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int n = vsnprintf(*s ? *s + *len : NULL, *s ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return false;
        if (*s && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return true;
        }
        size_t want = (*cap ? *cap : 1024);
        while (want <= *len + (size_t)n) want *= 2;
        char *grown = realloc(*s, want);
        if (!grown) return false;
        *s = grown;
        *cap = want;
    }
}

static char *make_header(const cf_ctx *ctx, const cf_gs_record *r)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    bool ok = append(&s, &len, &cap, FORMAT "platform %s\ndevice %s\ndriver %s\nswitch %zu\n",
                     ctx->info.platform, ctx->info.name, ctx->info.driver_version, r->own_switch);
    for (size_t i = 0; ok && i < r->nx + r->nd; i++)
        ok = append(&s, &len, &cap, "%s %zu %s\n", i < r->nx ? "xgemm" : "direct",
                    i < r->nx ? i : i - r->nx, r->sets[i]);
    for (size_t i = 0; ok && i < r->nt; i++)
        ok = append(&s, &len, &cap, "tiled %zu %s\n", i, r->sets[cf_gs_tiled_slot(r) + i]);
    if (!ok) {
        free(s);
        return NULL;
    }
    return s;
}

static bool read_u32(char **p, uint32_t *v)
{
    char *end;
    errno = 0;
    const unsigned long x = strtoul(*p, &end, 10);
    if (end == *p || errno || x == 0 || x > UINT32_MAX || (*end != ' ' && *end != '\t'))
        return false;
    *v = (uint32_t)x;
    *p = end;
    return true;
}

/* One "shape ..." line into `c`; false when it does not parse. */
static bool parse_line(char *line, size_t n_sets, cf_gs_class *c)
{
    memset(c, 0, sizeof *c);
    char routine, ta, tb;
    int used = 0;
    if (sscanf(line, "shape %c %c%c %n", &routine, &ta, &tb, &used) != 3 || used == 0) return false;
    if ((routine != 'S' && routine != 'B') || (ta != 'N' && ta != 'T') || (tb != 'N' && tb != 'T'))
        return false;
    c->strided = routine == 'B', c->ta = ta == 'T', c->tb = tb == 'T';
    char *p = line + used;
    uint32_t *fields[] = {&c->mc, &c->nc, &c->kc, &c->bc, &c->m, &c->n, &c->k, &c->batch};
    for (size_t i = 0; i < 8; i++) {
        p += strspn(p, " \t");
        if (!read_u32(&p, fields[i])) return false;
    }
    p += strspn(p, " \t");
    if (*p++ != ':') return false;
    for (size_t i = 0; i < n_sets; i++) {
        p += strspn(p, " \t");
        if (*p == '-' && (p[1] == ' ' || p[1] == '\0' || p[1] == '\r')) {
            c->ms[i] = -1.0f;
            p++;
            continue;
        }
        char *end;
        const double ms = strtod(p, &end);
        /* below a nanosecond is no time (and rounds to 0 as a float: "not timed") */
        if (end == p || !isfinite(ms) || ms < 1e-6 || ms > 1e9) return false;
        c->ms[i] = (float)ms;
        p = end;
    }
    p += strspn(p, " \t\r");
    /* the key must be what this shape gives: a hand-edited line cannot lie */
    return *p == '\0' && c->mc == cf_gs_size_class(c->m) && c->nc == cf_gs_size_class(c->n) &&
           c->kc == cf_gs_size_class(c->k) && c->bc == cf_gs_size_class(c->batch) &&
           c->strided == (c->batch > 1);
}

size_t cf_gs_merge_text(cf_gs_record *r, char *body)
{
    size_t dropped = 0;
    for (char *save = NULL, *line = strtok_r(body, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        cf_gs_class c;
        if (!parse_line(line, cf_gs_slots(r), &c)) {
            dropped++;
            continue;
        }
        if (cf_gs_find(r, &c)) continue;
        c.timed = true;
        for (size_t i = 0; i < cf_gs_slots(r); i++)
            if (c.ms[i] < 0) r->left_out[i] = true;
        if (!cf_gs_add(r, &c)) break;
    }
    return dropped;
}

/* Adds the file's classes that r lacks; false when there is no usable file. */
static bool merge_file(cf_ctx *ctx, cf_gs_record *r)
{
    char *text = NULL;
    size_t size = 0;
    FILE *probe = fopen(r->path, "rb");
    if (!probe) return false; /* none yet */
    fclose(probe);
    if (cf_read_file(r->path, &text, &size) != CLFORMER_OK) {
        cf_log(&ctx->log, CF_LOG_DEBUG, "gemm search: %s", clformer_last_error());
        cf_clear_error();
        return false;
    }
    const size_t hl = strlen(r->header);
    if (size < hl || memcmp(text, r->header, hl) != 0) {
        cf_log(&ctx->log, CF_LOG_INFO, "gemm search: %s is for other sets or is damaged; its "
               "shapes are timed again", r->path);
        free(text);
        return false;
    }
    const size_t dropped = cf_gs_merge_text(r, text + hl);
    if (dropped)
        cf_log(&ctx->log, CF_LOG_INFO, "gemm search: %zu damaged lines of %s dropped", dropped,
               r->path);
    free(text);
    return true;
}

void cf_gs_file_open(cf_ctx *ctx, cf_gs_record *r)
{
    r->path[0] = '\0';
    r->header = make_header(ctx, r);
    if (!ctx->cache_dir || !r->header) return;
    snprintf(r->path, sizeof r->path, "%s/gemm-%016llx.txt", ctx->cache_dir,
             (unsigned long long)cf_fnv1a(CF_FNV1A_INIT, r->header, strlen(r->header)));
    merge_file(ctx, r);
}

char *cf_gs_times_text(const cf_gs_record *r, size_t *len)
{
    char *s = NULL;
    size_t cap = 0;
    *len = 0;
    bool ok = append(&s, len, &cap, "%s", r->header);
    for (size_t i = 0; ok && i < r->n_classes; i++) {
        const cf_gs_class *c = &r->classes[i];
        if (!c->timed) continue;
        ok = append(&s, len, &cap, "shape %c %c%c %u %u %u %u %u %u %u %u :",
                    c->strided ? 'B' : 'S', c->ta ? 'T' : 'N', c->tb ? 'T' : 'N', c->mc, c->nc,
                    c->kc, c->bc, c->m, c->n, c->k, c->batch);
        for (size_t j = 0; ok && j < cf_gs_slots(r); j++)
            ok = c->ms[j] < 0 ? append(&s, len, &cap, " -")
                              : append(&s, len, &cap, " %.6g", (double)c->ms[j]);
        ok = ok && append(&s, len, &cap, "\n");
    }
    if (!ok) {
        free(s);
        return NULL;
    }
    return s;
}

void cf_gs_file_save(cf_ctx *ctx, cf_gs_record *r)
{
    if (!r->path[0]) return;
    merge_file(ctx, r);
    size_t len = 0;
    char *s = cf_gs_times_text(r, &len);
    char *dir = strdup(r->path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = '\0';
    const bool ok = s && dir && cf_make_dirs(dir) == CLFORMER_OK &&
                    cf_write_cache_file(r->path, s, len) == CLFORMER_OK;
    if (!ok && !r->save_warned)
        cf_log(&ctx->log, CF_LOG_WARN, "gemm search: cannot write %s: %s (the shapes are timed "
               "again next run; CLFORMER_CACHE_DIR chooses another directory)", r->path,
               clformer_last_error());
    r->save_warned = r->save_warned || !ok;
    cf_clear_error();
    free(dir);
    free(s);
}
