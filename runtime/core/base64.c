/* Base64 (base64.h). */
#include "base64.h"
#include "status.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

clformer_status cf_base64_encode(const void *data, size_t size, char **out)
{
    const unsigned char *p = data;
    char *s = malloc((size + 2) / 3 * 4 + 1);
    if (!s) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory encoding base64");
    size_t w = 0;
    for (size_t i = 0; i < size; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < size) v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < size) v |= p[i + 2];
        s[w++] = alphabet[v >> 18 & 63];
        s[w++] = alphabet[v >> 12 & 63];
        s[w++] = i + 1 < size ? alphabet[v >> 6 & 63] : '=';
        s[w++] = i + 2 < size ? alphabet[v & 63] : '=';
    }
    s[w] = '\0';
    *out = s;
    return CLFORMER_OK;
}

static int digit(char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int)(p - alphabet) : -1;
}

clformer_status cf_base64_decode(const char *text, const char *what, unsigned char **out,
                                 size_t *size)
{
    *out = NULL;
    *size = 0;
    size_t n = strlen(text);
    if (n % 4)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s is not base64: its length %zu is not a multiple "
                       "of 4", what, n);
    unsigned char *b = malloc(n / 4 * 3 + 1);
    if (!b) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory decoding base64");
    size_t w = 0;
    for (size_t i = 0; i < n; i += 4) {
        /* '=' only as the last one or two characters */
        int pad = (text[i + 3] == '=') + (text[i + 3] == '=' && text[i + 2] == '=');
        if (pad && i + 4 != n) pad = -1;
        int d[4];
        for (int k = 0; k < 4; k++) {
            d[k] = k >= 4 - pad ? 0 : digit(text[i + (size_t)k]);
            if (d[k] < 0 || pad < 0) {
                free(b);
                return cf_fail(CLFORMER_ERR_FORMAT, "%s is not base64: character %zu ('%c')",
                               what, i + (size_t)k + 1, text[i + (size_t)k]);
            }
        }
        uint32_t v = (uint32_t)d[0] << 18 | (uint32_t)d[1] << 12 | (uint32_t)d[2] << 6 |
                     (uint32_t)d[3];
        b[w++] = (unsigned char)(v >> 16);
        if (pad < 2) b[w++] = (unsigned char)(v >> 8);
        if (pad < 1) b[w++] = (unsigned char)v;
    }
    *out = b;
    *size = w;
    return CLFORMER_OK;
}
