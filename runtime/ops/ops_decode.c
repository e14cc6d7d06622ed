/* Host side of cl/decode.cl (ops_decode.h). */
#include "ops_decode.h"
#include "launch.h"
#include "program.h"

#include <limits.h>

clformer_status cf_set_column(cf_ctx *ctx, cf_view table, size_t ld, size_t col, cf_view values,
                              size_t R)
{
    if (R == 0) return CLFORMER_OK;
    if (col >= ld)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_set_column: column %zu of a table %zu wide", col, ld);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_SET_COLUMN, &k));
    size_t local[2] = {ctx->elementwise_wg, 1}, global[2] = {R, 1};
    /* reads and writes R ints (4 bytes, as floats) */
    return CF_LAUNCH(ctx, "decode", cf_f32_bytes(2 * R), k, 2, global, local, CF_MEM(table.buf),
                     CF_U64(table.off), CF_I32(ld), CF_I32(col), CF_MEM(values.buf),
                     CF_U64(values.off), CF_I32(R));
}

clformer_status cf_gather_rows_words(cf_ctx *ctx, cf_view dst, cf_view src, cf_view map,
                                     size_t width, size_t rows)
{
    if (rows == 0 || width == 0) return CLFORMER_OK;
    if (width > INT_MAX || rows > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_gather_rows_words: %zu rows of %zu words", rows, width);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_GATHER_ROWS, &k));
    size_t local[2] = {ctx->elementwise_wg, 1}, global[2] = {width, rows};
    /* reads and writes rows * width words, and the map */
    return CF_LAUNCH(ctx, "decode", cf_f32_bytes(2 * rows * width + rows), k, 2, global, local,
                     CF_MEM(dst.buf), CF_U64(dst.off), CF_MEM(src.buf), CF_U64(src.off),
                     CF_MEM(map.buf), CF_U64(map.off), CF_I32(width), CF_I32(rows));
}
