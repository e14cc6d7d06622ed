/*
 * Base64 (RFC 4648, standard alphabet, '=' padding): binary blobs such as a
 * SentencePiece model inside a checkpoint's JSON/string metadata.
 */
#ifndef CF_BASE64_H
#define CF_BASE64_H

#include "clformer.h"

#include <stddef.h>

/* The encoding of data[0..size) as a new NUL-terminated string in *out. */
clformer_status cf_base64_encode(const void *data, size_t size, char **out);

/* Decodes the NUL-terminated `text` into *out (malloc'd, *size bytes).
 * Anything but the alphabet with correct padding (no whitespace) is
 * CLFORMER_ERR_FORMAT naming `what` and the offending offset. */
clformer_status cf_base64_decode(const char *text, const char *what, unsigned char **out,
                                 size_t *size);

#endif
