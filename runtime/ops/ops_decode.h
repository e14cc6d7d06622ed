/*
 * Host side of cl/decode.cl: the small kernels of incremental decoding
 * (runtime/decode/decode.c), launched by kernel id like every other op.
 */
#ifndef CF_OPS_DECODE_H
#define CF_OPS_DECODE_H

#include "buffer.h"

/* table[r * ld + col] = values[r] for the R rows of an int table. */
clformer_status cf_set_column(cf_ctx *ctx, cf_view table, size_t ld, size_t col, cf_view values,
                              size_t R);

/* dst row r = src row map[r] (rows x width 32-bit words, copied bit for
 * bit: ints, floats, or halves of doubles); dst must not overlap src. */
clformer_status cf_gather_rows_words(cf_ctx *ctx, cf_view dst, cf_view src, cf_view map,
                                     size_t width, size_t rows);

#endif
