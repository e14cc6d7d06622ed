/*
 * The device profile (clformer_device_profile in include/clformer.h): made
 * once per context by profile.c; everything else reads ctx->device_profile
 * instead of asking what kind of device it runs on.
 */
#ifndef CF_PROFILE_H
#define CF_PROFILE_H

#include "status.h"

/* What kind of device `d` is (simulators apart from the CPUs they run on). */
clformer_device_kind cf_device_kind(const clformer_device_info *d);

/* The default selection's preference, lower first: discrete GPU, integrated
 * GPU, accelerator, CPU, anything else, simulators last. */
int cf_device_tier(const clformer_device_info *d);

/* The tiles of cl/flash_attention_tiled.cl for head size dh (its build
 * options): per kernel the rows a work-group owns, the work items that
 * share a row (each holds a slice of its columns in registers) and the
 * rows of the other side that stream through local memory per tile, and
 * the rows (dK/dV: keys) each item holds (1 or more). */
typedef struct {
    unsigned head_dim;
    unsigned fwd_rows, fwd_split, fwd_keys; /* forward: query rows, items per row, key tile */
    unsigned dq_rows, dq_split, dq_keys;    /* dQ: the same */
    unsigned dkv_keys, dkv_split, dkv_rows; /* dK, dV: key rows, items per row, query tile */
    unsigned fwd_per_item, dq_per_item, dkv_per_item; /* rows (dK/dV: keys) an item holds */
} cf_attention_tiles;

/* The tiles for head size dh on a device with profile p; false when the
 * tiled kernels do not serve it, with *why saying why in a few words. */
bool cf_attention_tiles_for(const clformer_device_profile *p, size_t dh, cf_attention_tiles *t,
                            const char **why);

/* Whether a device with profile p can run the kernels with tiles t, which
 * need not be the profile's (a check varies them): group sizes, splits,
 * local memory; false with *why saying what does not fit. */
bool cf_attention_tiles_fit(const clformer_device_profile *p, const cf_attention_tiles *t,
                            const char **why);

/* The build options that give the kernels the tiles t: "-DHEAD_DIM=64 ...". */
void cf_attention_tiles_options(const cf_attention_tiles *t, char *out, size_t cap);

/* The local memory the tiled kernels declare, in bytes (the largest of the three). */
size_t cf_attention_tiles_local_bytes(const cf_attention_tiles *t);

#endif
