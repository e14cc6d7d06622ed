/* `clformer plot`: draws a training log (JSON lines) as loss curves in a PNG.
 * Parsing lives here; drawing is tools/cli/plot.c. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
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

static bool read_log(const char *cmd, const char *path, training_log *log)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        cli_error(cmd, "cannot open the log '%s': %s", path, strerror(errno));
        return false;
    }
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t len;
    bool ok = true;
    while (ok && (len = getline(&line, &cap, f)) >= 0) {
        line_no++;
        if (blank(line)) continue;
        log->lines++;
        ok = read_entry(cmd, path, line_no, line, (size_t)len, log);
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

int cmd_plot(int argc, char **argv)
{
    const char *log_path = NULL, *out = NULL, *title = NULL;
    bool log_y = false;
    long width = 0, height = 0;
    const cli_option options[] = {
        {"--log", CLI_STRING, &log_path, "FILE.jsonl", "the training log (required)"},
        {"--out", CLI_STRING, &out, "FILE.png", "where to write the figure (required)"},
        {"--title", CLI_STRING, &title, "TEXT", "figure title (default: the log's file name)"},
        {"--log-y", CLI_FLAG, &log_y, NULL, "logarithmic loss axis"},
        {"--width", CLI_INT, &width, "PIXELS", "image width (default 960)", 320, 8192},
        {"--height", CLI_INT, &height, "PIXELS", "image height (default 560)", 240, 8192},
    };
    const cli_spec spec = {
        "plot", "Draw the loss curves of a training log as a PNG: the training loss per step\n"
                "with a smoothed line, and the validation loss as markers.",
        "clformer plot --log FILE.jsonl --out FILE.png [--title TEXT] [--log-y]",
        "The log holds one JSON object per line. Lines with \"loss\" are training steps,\n"
        "lines with \"val_loss\" validation results; both need \"step\". A null loss (a\n"
        "NaN or inf during training) is skipped; other keys and lines are ignored.\n"
        "  {\"step\": 100, \"loss\": 4.12, \"lr\": 0.0007}\n"
        "  {\"step\": 500, \"val_loss\": 3.87}\n"
        "example: clformer plot --log run/train.jsonl --out loss.png --log-y",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!log_path || !out) {
        cli_error("plot", "%s is required (see clformer plot --help)",
                  !log_path ? "--log" : "--out");
        return EXIT_USAGE;
    }
    if (!width != !height) {
        cli_error("plot", "--width and --height go together");
        return EXIT_USAGE;
    }

    return plot_training_log("plot", log_path, out, title, log_y, (int)width, (int)height);
}

int plot_training_log(const char *cmd, const char *log_path, const char *out, const char *title,
                      bool log_y, int width, int height)
{
    training_log log = {0};
    int rc = 1;
    if (read_log(cmd, log_path, &log)) {
        const char *base = strrchr(log_path, '/');
        plot_loss_spec ps = {
            .step = log.train.step, .loss = log.train.loss, .n = log.train.n,
            .val_step = log.val.step, .val_loss = log.val.loss, .n_val = log.val.n,
            .title = title ? title : base ? base + 1 : log_path,
            .log_y = log_y, .width = width, .height = height,
        };
        if (plot_loss_curves(out, &ps) != CLFORMER_OK) {
            cli_runtime_error(cmd, NULL);
        } else {
            printf("wrote %s: %zu training and %zu validation points", out, log.train.n,
                   log.val.n);
            if (log.not_finite)
                printf(" (%zu null loss%s skipped)", log.not_finite, log.not_finite == 1 ? "" : "es");
            printf("\n");
            rc = 0;
        }
    }
    free(log.train.step);
    free(log.train.loss);
    free(log.val.step);
    free(log.val.loss);
    return rc;
}
