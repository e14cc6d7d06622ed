/*
 * Figures for the `clformer` tool, drawn with cairo into PNG files:
 *
 *   plot_loss_curves  training loss per step (faint) with a smoothed line,
 *                     validation loss as markers, against the step; one run
 *                     or several on the same axes.
 *   plot_attention    attention weights as a heatmap, one panel per head or
 *                     the mean over heads, tokens along both axes.
 *
 * Host-only: no OpenCL. Failures return a clformer_status with the message in
 * clformer_last_error(); the file is not left half-written.
 */
#ifndef CLFORMER_PLOT_H
#define CLFORMER_PLOT_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>

/* One training run's losses. */
typedef struct {
    const char *label; /* legend name when several runs share the figure */
    /* Training loss at each step; NaN/inf values are skipped (the line
     * breaks there). n may be 0 when there are validation points. */
    const double *step, *loss;
    size_t n;
    /* Validation loss; n_val = 0 when there is none. */
    const double *val_step, *val_loss;
    size_t n_val;
    /* The training loss includes label smoothing (the log says so); the
     * validation loss never does, and the figure then notes it. */
    bool label_smoothing;
} plot_loss_run;

enum { PLOT_MAX_RUNS = 6 };

/* One run, or up to PLOT_MAX_RUNS on the same axes to compare them (each in
 * its own colour, named by its label). */
typedef struct {
    const plot_loss_run *runs;
    size_t n_runs;
    const char *title; /* NULL: "Loss" */
    bool log_y;        /* logarithmic loss axis (non-positive values skipped) */
    int width, height; /* pixels; 0: 960 x 560 */
} plot_loss_spec;

clformer_status plot_loss_curves(const char *png_path, const plot_loss_spec *spec);

/* The note plot_loss_curves writes under the step axis when the two curves
 * measure different things (a run's training loss includes label smoothing
 * and it has validation points): its lines, 0 (no note), 1, or 2 where one
 * would be wider than the figure; each line's width in pixels and the widest
 * the figure allows (for tests: the note is never cut). */
enum { PLOT_NOTE_BYTES = 128 };
int plot_loss_note(const plot_loss_spec *spec, char lines[2][PLOT_NOTE_BYTES], double widths[2],
                   double *max_w);

typedef enum {
    PLOT_ATTENTION_PANELS, /* one panel per head */
    PLOT_ATTENTION_MEAN    /* one panel: the mean over heads */
} plot_attention_mode;

typedef struct {
    /* heads x rows x cols, row-major: weights[(h * rows + r) * cols + c] is
     * how much target position r attends to source position c in head h.
     * NaN cells are drawn grey and left out of the colour scale. */
    const float *weights;
    int heads, rows, cols;
    /* Labels: cols source tokens, rows target tokens (UTF-8, any length;
     * long ones are shortened with an ellipsis). NULL: positions 0, 1, ... */
    const char *const *src_tokens;
    const char *const *tgt_tokens;
    plot_attention_mode mode;
    const char *title; /* NULL: no title */
} plot_attention_spec;

clformer_status plot_attention(const char *png_path, const plot_attention_spec *spec);

/* Where plot_attention draws things: the image size and, for panel p (a
 * head, or 0 in MEAN mode), the centre of cell (row, col) in pixels. */
clformer_status plot_attention_geometry(const plot_attention_spec *spec, int panel, int row,
                                        int col, int *width, int *height, double *x, double *y);

#endif
