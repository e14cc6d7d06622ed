/*
 * Safetensors files: a strict reader and a streaming, atomic writer.
 *
 * The format (Hugging Face safetensors):
 *   8 bytes   N, the header length, unsigned little-endian
 *   N bytes   a UTF-8 JSON object, possibly padded at the end with spaces:
 *               "__metadata__": {"key": "value", ...}   optional, strings only
 *               "<name>": {"dtype": "F32", "shape": [d0, d1, ...],
 *                          "data_offsets": [begin, end]}
 *   the rest  the data area: each tensor's bytes, row-major, little-endian,
 *             at [begin, end) counted from the first byte after the header.
 *             The tensors are contiguous and cover the data area exactly.
 *
 * The reader checks all of this when the file is opened, before a caller
 * allocates anything from the shapes it reports: a malformed file is
 * CLFORMER_ERR_FORMAT with a message naming the file, the tensor and the
 * problem. It reads raw bytes; callers check dtypes and shapes (cf_st_expect).
 *
 * The writer takes all declarations first (tensors, metadata), so it can
 * write the header before any data, then takes each tensor's bytes in the
 * declared order, one tensor at a time (a model larger than host memory can
 * be saved by downloading one tensor at a time). The file appears only on
 * commit (runtime/core/fileio.h: temp file, fsync, rename); any mistake (a wrong
 * tensor, size or count) fails the writer and leaves no file behind.
 *
 * Header layout written, byte-for-byte deterministic:
 *   {"__metadata__":{<keys in strcmp (UTF-8 byte) order>},
 *    "<tensor>":{"dtype":..,"shape":[..],"data_offsets":[b,e]}, ...}
 * compact (no spaces), non-ASCII kept as UTF-8, "__metadata__" omitted when
 * empty, tensors in declared order, fields in that order, offsets assigned
 * in declared order from 0, padded with spaces to a multiple of 8 bytes so
 * the data area starts 8-byte aligned. Python's safetensors reads it.
 *
 * "st" in the names below stands for safetensors.
 */
#ifndef CF_SAFETENSORS_H
#define CF_SAFETENSORS_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Element types; names as in the file ("F32", "BF16", ...). */
typedef enum {
    CF_ST_BOOL,
    CF_ST_U8,
    CF_ST_I8,
    CF_ST_I16,
    CF_ST_U16,
    CF_ST_F16,
    CF_ST_BF16,
    CF_ST_I32,
    CF_ST_U32,
    CF_ST_F32,
    CF_ST_F64,
    CF_ST_I64,
    CF_ST_U64,
    CF_ST_DTYPE_COUNT
} cf_st_dtype;

const char *cf_st_dtype_name(cf_st_dtype dtype);
size_t cf_st_dtype_size(cf_st_dtype dtype); /* bytes per element */

/* More dimensions than any tensor in this project; a file with more is refused. */
#define CF_ST_MAX_DIMS 8

/* The header's largest accepted length (the reference implementation's limit). */
#define CF_ST_MAX_HEADER 100000000u

/* The most tensors and metadata entries a file may hold: far more than any
 * clformer checkpoint (a 6+6-layer training checkpoint has about 600). With
 * these the header parse is bounded: before the JSON is parsed, its
 * structural characters ({ [ , outside strings) are counted, and a header
 * with more than a valid file of this size can need is refused, so a small
 * file cannot make the parser build a tree of millions of empty values. */
#define CF_ST_MAX_TENSORS 16384
#define CF_ST_MAX_METADATA 1024
#define CF_ST_MAX_JSON_TOKENS (16u * CF_ST_MAX_TENSORS + 4u * CF_ST_MAX_METADATA)

/* The metadata key of the optional per-tensor checksums (cf_st_checksums):
 * lowercase 8-hex-digit CRC-32Cs (runtime/core/crc32c.h) of each tensor's
 * bytes, separated by single spaces, in the order of the tensor entries in
 * the header. The reader verifies each tensor it reads against it; files
 * without the key are read unchecked. */
#define CF_ST_CRC_KEY "clformer.crc32c"

/* The metadata key of the metadata's own checksum (written with the tensor
 * checksums by cf_st_checksums): a lowercase 8-hex-digit CRC-32C over every
 * "clformer.*" metadata entry but the two checksum keys, in bytewise key
 * order, each as its key, a NUL, its value and a NUL. It covers the config,
 * the vocabularies, the train state and the embedded SentencePiece models.
 * A file with the key must match it; a file without it (written before the
 * key existed, or edited by hand with the key removed) is read unchecked.
 * Other keys (a tool's own) are not covered. */
#define CF_ST_META_CRC_KEY "clformer.meta_crc32c"

/* The CF_ST_META_CRC_KEY value of these entries (any order). */
uint32_t cf_st_metadata_crc(const char *const *keys, const char *const *values, size_t n);

/* The metadata key of the header's checksum, which files written since it
 * carry instead of CF_ST_META_CRC_KEY: the CF_ST_META_CRC_KEY sum continued
 * over each tensor entry in header order, as its name, a NUL, its dtype, a
 * NUL, and its shape's dimensions in decimal each followed by a comma, then
 * a NUL. So a dtype or shape edited in the header ("BF16" made "F16", which
 * reinterprets the same bytes) fails like an edited config; with the
 * per-tensor CF_ST_CRC_KEY sums it covers everything a reader trusts. An
 * older file's CF_ST_META_CRC_KEY is still checked (metadata only). */
#define CF_ST_HEADER_CRC_KEY "clformer.header_crc32c"

/* Continues `crc` over one tensor entry (CF_ST_HEADER_CRC_KEY's rule). */
uint32_t cf_st_tensor_entry_crc(uint32_t crc, const char *name, const char *dtype, int ndim,
                                const int64_t *shape);

/* One tensor of an open file. A shape of [] is a scalar (1 element); a zero
 * in the shape makes an empty tensor (0 bytes). */
typedef struct {
    const char *name;     /* owned by the reader */
    cf_st_dtype dtype;
    int ndim;
    int64_t shape[CF_ST_MAX_DIMS];
    uint64_t numel;
    uint64_t nbytes;      /* numel * cf_st_dtype_size(dtype) */
    uint64_t file_offset; /* absolute offset of the first byte in the file */
    bool has_crc32c;      /* the file stores a checksum of this tensor ... */
    uint32_t crc32c;      /* ... this one, checked by cf_st_read */
} cf_st_tensor;

/* --- reading ------------------------------------------------------------- */

typedef struct cf_st_reader cf_st_reader;

/* Opens and validates `path`. Missing or unreadable: CLFORMER_ERR_IO;
 * malformed: CLFORMER_ERR_FORMAT. */
clformer_status cf_st_open(const char *path, cf_st_reader **reader);
void cf_st_close(cf_st_reader *reader); /* NULL is fine */

const char *cf_st_path(const cf_st_reader *reader);

/* The tensors in data-area order (for files this writer made: declared order). */
size_t cf_st_count(const cf_st_reader *reader);
const cf_st_tensor *cf_st_tensor_at(const cf_st_reader *reader, size_t index);

/* NULL when the file has no tensor of that name. */
const cf_st_tensor *cf_st_find(const cf_st_reader *reader, const char *name);

/* Finds `name` and checks its dtype and shape: CLFORMER_ERR_FORMAT naming
 * the file, the tensor, and what was expected when it is missing or differs.
 * `tensor` may be NULL. */
clformer_status cf_st_expect(const cf_st_reader *reader, const char *name, cf_st_dtype dtype,
                             int ndim, const int64_t *shape, const cf_st_tensor **tensor);

/* Whether a dtype is one clformer reads as floats: F32, BF16, F16. */
bool cf_st_is_float(cf_st_dtype dtype);

/* cf_st_expect for a float tensor stored as F32, BF16 or F16 (a model saved
 * by save_pretrained with torch_dtype float16 or bfloat16, or exported with
 * --dtype): another dtype is CLFORMER_ERR_FORMAT naming it and the fix. */
clformer_status cf_st_expect_float(const cf_st_reader *reader, const char *name, int ndim,
                                   const int64_t *shape, const cf_st_tensor **tensor);

/* Reads a float tensor (F32, BF16 or F16) as n = numel fp32 values into
 * `dst`; 16-bit values convert exactly (runtime/core/half.h). The stored
 * checksum covers the bytes as stored. */
clformer_status cf_st_read_f32(const cf_st_reader *reader, const cf_st_tensor *tensor,
                               float *dst, size_t n);

/* Copies a tensor's bytes into `dst`; `dst_size` must equal tensor->nbytes.
 * A tensor whose stored checksum differs is CLFORMER_ERR_FORMAT. */
clformer_status cf_st_read(const cf_st_reader *reader, const cf_st_tensor *tensor, void *dst,
                           size_t dst_size);

/* A __metadata__ value; NULL when absent. Owned by the reader. */
const char *cf_st_metadata(const cf_st_reader *reader, const char *key);
/* The metadata entries in file order. */
size_t cf_st_metadata_count(const cf_st_reader *reader);
void cf_st_metadata_at(const cf_st_reader *reader, size_t index, const char **key,
                       const char **value);

/* --- writing ------------------------------------------------------------- */

typedef struct cf_st_writer cf_st_writer;

/* A writer for `path`; nothing is created until cf_st_begin. */
clformer_status cf_st_writer_new(const char *path, cf_st_writer **writer);

/* Declarations, before cf_st_begin. Names must be unique, non-empty, valid
 * UTF-8 and not "__metadata__"; metadata keys unique; all strings UTF-8. */
clformer_status cf_st_set_metadata(cf_st_writer *writer, const char *key, const char *value);
clformer_status cf_st_declare(cf_st_writer *writer, const char *name, cf_st_dtype dtype,
                              int ndim, const int64_t *shape);

/* Stores a checksum of every tensor under CF_ST_CRC_KEY, and of the header
 * under CF_ST_HEADER_CRC_KEY (before cf_st_begin).
 * The header is written with placeholders, patched at commit. */
clformer_status cf_st_checksums(cf_st_writer *writer);

/* Fixes the declarations and writes the header to the temp file. */
clformer_status cf_st_begin(cf_st_writer *writer);

/* The next declared tensor's bytes, whole: `name` must be that tensor and
 * `size` its byte size. */
clformer_status cf_st_write(cf_st_writer *writer, const char *name, const void *data,
                            size_t size);

/* The dtype of a precision: F32, BF16, F16. */
cf_st_dtype cf_st_dtype_of(clformer_precision precision);

/* cf_st_write of n fp32 values as the next declared tensor's dtype (F32,
 * BF16 or F16), rounded to nearest even (runtime/core/half.h). A finite value
 * that would become infinite (fp16 beyond 65520) fails, naming the tensor,
 * the element and the fix, rather than writing a model that cannot load. */
clformer_status cf_st_write_f32(cf_st_writer *writer, const char *name, const float *data,
                                size_t n);

/* Checks every declared tensor was written, then makes the file appear. */
clformer_status cf_st_commit(cf_st_writer *writer);

/* Frees the writer; removes the temp file unless committed. NULL is fine. */
void cf_st_writer_free(cf_st_writer *writer);

#endif
