/* `clformer plot`: draws a training log (JSON lines) as loss curves in a PNG.
 * Parsing lives here; drawing is tools/cli/plot_loss.c. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "cli_files.h"
#include "plot.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double *step, *loss;
    size_t n, cap;
} series;

static bool push(series *s, double step, double loss)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *a = realloc(s->step, cap * sizeof *a);
        if (a) s->step = a;
        double *b = a ? realloc(s->loss, cap * sizeof *b) : NULL;
        if (b) s->loss = b;
        if (!a || !b) return false;
        s->cap = cap;
    }
    s->step[s->n] = step;
    s->loss[s->n] = loss;
    s->n++;
    return true;
}

typedef struct {
    series train, val;
    size_t lines, not_finite;
    bool label_smoothing; /* an entry says its loss includes label smoothing */
} training_log;

/* Takes `key` from one log entry: absent (false, *present = false), a number,
 * or null, which is how a writer records a NaN/inf loss (jansson cannot
 * store those): it is kept as NaN, and the plot skips it. */
static bool loss_value(json_t *entry, const char *key, bool *present, double *out)
{
    json_t *v = json_object_get(entry, key);
    *present = v != NULL;
    if (!v) return true;
    if (json_is_null(v)) {
        *out = NAN;
        return true;
    }
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return true;
}

/* Reads one entry; prints "FILE:LINE: problem" and returns false when it is
 * malformed. Entries with neither "loss" nor "val_loss" are other records
 * (settings, timings) and are skipped. */
static bool read_entry(const char *cmd, const char *path, size_t line_no, const char *text,
                       size_t len, training_log *log)
{
    json_error_t err;
    json_t *entry = json_loadb(text, len, 0, &err);
    if (!entry) {
        char where[32] = "";
        if (err.column > 0) snprintf(where, sizeof where, " (column %d)", err.column);
        cli_error(cmd, "%s:%zu: not valid JSON%s: %s", path, line_no, where, err.text);
        return false;
    }
    bool ok = false, has_loss, has_val;
    double loss = NAN, val_loss = NAN;
    json_t *step = json_object_get(entry, "step");
    if (!json_is_object(entry)) {
        cli_error(cmd, "%s:%zu: expected a JSON object per line", path, line_no);
    } else if (!loss_value(entry, "loss", &has_loss, &loss) ||
               !loss_value(entry, "val_loss", &has_val, &val_loss)) {
        cli_error(cmd, "%s:%zu: \"loss\" and \"val_loss\" must be numbers (or null)", path,
                  line_no);
    } else if ((has_loss || has_val) && !json_is_number(step)) {
        cli_error(cmd, "%s:%zu: an entry with a loss needs a numeric \"step\"", path, line_no);
    } else {
        ok = true;
        double s = json_is_number(step) ? json_number_value(step) : 0;
        if ((has_loss && !push(&log->train, s, loss)) ||
            (has_val && !push(&log->val, s, val_loss))) {
            cli_error(cmd, "%s:%zu: out of memory", path, line_no);
            ok = false;
        }
        log->not_finite += (has_loss && isnan(loss)) + (has_val && isnan(val_loss));
        json_t *ls = json_object_get(entry, "label_smoothing");
        if (has_loss && json_is_number(ls) && json_number_value(ls) > 0) log->label_smoothing = true;
    }
    json_decref(entry);
    return ok;
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') return false;
    return true;
}

/* The longest line a log entry may have: trainers write about 200 bytes. */
enum { MAX_LINE = 1 << 20 };

/* Reads one line (without its '\n') into line[MAX_LINE + 1]; false at the
 * end. *too_long: the line went past MAX_LINE (the rest is skipped). */
static bool next_line(FILE *f, char *line, size_t *len, bool *too_long)
{
    size_t n = 0;
    int c;
    *too_long = false;
    while ((c = getc_unlocked(f)) != EOF && c != '\n') {
        if (n < MAX_LINE) line[n++] = (char)c;
        else *too_long = true;
    }
    line[n] = '\0';
    *len = n;
    return c != EOF || n > 0;
}

/* Streams the log: one line at a time, each parsed and let go, so memory
 * grows with the points kept (two numbers each), not with the file. */
static bool read_log(const char *cmd, const char *path, training_log *log)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error(cmd, "cannot open the log '%s': %s", path, strerror(errno));
        return false;
    }
    char *line = malloc(MAX_LINE + 1);
    size_t line_no = 0, len;
    bool ok = line != NULL, too_long;
    if (!ok) cli_error(cmd, "out of host memory");
    while (ok && next_line(f, line, &len, &too_long)) {
        line_no++;
        if (too_long) {
            cli_error(cmd, "%s:%zu: a line longer than %d bytes: not a training log", path,
                      line_no, MAX_LINE);
            ok = false;
            break;
        }
        if (blank(line)) continue;
        log->lines++;
        ok = read_entry(cmd, path, line_no, line, len, log);
    }
    if (ok && ferror(f)) {
        cli_error(cmd, "reading '%s': %s", path, strerror(errno));
        ok = false;
    }
    free(line);
    fclose(f);
    if (ok && !log->train.n && !log->val.n) {
        cli_error(cmd, "'%s' has no \"loss\" or \"val_loss\" entries%s", path,
                  log->lines ? "" : " (the file is empty)");
        ok = false;
    }
    return ok;
}

static void free_log(training_log *log)
{
    free(log->train.step);
    free(log->train.loss);
    free(log->val.step);
    free(log->val.loss);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Reads n logs and draws them in one figure: one run alone, or compared,
 * each named by its label (default: the log's file name). */
static int plot_logs(const char *cmd, const char *const *paths, const char *const *labels,
                     size_t n, const char *out, const char *title, bool log_y, int width,
                     int height)
{
    training_log logs[PLOT_MAX_RUNS] = {0};
    plot_loss_run runs[PLOT_MAX_RUNS];
    int rc = 1;
    size_t n_read = 0;
    while (n_read < n && read_log(cmd, paths[n_read], &logs[n_read])) n_read++;
    if (n_read == n) {
        for (size_t i = 0; i < n; i++) {
            const training_log *l = &logs[i];
            runs[i] = (plot_loss_run){
                .label = labels[i] ? labels[i] : base_name(paths[i]),
                .step = l->train.step, .loss = l->train.loss, .n = l->train.n,
                .val_step = l->val.step, .val_loss = l->val.loss, .n_val = l->val.n,
                .label_smoothing = l->label_smoothing,
            };
        }
        plot_loss_spec ps = {
            .runs = runs, .n_runs = n,
            .title = title ? title : n == 1 ? base_name(paths[0]) : NULL,
            .log_y = log_y, .width = width, .height = height,
        };
        if (plot_loss_curves(out, &ps) != CLFORMER_OK) {
            cli_runtime_error(cmd, NULL);
        } else {
            size_t train = 0, val = 0, not_finite = 0;
            for (size_t i = 0; i < n; i++)
                train += logs[i].train.n, val += logs[i].val.n, not_finite += logs[i].not_finite;
            printf("wrote %s: %zu training and %zu validation points", out, train, val);
            if (n > 1) printf(" from %zu runs", n);
            if (not_finite)
                printf(" (%zu null loss%s skipped)", not_finite, not_finite == 1 ? "" : "es");
            char note[2][PLOT_NOTE_BYTES];
            double widths[2], max_w;
            const int lines = plot_loss_note(&ps, note, widths, &max_w);
            if (lines) printf("; noted: %s%s%s", note[0], lines > 1 ? " " : "", lines > 1 ? note[1] : "");
            printf("\n");
            rc = 0;
        }
    }
    for (size_t i = 0; i < n; i++) free_log(&logs[i]);
    return rc;
}

int cmd_plot(int argc, char **argv)
{
    cli_strings logs = {0}, labels = {0};
    const char *out = NULL, *title = NULL;
    bool log_y = false, overwrite = false;
    long width = 0, height = 0;
    const cli_option options[] = {
        {"--log", CLI_STRINGS, &logs, "FILE.jsonl",
         "a training log (required; give it up to 6 times to compare runs)"},
        {"--label", CLI_STRINGS, &labels, "NAME",
         "legend name of each --log, in order (default: the file names)"},
        {"--out", CLI_STRING, &out, "FILE.png", "where to write the figure (required)"},
        {"--title", CLI_STRING, &title, "TEXT",
         "figure title (default: the log's file name, or \"Loss\" for several)"},
        {"--log-y", CLI_FLAG, &log_y, NULL, "logarithmic loss axis"},
        {"--width", CLI_INT, &width, "PIXELS", "image width (default 960)", 320, 8192},
        {"--height", CLI_INT, &height, "PIXELS", "image height (default 560)", 240, 8192},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "plot", "Draw the loss curves of a training log as a PNG: the training loss per step\n"
                "with a smoothed line, and the validation loss as markers. Several logs are\n"
                "drawn on the same axes, one colour each, to compare runs.",
        "clformer plot --log FILE.jsonl [--log FILE.jsonl ...] --out FILE.png [options]",
        "The log holds one JSON object per line. Lines with \"loss\" are training steps,\n"
        "lines with \"val_loss\" validation results; both need \"step\". A null loss (a\n"
        "NaN or inf during training) is skipped; other keys and lines are ignored.\n"
        "  {\"step\": 100, \"loss\": 4.12, \"lr\": 0.0007}\n"
        "  {\"step\": 500, \"val_loss\": 3.87}\n"
        "examples:\n"
        "  clformer plot --log run/train.jsonl --out loss.png --log-y\n"
        "  clformer plot --log one.jsonl --label '1 rank' --log two.jsonl --label '2 ranks' \\\n"
        "      --out compare.png",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!logs.n || !out) {
        cli_error("plot", "%s is required (see clformer plot --help)", !logs.n ? "--log" : "--out");
        return EXIT_USAGE;
    }
    if (logs.n > PLOT_MAX_RUNS) {
        cli_error("plot", "%zu logs given; one figure compares at most %d", logs.n,
                  PLOT_MAX_RUNS);
        return EXIT_USAGE;
    }
    if (labels.n && labels.n != logs.n) {
        cli_error("plot", "%zu --label for %zu --log: give one label per log, or none",
                  labels.n, logs.n);
        return EXIT_USAGE;
    }
    if (!width != !height) {
        cli_error("plot", "--width and --height go together");
        return EXIT_USAGE;
    }
    /* the figure must not replace a log it is drawn from */
    cli_files files;
    if (!cli_files_begin(&files, "plot", overwrite)) return 1;
    bool declared = true;
    for (size_t i = 0; i < logs.n && declared; i++)
        declared = cli_files_read(&files, "--log", logs.item[i]);
    int rc = declared && cli_files_write(&files, "--out", out, CLFORMER_WRITE_STREAM)
                 ? cli_files_open(&files)
                 : 1;
    const char *names[PLOT_MAX_RUNS] = {0};
    for (size_t i = 0; i < labels.n; i++) names[i] = labels.item[i];
    if (rc < 0)
        rc = plot_logs("plot", logs.item, names, logs.n, out, title, log_y, (int)width,
                       (int)height);
    cli_files_end(&files);
    return rc;
}

int plot_training_log(const char *cmd, const char *log_path, const char *out, const char *title,
                      bool log_y, int width, int height)
{
    const char *label = NULL;
    return plot_logs(cmd, &log_path, &label, 1, out, title, log_y, width, height);
}
