/*
 * Python-compatible whitespace splitting and line files in memory (UTF-8
 * validation is clformer_utf8_valid, runtime/core/utf8.c). Splitting works on
 * byte ranges, so lines need not be NUL-terminated.
 */
#include "text.h"
#include "status.h"

#include <stdint.h>
#include <string.h>

/* Length in bytes of the whitespace code point at s[i..n), or 0 if none.
 * The set is Python's str.isspace(): U+0009-000D, U+001C-001F, U+0020,
 * U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
static size_t space_at(const unsigned char *s, size_t i, size_t n)
{
    unsigned c = s[i];
    if (c < 0x80) return ((c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20)) ? 1 : 0;
    if (c == 0xC2 && i + 1 < n) return (s[i + 1] == 0x85 || s[i + 1] == 0xA0) ? 2 : 0;
    if (c == 0xE1 && i + 2 < n) return (s[i + 1] == 0x9A && s[i + 2] == 0x80) ? 3 : 0;
    if (c == 0xE2 && i + 2 < n) {
        unsigned b1 = s[i + 1], b2 = s[i + 2];
        if (b1 == 0x80 && (b2 <= 0x8A || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF)) return 3;
        if (b1 == 0x81 && b2 == 0x9F) return 3;
        return 0;
    }
    if (c == 0xE3 && i + 2 < n) return (s[i + 1] == 0x80 && s[i + 2] == 0x80) ? 3 : 0;
    return 0;
}

/* Length of the (non-space) code point at s[i]; 1 for ASCII and for bytes of
 * invalid input, so the scan always advances. */
static size_t char_len(const unsigned char *s, size_t i, size_t n)
{
    unsigned c = s[i];
    size_t len = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return len <= n - i ? len : n - i;
}

bool cf_next_token(const char *str, size_t n, size_t *pos, size_t *start, size_t *len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = *pos, w;
    while (i < n && (w = space_at(s, i, n)) > 0) i += w;
    if (i >= n) {
        *pos = n;
        return false;
    }
    size_t b = i;
    while (i < n && space_at(s, i, n) == 0) i += char_len(s, i, n);
    *start = b;
    *len = i - b;
    *pos = i;
    return true;
}

size_t cf_count_tokens(const char *s, size_t n)
{
    size_t pos = 0, start, len, count = 0;
    while (cf_next_token(s, n, &pos, &start, &len)) count++;
    return count;
}

bool cf_has_whitespace(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; i < n; i += char_len(s, i, n))
        if (space_at(s, i, n)) return true;
    return false;
}

void cf_skip_bom(char **buf, size_t *size)
{
    if (*size >= 3 && memcmp(*buf, "\xEF\xBB\xBF", 3) == 0) {
        *buf += 3;
        *size -= 3;
    }
}

/* 1-based line and byte-in-line of offset `at`. */
static void locate(const char *buf, size_t at, size_t *line, size_t *byte)
{
    size_t l = 1, line_start = 0;
    for (size_t i = 0; i < at; i++)
        if (buf[i] == '\n') {
            l++;
            line_start = i + 1;
        }
    *line = l;
    *byte = at - line_start + 1;
}

clformer_status cf_check_text(const char *name, const char *buf, size_t size, const char *rule)
{
    size_t line, byte, bad;
    const char *nul = memchr(buf, '\0', size);
    if (nul) {
        locate(buf, (size_t)(nul - buf), &line, &byte);
        return cf_fail(CLFORMER_ERR_FORMAT, "%s:%zu: NUL byte at byte %zu of the line; %s", name,
                       line, byte, rule);
    }
    if (!clformer_utf8_valid(buf, size, &bad)) {
        locate(buf, bad, &line, &byte);
        return cf_fail(CLFORMER_ERR_FORMAT, "%s:%zu: invalid UTF-8 at byte %zu of the line "
                       "(0x%02x); %s", name, line, byte, (unsigned char)buf[bad], rule);
    }
    return CLFORMER_OK;
}

size_t cf_count_lines(const char *buf, size_t size)
{
    size_t n = 0;
    for (const char *p = buf, *end = buf + size; (p = memchr(p, '\n', (size_t)(end - p))); p++) n++;
    if (size > 0 && buf[size - 1] != '\n') n++;
    return n;
}

void cf_split_lines(char *buf, size_t size, char **lines, size_t n)
{
    char *p = buf, *end = buf + size;
    for (size_t k = 0; k < n; k++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        lines[k] = p;
        if (!nl) break; /* the unterminated last line ends at buf[size] */
        *nl = '\0';
        p = nl + 1;
    }
}
