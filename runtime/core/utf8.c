/*
 * The one UTF-8 validator: text files, vocabularies, BLEU input, safetensors
 * headers and plot labels all accept exactly the same byte sequences.
 */
#include "clformer.h"

#include <stdint.h>

bool clformer_utf8_valid(const char *str, size_t n, size_t *bad)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
        else goto invalid; /* stray continuation byte, 0xC0/0xC1 or 0xF5.. */
        if (n - i < len) goto invalid;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) goto invalid;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) goto invalid;
        i += len;
    }
    return true;
invalid:
    if (bad) *bad = i;
    return false;
}
