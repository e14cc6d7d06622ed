/* Table-driven option parsing with generated help. */
#include "cli.h"
#include "clformer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    const size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
                       : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2)) return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    return len;
}

/* Writes `text` with what could break the line or the terminal escaped: C0
 * controls, DEL and bytes that are not UTF-8 become \n, \t, \r or \xNN, so a
 * file name or a file's bytes echoed in a message stay on one line. The
 * two lists the library ends a message with keep their lines: a kernel's
 * build log (after "Build log:") and the devices a selector did not match
 * (after "Devices:"). */
static void put_escaped(FILE *out, const char *text)
{
    static const char *const lists[] = {"Build log:\n", " Devices:\n"};
    const char *raw = NULL; /* from here on, as it is */
    for (size_t k = 0; k < 2 && !raw; k++)
        if ((raw = strstr(text, lists[k]))) raw += strlen(lists[k]) - 1;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0, n = strlen(text); i < n;) {
        if (raw && (const char *)s + i >= raw) {
            fputs((const char *)s + i, out);
            return;
        }
        const size_t len = utf8_length(s + i, n - i);
        const unsigned char c = s[i];
        if (len > 1 || (len == 1 && c >= 0x20 && c != 0x7f)) {
            fwrite(s + i, 1, len, out);
            i += len;
            continue;
        }
        if (c == '\n') fputs("\\n", out);
        else if (c == '\t') fputs("\\t", out);
        else if (c == '\r') fputs("\\r", out);
        else fprintf(out, "\\x%02x", c);
        i++;
    }
}

static void put_error(FILE *out, const char *command, const char *doing, const char *text)
{
    fprintf(out, "clformer %s: error: ", command);
    if (doing && *doing) {
        put_escaped(out, doing);
        fputs(": ", out);
    }
    put_escaped(out, text);
    fputc('\n', out);
}

/* The error line goes to stderr in one write: stderr is unbuffered, and a line
 * written piece by piece can be cut by other output on the same stream (under
 * mpirun, its abort notice landed inside a rank's refusal). */
static void error_line(const char *command, const char *doing, const char *text)
{
    char *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (m) put_error(m, command, doing, text);
    if (m && fclose(m) == 0) fwrite(line, 1, len, stderr);
    else put_error(stderr, command, doing, text);
    free(line);
}

void cli_error(const char *command, const char *fmt, ...)
{
    char text[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    error_line(command, NULL, text);
}

void cli_runtime_error(const char *command, const char *doing)
{
    error_line(command, doing, clformer_last_error());
}

static void print_help(const cli_spec *s)
{
    printf("usage: %s\n\n%s\n\noptions:\n", s->usage, s->summary);
    for (size_t i = 0; i < s->n_options; i++) {
        const cli_option *o = &s->options[i];
        char left[96];
        if (o->kind == CLI_FLAG) snprintf(left, sizeof left, "%s", o->name);
        else if (o->kind == CLI_CHOICE) snprintf(left, sizeof left, "%s %s", o->name, o->choices);
        else snprintf(left, sizeof left, "%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        /* a help text of several lines keeps its column */
        printf("  %-30s ", left);
        for (const char *h = o->help; *h; h++) {
            putchar(*h);
            if (*h == '\n' && h[1]) printf("%33s", "");
        }
        putchar('\n');
    }
    printf("  %-30s %s\n", "-h, --help", "show this help and exit");
    if (s->epilog) printf("\n%s\n", s->epilog);
}

static bool in_choices(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return true;
        if (!bar) break;
        p = bar + 1;
    }
    return false;
}

static bool set_value(const cli_spec *s, const cli_option *o, const char *v)
{
    char *end = NULL;
    bool bounded = !(o->min == 0 && o->max == 0);
    switch (o->kind) {
    case CLI_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (errno || !*v || *end) {
            cli_error(s->command, "%s expects a whole number, got '%s'", o->name, v);
            return false;
        }
        if (bounded && (x < o->min || x > o->max)) {
            cli_error(s->command, "%s must be between %.0f and %.0f, got %ld", o->name, o->min,
                      o->max, x);
            return false;
        }
        *(long *)o->target = x;
        return true;
    }
    case CLI_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno || !*v || *end || !isfinite(x)) {
            cli_error(s->command, "%s expects a number, got '%s'", o->name, v);
            return false;
        }
        if (bounded && (x < o->min || x > o->max)) {
            cli_error(s->command, "%s must be between %g and %g, got %g", o->name, o->min,
                      o->max, x);
            return false;
        }
        *(double *)o->target = x;
        return true;
    }
    case CLI_CHOICE:
        if (!in_choices(o->choices, v)) {
            cli_error(s->command, "%s must be one of %s, got '%s'", o->name, o->choices, v);
            return false;
        }
        *(const char **)o->target = v;
        return true;
    case CLI_STRING:
        if (!*v) {
            cli_error(s->command, "%s expects a non-empty value", o->name);
            return false;
        }
        *(const char **)o->target = v;
        return true;
    case CLI_STRINGS: {
        cli_strings *list = o->target;
        if (!*v) {
            cli_error(s->command, "%s expects a non-empty value", o->name);
            return false;
        }
        if (list->n == CLI_MAX_REPEAT) {
            cli_error(s->command, "%s may be given at most %d times", o->name, CLI_MAX_REPEAT);
            return false;
        }
        list->item[list->n++] = v;
        return true;
    }
    case CLI_FLAG: break;
    }
    return false;
}

cli_result cli_parse(const cli_spec *s, int argc, char **argv)
{
    if (s->n_positional) *s->n_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            print_help(s);
            return CLI_HELP;
        }
        if (arg[0] != '-' || !strcmp(arg, "-")) {
            if (s->positional && *s->n_positional < s->max_positional) {
                s->positional[(*s->n_positional)++] = arg;
                continue;
            }
            cli_error(s->command, "unexpected argument '%s' (see clformer %s --help)", arg,
                      s->command);
            return CLI_ERROR;
        }
        /* --name=value or --name value */
        char name[128];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, arg, len);
        name[len] = '\0';
        const cli_option *o = NULL;
        for (size_t k = 0; k < s->n_options; k++)
            if (!strcmp(s->options[k].name, name)) o = &s->options[k];
        if (!o) {
            cli_error(s->command, "unknown option '%s' (see clformer %s --help)", name,
                      s->command);
            return CLI_ERROR;
        }
        if (o->seen) *o->seen = true;
        if (o->kind == CLI_FLAG) {
            if (eq) {
                cli_error(s->command, "%s takes no value", o->name);
                return CLI_ERROR;
            }
            *(bool *)o->target = true;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            cli_error(s->command, "%s needs a value (see clformer %s --help)", o->name,
                      s->command);
            return CLI_ERROR;
        }
        if (!set_value(s, o, value)) return CLI_ERROR;
    }
    return CLI_OK;
}

double cli_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

json_t *cli_json_number(double v) { return isfinite(v) ? json_real(v) : json_null(); }

bool cli_print_json(json_t *value)
{
    char *text = value ? json_dumps(value, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(7)) : NULL;
    json_decref(value);
    if (!text) return false;
    printf("%s\n", text);
    free(text);
    return true;
}

bool cli_duration_seconds(const char *text, double *seconds)
{
    char *end;
    errno = 0;
    double x = strtod(text, &end);
    if (end == text || errno || isspace((unsigned char)text[0])) return false;
    const double unit = !strcmp(end, "") || !strcmp(end, "s") ? 1.0
                        : !strcmp(end, "m")                   ? 60.0
                        : !strcmp(end, "h")                   ? 3600.0
                                                              : 0.0;
    x *= unit;
    if (!(x > 0 && x < 1e12)) return false;
    *seconds = x;
    return true;
}

bool cli_is_one_of(const char *name, const char *const *names)
{
    for (size_t i = 0; name && names[i]; i++)
        if (!strcmp(names[i], name)) return true;
    return false;
}

const char *cli_choices(char *buf, size_t cap, const char *const *names)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; names[i] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "|" : "", names[i]);
    return buf;
}
