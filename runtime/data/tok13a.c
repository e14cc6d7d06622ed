/*
 * The 13a tokenizer (tok13a.h). Each rewrite is one pass over the bytes. The
 * patterns only ever test ASCII bytes for membership ('.', ',', '-', digits,
 * punctuation) and "non-digit" is any byte but 0-9, so scanning UTF-8 bytes
 * finds exactly the matches a scan over code points finds: a multi-byte
 * character can only take part in a match through its last byte (before a
 * '.' or ',') or its first (after one), and its other bytes never match.
 */
#include "tok13a.h"
#include "status.h"
#include "text.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Rule a's class: the ASCII punctuation and space, less ' , - . */
static bool is_split_punct(char c)
{
    return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
           (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

static bool is_period_comma(char c) { return c == '.' || c == ','; }

/* Replaces every non-overlapping `from` (left to right) by `to` in place;
 * `to` is never longer than `from`. */
static void replace_all(char *s, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to);
    char *r = s, *w = s;
    while (*r) {
        if (strncmp(r, from, nf) == 0) {
            memcpy(w, to, nt);
            w += nt;
            r += nf;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* One rewrite over s[0..n) into out (room for 3n + 1 bytes); returns the
 * new length. `rule` is 'a'..'d' as in tok13a.h. */
static size_t rewrite(const char *s, size_t n, char rule, char *out)
{
    size_t w = 0, i = 0;
    while (i < n) {
        char c = s[i], d = i + 1 < n ? s[i + 1] : '\0';
        bool pair = i + 1 < n;
        if (rule == 'a' && is_split_punct(c)) {
            out[w++] = ' ', out[w++] = c, out[w++] = ' ';
            i++;
        } else if (rule == 'b' && pair && !is_digit(c) && is_period_comma(d)) {
            out[w++] = c, out[w++] = ' ', out[w++] = d, out[w++] = ' ';
            i += 2;
        } else if (rule == 'c' && pair && is_period_comma(c) && !is_digit(d)) {
            out[w++] = ' ', out[w++] = c, out[w++] = ' ', out[w++] = d;
            i += 2;
        } else if (rule == 'd' && pair && is_digit(c) && d == '-') {
            out[w++] = c, out[w++] = ' ', out[w++] = d, out[w++] = ' ';
            i += 2;
        } else {
            out[w++] = c;
            i++;
        }
    }
    out[w] = '\0';
    return w;
}

/* Length of `s` without its trailing whitespace (Python's str.rstrip()). */
static size_t rstripped_length(const char *s)
{
    size_t n = strlen(s), pos = 0, start, len, end = 0;
    while (cf_next_token(s, n, &pos, &start, &len)) end = start + len;
    return end;
}

clformer_status cf_tokenize_13a(const char *line, char **out)
{
    *out = NULL;
    size_t n = rstripped_length(line);
    char *a = malloc(n + 3);
    if (!a) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory tokenising a line");
    a[0] = ' ';
    memcpy(a + 1, line, n);
    a[n + 1] = '\0';
    replace_all(a + 1, "<skipped>", "");
    replace_all(a + 1, "-\n", "");
    for (char *p = a + 1; *p; p++)
        if (*p == '\n') *p = ' ';
    if (strchr(a + 1, '&')) {
        replace_all(a + 1, "&quot;", "\"");
        replace_all(a + 1, "&amp;", "&");
        replace_all(a + 1, "&lt;", "<");
        replace_all(a + 1, "&gt;", ">");
    }
    n = strlen(a);
    a[n++] = ' ';
    a[n] = '\0';
    for (char rule = 'a'; rule <= 'd'; rule++) {
        /* rule a turns 1 byte into 3, the others 2 into 4 */
        char *b = malloc(3 * n + 1);
        if (!b) {
            free(a);
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory tokenising a line");
        }
        n = rewrite(a, n, rule, b);
        free(a);
        a = b;
    }
    *out = a;
    return CLFORMER_OK;
}
