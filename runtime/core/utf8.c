/*
 * The one UTF-8 reader, writer and validator (utf8.h): text files,
 * vocabularies, BLEU input, safetensors headers and plot labels all accept
 * exactly the same byte sequences, and the tokenizers and lower-casing read
 * characters as the validator does.
 */
#include "clformer.h"
#include "utf8.h"

#include <stdint.h>

uint32_t cf_utf8_get(const unsigned char *s, size_t n, size_t *cp_len)
{
    *cp_len = 1;
    unsigned char c = s[0];
    if (c < 0x80) return c;
    size_t need;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1, cp = c & 0x1Fu, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2, cp = c & 0x0Fu, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3, cp = c & 0x07u, min = 0x10000;
    } else {
        return UINT32_MAX;
    }
    if (n < need + 1) return UINT32_MAX;
    for (size_t i = 1; i <= need; i++) {
        if ((s[i] & 0xC0) != 0x80) return UINT32_MAX;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return UINT32_MAX;
    *cp_len = need + 1;
    return cp;
}

size_t cf_utf8_put(uint32_t cp, char out[CF_UTF8_MAX])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

bool clformer_utf8_valid(const char *str, size_t n, size_t *bad)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0, len; i < n; i += len)
        if (cf_utf8_get(s + i, n - i, &len) == UINT32_MAX) {
            if (bad) *bad = i;
            return false;
        }
    return true;
}
