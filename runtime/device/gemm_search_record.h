/*
 * What the GEMM search (gemm_search.h) keeps per device, shared by its
 * three files: gemm_search.c (the hook around CLBlast calls and the
 * choice), gemm_search_time.c (timing one shape) and gemm_search_file.c
 * (the file of times beside the kernel cache).
 */
#ifndef CF_GEMM_SEARCH_RECORD_H
#define CF_GEMM_SEARCH_RECORD_H

#include "gemm_search.h"

#include <pthread.h>

#define CF_GS_SETS (CF_GEMM_SEARCH_XGEMM + CF_GEMM_SEARCH_DIRECT)
#define CF_GS_SLOTS (CF_GS_SETS + CF_GEMM_TILE_SETS) /* CLBlast's sets, the tiled kernel's */
#define CF_GS_TEXT 512       /* one kernel's parameters as text */
#define CF_GS_ALL_DIRECT 65536 /* XGEMM_MIN_INDIRECT_SIZE that sends every product direct */

/* One kind of product: its key (size classes) and the times of every set
 * (and of the tiled kernel's tile sets) on the one shape of that kind that
 * was timed. */
typedef struct {
    bool strided, ta, tb;          /* strided: CLBlast's strided-batched routine (batch > 1) */
    uint32_t mc, nc, kc, bc;       /* size classes of m, n, k, batch (cf_gs_size_class) */
    uint32_t m, n, k, batch;       /* the shape timed */
    float ms[CF_GS_SLOTS];         /* per slot: > 0 ms per call; 0 not timed; < 0 left out */
    bool timed;                    /* every set has a time or was left out: worth keeping */
    bool untimable;                /* too small, offsets-batched, or past the budget */
    bool in_use;                   /* used by this process: part of the choice */
    uint64_t calls;                /* calls in this process */
} cf_gs_class;

typedef struct cf_gs_record {
    cl_device_id device;
    pthread_mutex_t lock;
    /* the slots: 0..nx-1 Xgemm sets (0: CLBlast's own), nx..nx+nd-1
     * XgemmDirect sets (nx: own), then the tiled kernel with each of the nt
     * tile sets the device runs (index tiled_set[i] of cf_gemm_tile_sets at
     * slot nx+nd+i; its text: what identifies the kernel's source) */
    char sets[CF_GS_SLOTS][CF_GS_TEXT];
    const char *origin[CF_GS_SLOTS];
    size_t nx, nd, nt;
    int tiled_set[CF_GEMM_TILE_SETS];
    size_t own_switch;             /* CLBlast's own XGEMM_MIN_INDIRECT_SIZE */
    bool left_out[CF_GS_SLOTS];    /* rounds differently or failed somewhere on this device */
    cf_gs_class *classes;
    size_t n_classes, cap_classes;
    bool pending;                  /* shapes timed or read since the last choice */
    /* what CLBlast has now: set indices and switch (known false: apply all) */
    int cur_x, cur_d;
    size_t cur_switch;
    bool cur_known;
    /* the choice in force */
    int want_x, want_d;
    size_t want_switch;
    double spent_s;                /* timing so far in this process */
    bool budget_said, save_warned; /* each said once */
    size_t choices, timed, from_cache, skipped, tiled_calls;
    char path[1024];               /* the file of times, "" when the cache is off */
    char *header;                  /* the file's first lines: what its times hold for */
    struct cf_gs_record *next;
} cf_gs_record;

static inline size_t cf_gs_slots(const cf_gs_record *r) { return r->nx + r->nd + r->nt; }
static inline size_t cf_gs_tiled_slot(const cf_gs_record *r) { return r->nx + r->nd; } /* the first */

/* The size class of x >= 1: the smallest of 1, 2, 3, 4, 6, 8, 12, ... (powers
 * of two and 1.5 times them) that is >= x. Products of one class share times. */
uint32_t cf_gs_size_class(size_t x);

/* The set indices' parameters applied to CLBlast for the record's device
 * (only the kernels that differ from what it has); false on failure (logged). */
bool cf_gs_apply(cf_ctx *ctx, cf_gs_record *r, int x, int d, size_t sw);

/* Times every set of `r` (and the tiled kernel's tile sets) on `c`'s shape (c->m..
 * c->batch, its transposes) with the call's alpha and beta: fills c->ms,
 * marks slots that round differently from CLBlast's own as left out, and
 * restores the sets in force. gemm_search_time.c. */
void cf_gs_time_class(cf_ctx *ctx, cf_gs_record *r, cf_gs_class *c, float alpha, float beta);

/* The file of times (gemm_search_file.c): where it is and what it must
 * begin with (r->path, r->header), its classes added to r (left-out sets
 * too), and r's timed classes written back (merged with what other
 * processes wrote meanwhile; atomically). Never fails: a file that cannot
 * be read or written only costs a search. */
void cf_gs_file_open(cf_ctx *ctx, cf_gs_record *r);
void cf_gs_file_save(cf_ctx *ctx, cf_gs_record *r);

/* The file's text, for the two above and tests/fuzz/fuzz_gemm_search.c:
 * cf_gs_merge_text adds the classes of `body` (the text after the header,
 * changed in place) that r lacks and returns how many lines did not parse;
 * cf_gs_times_text gives r's header and timed classes (malloc'd, *len
 * bytes; NULL when out of memory). */
size_t cf_gs_merge_text(cf_gs_record *r, char *body);
char *cf_gs_times_text(const cf_gs_record *r, size_t *len);

/* The class of r with this key, or NULL; cf_gs_add appends one (NULL when
 * out of memory). */
cf_gs_class *cf_gs_find(cf_gs_record *r, const cf_gs_class *key);
cf_gs_class *cf_gs_add(cf_gs_record *r, const cf_gs_class *key);

#endif
