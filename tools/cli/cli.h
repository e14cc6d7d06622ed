/*
 * Command-line parsing shared by every `clformer` subcommand: a table of
 * options, generated --help, and one-line errors that name the bad flag or
 * value and the fix. Only tools/ prints and exits.
 */
#ifndef CLFORMER_CLI_H
#define CLFORMER_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum {
    CLI_FLAG,   /* bool, no value */
    CLI_INT,    /* long within [min, max] */
    CLI_DOUBLE, /* double within [min, max] */
    CLI_STRING, /* const char * */
    CLI_CHOICE, /* const char *, one of `choices` ("a|b|c") */
    CLI_STRINGS /* cli_strings: the option may be given up to CLI_MAX_REPEAT times */
} cli_kind;

enum { CLI_MAX_REPEAT = 8 };

/* The values of a repeatable option, in command-line order. */
typedef struct {
    const char *item[CLI_MAX_REPEAT];
    size_t n;
} cli_strings;

typedef struct {
    const char *name; /* "--steps" */
    cli_kind kind;
    void *target;     /* bool*, long*, double* or const char ** */
    const char *metavar;
    const char *help;
    double min, max;  /* CLI_INT / CLI_DOUBLE bounds (both 0: unbounded) */
    const char *choices;
    bool *seen;       /* optional: set when the option was given */
} cli_option;

typedef struct {
    const char *command;     /* "train" */
    const char *summary;     /* one line */
    const char *usage;       /* "clformer train --src FILE --tgt FILE [options]" */
    const char *epilog;      /* examples, notes (may be NULL) */
    const cli_option *options;
    size_t n_options;
    /* positional arguments are refused unless this is set */
    const char **positional;
    size_t max_positional, *n_positional;
} cli_spec;

typedef enum { CLI_OK, CLI_HELP, CLI_ERROR } cli_result;

/* Joins names[0..] (up to the first NULL) as "a|b|c" for an option's
 * `choices`, into buf (cap bytes): choices come from the library's tables
 * (clformer_config_presets, clformer_activation_name ...), not copies. */
const char *cli_choices(char *buf, size_t cap, const char *const *names);

/* Whether `name` is one of names[0..] (up to the first NULL), e.g. a
 * language model's preset (clformer_config_lm_presets). */
bool cli_is_one_of(const char *name, const char *const *names);

/* Parses argv[1..] (argv[0] is the subcommand). Prints --help to stdout, and
 * errors to stderr as "clformer CMD: message". */
cli_result cli_parse(const cli_spec *spec, int argc, char **argv);

/* Reads a duration: seconds, or a number followed by s, m or h ("7200",
 * "90m", "1.5h"), into *seconds (> 0 and finite); false when it is not one. */
bool cli_duration_seconds(const char *text, double *seconds);

/* Prints "clformer CMD: error: ..." to stderr: one line, control characters
 * and bytes that are not UTF-8 escaped (\n, \xNN). */
void cli_error(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints the runtime's last error as a one-line error (escaped as
 * cli_error's; a kernel build log keeps its lines). */
void cli_runtime_error(const char *command, const char *doing);

/* Returns a failing clformer_status from the enclosing function (whose
 * message clformer_last_error() holds). */
#define CLI_TRY(expr)                                                          \
    do {                                                                       \
        clformer_status cli_st_ = (expr);                                      \
        if (cli_st_ != CLFORMER_OK) return cli_st_;                            \
    } while (0)

/* Seconds since an arbitrary start, monotonic: the tools' one clock. */
double cli_now_s(void);

/* A JSON number, or null for NaN and infinities: JSON has neither, and
 * jansson's json_real refuses them (a dropped key would be silent garbage). */
json_t *cli_json_number(double v);

/* Prints `value` (stolen) as one line of JSON on stdout; false when it could
 * not be encoded (out of memory). */
bool cli_print_json(json_t *value);

/* Exit codes: 0 success, 1 runtime failure, 2 usage error, 130 interrupted. */
enum { EXIT_USAGE = 2, EXIT_INTERRUPTED = 130 };

#endif
