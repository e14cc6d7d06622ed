/*
 * On-disk cache of compiled program binaries.
 *
 * File name: 16 hex digits of a 64-bit FNV-1a hash of the key text (platform,
 * device, driver version, options and full source). The file stores the key
 * text itself, so a hash collision or a stale entry is detected exactly, and
 * a checksum of the binary, so a truncated or corrupted file is rebuilt.
 * Layout: "CLFORMER-BIN-1\n", u64 key length, key, u64 binary length,
 * binary, u64 FNV-1a of the binary (all little-endian host order).
 */
#include "door.h"
#include "fileio.h"
#include "fnv1a.h"
#include "log.h"
#include "program.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char MAGIC[] = "CLFORMER-BIN-1\n";

clformer_status cf_cache_key_make(const cf_ctx *ctx, const char *source, const char *options,
                                  cf_cache_key *key)
{
    memset(key, 0, sizeof *key);
    const clformer_device_info *d = &ctx->info;
    size_t n = strlen(source) + strlen(options) + 4096;
    key->key = malloc(n);
    if (!key->key) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    snprintf(key->key, n,
             "platform=%s\nplatform_version=%s\ndevice=%s\nvendor=%s\ndriver=%s\n"
             "device_version=%s\noptions=%s\nsource=%s",
             d->platform, d->platform_version, d->name, d->vendor, d->driver_version,
             d->device_version, options, source);
    const char *dir = ctx->cache_dir;
    if (!dir) return CLFORMER_OK;
    key->path = malloc(strlen(dir) + 32);
    if (!key->path) return CLFORMER_OK; /* no cache, not an error */
    sprintf(key->path, "%s/%016llx.bin", dir,
            (unsigned long long)cf_fnv1a(CF_FNV1A_INIT, key->key, strlen(key->key)));
    return CLFORMER_OK;
}

void cf_cache_key_free(cf_cache_key *key)
{
    free(key->key);
    free(key->path);
    memset(key, 0, sizeof *key);
}

static bool take(const char **p, const char *end, void *dst, size_t n)
{
    if ((size_t)(end - *p) < n) return false;
    memcpy(dst, *p, n);
    *p += n;
    return true;
}

bool cf_cache_parse(const char *data, size_t size, const char *key,
                    const unsigned char **binary, size_t *binary_len)
{
    const char *p = data, *end = data + size;
    char magic[sizeof MAGIC - 1];
    uint64_t key_len = 0, bin_len = 0, sum = 0;
    bool ok = take(&p, end, magic, sizeof magic) && !memcmp(magic, MAGIC, sizeof magic) &&
              take(&p, end, &key_len, 8) && key_len == strlen(key) &&
              (uint64_t)(end - p) >= key_len && !memcmp(p, key, key_len);
    if (ok) {
        p += key_len;
        /* subtract, not add: a corrupt length near 2^64 must not wrap */
        ok = take(&p, end, &bin_len, 8) && bin_len > 0 && (uint64_t)(end - p) >= 8 &&
             (uint64_t)(end - p) - 8 >= bin_len;
    }
    const unsigned char *bin = (const unsigned char *)p;
    if (ok) {
        p += bin_len;
        ok = take(&p, end, &sum, 8) && sum == cf_fnv1a(CF_FNV1A_INIT, bin, bin_len) && p == end;
    }
    *binary = ok ? bin : NULL;
    *binary_len = ok ? (size_t)bin_len : 0;
    return ok;
}

bool cf_cache_load(const cf_ctx *ctx, const cf_cache_key *key, const char *options, cl_program *out,
                   bool *rejected)
{
    *rejected = false;
    if (!key->path) return false;
    FILE *probe = fopen(key->path, "rb");
    if (!probe) return false; /* a plain miss */
    fclose(probe);

    char *data = NULL;
    size_t size = 0;
    if (cf_read_file(key->path, &data, &size) != CLFORMER_OK) {
        cf_clear_error();
        *rejected = true;
        return false;
    }
    const unsigned char *binary = NULL;
    size_t bin_len = 0;
    bool ok = cf_cache_parse(data, size, key->key, &binary, &bin_len);
    cl_program program = NULL;
    if (ok) {
        cl_int err, bin_status;
        size_t len = bin_len;
        program = clCreateProgramWithBinary(ctx->context, 1, &ctx->device, &len, &binary,
                                            &bin_status, &err);
        ok = err == CL_SUCCESS && bin_status == CL_SUCCESS &&
             clBuildProgram(program, 1, &ctx->device, options, NULL, NULL) == CL_SUCCESS;
        if (!ok && program) clReleaseProgram(program);
    }
    free(data);
    if (!ok) {
        *rejected = true; /* the caller logs it: this may run on a compile thread */
        return false;
    }
    *out = program;
    return true;
}

bool cf_cache_store(const cf_cache_key *key, cl_program program, char *reason, size_t cap)
{
    if (!key->path) return true;
    size_t bin_len = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof bin_len, &bin_len, NULL) !=
            CL_SUCCESS || bin_len == 0)
        return true; /* this driver gives no binaries: nothing to cache */
    uint64_t key_len = strlen(key->key), blen = bin_len;
    size_t total = (sizeof MAGIC - 1) + 8 + key_len + 8 + bin_len + 8;
    unsigned char *buf = malloc(total);
    if (!buf) return true; /* skipped, not failed: the next run tries again */
    unsigned char *p = buf;
    memcpy(p, MAGIC, sizeof MAGIC - 1);
    p += sizeof MAGIC - 1;
    memcpy(p, &key_len, 8);
    p += 8;
    memcpy(p, key->key, key_len);
    p += key_len;
    memcpy(p, &blen, 8);
    p += 8;
    unsigned char *binary = p;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binary, &binary, NULL) !=
        CL_SUCCESS) {
        free(buf);
        return true;
    }
    p += bin_len;
    uint64_t sum = cf_fnv1a(CF_FNV1A_INIT, binary, bin_len);
    memcpy(p, &sum, 8);

    char *dir = strdup(key->path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = '\0';
    bool ok = dir && cf_make_dirs(dir) == CLFORMER_OK &&
              cf_write_cache_file(key->path, buf, total) == CLFORMER_OK;
    if (!ok) {
        snprintf(reason, cap, "cannot write program cache %s: %s (choose another cache "
                 "directory, CLFORMER_CACHE_DIR for the CLI, or turn the cache off with "
                 "CLFORMER_CACHE=0)", key->path, clformer_last_error());
        cf_clear_error();
    }
    free(dir);
    free(buf);
    return ok;
}
