/*
 * Attention heatmaps (plot_attention, plot.h): one panel per head or the mean
 * over heads, source tokens across and target tokens down; token labels are
 * shortened or thinned out when cells are smaller than a line of text.
 */
#include "plot.h"
#include "cli.h"
#include "plot_draw.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rgb MISSING = {0.82, 0.82, 0.82}; /* NaN heatmap cells */

/* A perceptually uniform dark-to-light map (viridis), sampled at 10 even
 * stops and interpolated linearly. Readable in greyscale and by most
 * colour-blind readers, unlike a rainbow map. */
static const rgb COLORMAP[] = {
    {0x44 / 255., 0x01 / 255., 0x54 / 255.}, {0x48 / 255., 0x28 / 255., 0x78 / 255.},
    {0x3e / 255., 0x49 / 255., 0x89 / 255.}, {0x31 / 255., 0x68 / 255., 0x8e / 255.},
    {0x26 / 255., 0x82 / 255., 0x8e / 255.}, {0x1f / 255., 0x9e / 255., 0x89 / 255.},
    {0x35 / 255., 0xb7 / 255., 0x79 / 255.}, {0x6e / 255., 0xce / 255., 0x58 / 255.},
    {0xb5 / 255., 0xde / 255., 0x2b / 255.}, {0xfd / 255., 0xe7 / 255., 0x25 / 255.},
};
enum { N_COLORMAP = sizeof COLORMAP / sizeof COLORMAP[0] };

static rgb colormap(double t)
{
    if (!(t > 0)) t = 0; /* also NaN */
    if (t > 1) t = 1;
    double f = t * (N_COLORMAP - 1);
    int i = (int)f;
    if (i >= N_COLORMAP - 1) return COLORMAP[N_COLORMAP - 1];
    double u = f - i;
    const rgb *a = &COLORMAP[i], *b = &COLORMAP[i + 1];
    return (rgb){a->r + u * (b->r - a->r), a->g + u * (b->g - a->g), a->b + u * (b->b - a->b)};
}

/* ------------------------------------------------------------------------- */
/* Attention heatmaps                                                         */
/* ------------------------------------------------------------------------- */

#define MAX_TOKEN_PX 150.0 /* longer token labels get an ellipsis */
#define TOKEN_PITCH 13.0   /* the smallest cell that holds a label */
#define PANEL_GAP 18.0

typedef struct {
    int panels, grid_cols, grid_rows;
    double cw, ch;          /* cell width and height in pixels */
    int stride_r, stride_c; /* label every stride-th row / column */
    double pw, ph;          /* one panel's matrix size */
    double x0, y0;          /* top-left of panel 0's matrix */
    double step_x, step_y;  /* from one panel's matrix to the next */
    double panel_title_h;
    double row_label_w, col_label_h;
    double cb_x, cb_y, cb_h; /* colour bar */
    double vmin, vmax;
    axis cb_axis;
    double title_h;
    int width, height;
} attn_layout;

static void token_label(cairo_t *cr, const char *const *tokens, int i, char out[LABEL_BYTES + 8])
{
    if (tokens && tokens[i])
        plot_utf8_clean(tokens[i], out);
    else if (tokens)
        out[0] = '\0';
    else
        snprintf(out, LABEL_BYTES, "%d", i);
    plot_fit_width(cr, out, MAX_TOKEN_PX);
}

static double widest_label(cairo_t *cr, const char *const *tokens, int n, int stride)
{
    char buf[LABEL_BYTES + 8];
    double w = 0;
    for (int i = 0; i < n; i += stride) {
        token_label(cr, tokens, i, buf);
        w = fmax(w, plot_text_width(cr, buf));
    }
    return w;
}

/* Labels every 1, 2, 5, 10, 20 ... positions: the smallest such stride
 * that is at least `min`. */
static int nice_stride(double min)
{
    for (int stride = 1;; stride *= 10) {
        if (stride >= min) return stride;
        if (2 * stride >= min) return 2 * stride;
        if (5 * stride >= min) return 5 * stride;
    }
}

static float panel_value(const plot_attention_spec *s, int panel, int r, int c)
{
    size_t plane = (size_t)s->rows * s->cols, at = (size_t)r * s->cols + c;
    if (s->mode == PLOT_ATTENTION_PANELS) return s->weights[panel * plane + at];
    /* the mean over heads of the finite values */
    double sum = 0;
    int n = 0;
    for (int h = 0; h < s->heads; h++) {
        float v = s->weights[h * plane + at];
        if (isfinite(v)) sum += v, n++;
    }
    return n ? (float)(sum / n) : NAN;
}

static clformer_status check_attention_spec(const plot_attention_spec *s)
{
    if (!s || !s->weights)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention needs a spec with weights");
    if (s->heads < 1 || s->rows < 1 || s->cols < 1)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_attention: heads, rows and cols must be positive, got %d x %d x %d",
                         s->heads, s->rows, s->cols);
    if (s->rows > 4096 || s->cols > 4096 || s->heads > 256)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_attention: %d heads of %d x %d is too large to draw (at most 256 "
                         "heads of 4096 x 4096); pass a slice",
                         s->heads, s->rows, s->cols);
    if (s->mode != PLOT_ATTENTION_PANELS && s->mode != PLOT_ATTENTION_MEAN)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention: unknown mode %d",
                         (int)s->mode);
    return CLFORMER_OK;
}

/* Sizes everything from the matrix shape and the measured labels. */
static void layout_attention(cairo_t *cr, const plot_attention_spec *s, attn_layout *L)
{
    memset(L, 0, sizeof *L);
    int P = L->panels = s->mode == PLOT_ATTENTION_MEAN ? 1 : s->heads;
    /* a near-square grid with the fewest empty slots: 8 heads -> 4 x 2 */
    int gc = (int)ceil(sqrt(P));
    int empty = gc * ((P + gc - 1) / gc) - P, empty_wider = (gc + 1) * ((P + gc) / (gc + 1)) - P;
    if (empty_wider < empty) gc++;
    L->grid_cols = gc;
    L->grid_rows = (P + gc - 1) / gc;

    int longest = s->rows > s->cols ? s->rows : s->cols;
    double target = P == 1 ? 560 : fmax(160, 1100.0 / gc);
    double cell = target / longest;
    if (cell >= 8) { /* whole-pixel squares */
        cell = fmin(floor(cell), P == 1 ? 40 : 28);
        L->pw = s->cols * cell, L->ph = s->rows * cell;
    } else { /* dense maps: whole-pixel panels, cells a little uneven */
        L->pw = fmax(1, floor(s->cols * cell)), L->ph = fmax(1, floor(s->rows * cell));
    }
    L->cw = L->pw / s->cols, L->ch = L->ph / s->rows;
    L->stride_r = nice_stride(TOKEN_PITCH / L->ch);
    L->stride_c = nice_stride(TOKEN_PITCH / L->cw);

    plot_set_font(cr, TOKEN_PT, false);
    L->row_label_w = widest_label(cr, s->tgt_tokens, s->rows, L->stride_r);
    L->col_label_h = widest_label(cr, s->src_tokens, s->cols, L->stride_c);
    plot_set_font(cr, LABEL_PT, false);
    double name_h = plot_text_height(cr);
    plot_set_font(cr, TOKEN_PT, true);
    char widest[64];
    snprintf(widest, sizeof widest, s->mode == PLOT_ATTENTION_MEAN ? "mean of %d heads" : "head %d",
             s->heads - (s->mode == PLOT_ATTENTION_PANELS));
    double panel_title_w = plot_text_width(cr, widest);
    L->panel_title_h = s->mode == PLOT_ATTENTION_MEAN || P > 1 ? plot_text_height(cr) + 6 : 0;
    plot_set_font(cr, TITLE_PT, true);
    L->title_h = s->title ? plot_text_height(cr) + 14 : 0;

    double gap_x = fmax(PANEL_GAP, panel_title_w + 10 - L->pw);
    L->step_x = L->pw + gap_x;
    L->step_y = L->ph + PANEL_GAP + L->panel_title_h;
    L->x0 = round(MARGIN + name_h + 8 + L->row_label_w + 6);
    L->y0 = round(MARGIN + L->title_h + L->panel_title_h);
    double grid_w = (gc - 1) * L->step_x + L->pw;
    double grid_h = (L->grid_rows - 1) * L->step_y + L->ph;

    /* colour scale over every panel, so that panels compare */
    L->vmin = 0, L->vmax = -INFINITY;
    for (int p = 0; p < P; p++)
        for (int r = 0; r < s->rows; r++)
            for (int c = 0; c < s->cols; c++) {
                float v = panel_value(s, p, r, c);
                if (isfinite(v)) L->vmin = fmin(L->vmin, v), L->vmax = fmax(L->vmax, v);
            }
    if (!(L->vmax > L->vmin)) L->vmax = L->vmin + 1;
    L->cb_x = round(L->x0 + grid_w + 24);
    L->cb_y = L->y0;
    L->cb_h = fmax(grid_h, 120);
    axis *a = &L->cb_axis;
    a->lo = L->vmin, a->hi = L->vmax, a->px0 = L->cb_y + L->cb_h, a->px1 = L->cb_y;
    plot_set_font(cr, TICK_PT, false);
    plot_choose_ticks(cr, a, false, 40, 0);
    double tick_w = 0;
    for (int i = 0; i < a->n; i++) tick_w = fmax(tick_w, plot_text_width(cr, a->label[i]));

    double w = L->cb_x + 14 + 8 + tick_w + 10 + name_h + MARGIN;
    double h = fmax(L->y0 + grid_h + 6 + L->col_label_h + 8 + name_h,
                    L->cb_y + L->cb_h + plot_text_height(cr) / 2) +
        MARGIN;
    if (s->title) {
        char t[LABEL_BYTES + 8];
        plot_utf8_clean(s->title, t);
        plot_set_font(cr, TITLE_PT, true);
        w = fmax(w, fmin(plot_text_width(cr, t), 1200) + 2 * MARGIN);
    }
    L->width = (int)ceil(w);
    L->height = (int)ceil(h);
}

static void panel_origin(const attn_layout *L, int p, double *x, double *y)
{
    *x = L->x0 + (p % L->grid_cols) * L->step_x;
    *y = L->y0 + (p / L->grid_cols) * L->step_y;
}

/* Paints one panel's cells through a one-pixel-per-cell image, scaled up
 * without smoothing so that cells stay sharp rectangles. */
static void draw_cells(cairo_t *cr, const plot_attention_spec *s, const attn_layout *L, int p)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, s->cols, s->rows);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(img);
        return; /* the canvas will report no memory too */
    }
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (int r = 0; r < s->rows; r++) {
        uint32_t *row = (uint32_t *)(data + (size_t)r * stride);
        for (int c = 0; c < s->cols; c++) {
            float v = panel_value(s, p, r, c);
            rgb k = isfinite(v) ? colormap((v - L->vmin) / (L->vmax - L->vmin)) : MISSING;
            row[c] = (uint32_t)lround(k.r * 255) << 16 | (uint32_t)lround(k.g * 255) << 8 |
                (uint32_t)lround(k.b * 255);
        }
    }
    cairo_surface_mark_dirty(img);
    double x, y;
    panel_origin(L, p, &x, &y);
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_scale(cr, L->cw, L->ch);
    cairo_set_source_surface(cr, img, 0, 0);
    /* shrinking (cells under a pixel) averages instead of dropping cells */
    cairo_pattern_set_filter(cairo_get_source(cr),
                             L->cw >= 1 && L->ch >= 1 ? CAIRO_FILTER_NEAREST : CAIRO_FILTER_GOOD);
    cairo_rectangle(cr, 0, 0, s->cols, s->rows);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    plot_set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x - 0.5, y - 0.5, L->pw + 1, L->ph + 1);
    cairo_stroke(cr);
}

static void draw_labels(cairo_t *cr, const plot_attention_spec *s, const attn_layout *L, int p)
{
    double x, y;
    panel_origin(L, p, &x, &y);
    char buf[LABEL_BYTES + 8];
    plot_set_rgb(cr, INK, 1);
    if (L->panel_title_h > 0) {
        plot_set_font(cr, TOKEN_PT, true);
        if (s->mode == PLOT_ATTENTION_MEAN)
            snprintf(buf, sizeof buf, "mean of %d heads", s->heads);
        else
            snprintf(buf, sizeof buf, "head %d", p);
        plot_text_at(cr, x + L->pw / 2, y - L->panel_title_h / 2 - 2, buf, 0.5);
    }
    plot_set_font(cr, TOKEN_PT, false);
    if (p % L->grid_cols == 0) /* target tokens left of the first column of panels */
        for (int r = 0; r < s->rows; r += L->stride_r) {
            token_label(cr, s->tgt_tokens, r, buf);
            plot_text_at(cr, x - 6, y + (r + 0.5) * L->ch, buf, 1);
        }
    if (p + L->grid_cols >= L->panels) /* source tokens under panels with none below */
        for (int c = 0; c < s->cols; c += L->stride_c) {
            token_label(cr, s->src_tokens, c, buf);
            plot_text_turned(cr, x + (c + 0.5) * L->cw, y + L->ph + 6, -PI / 2, buf, 1);
        }
}

static void draw_colour_bar(cairo_t *cr, const attn_layout *L)
{
    cairo_pattern_t *g = cairo_pattern_create_linear(0, L->cb_y + L->cb_h, 0, L->cb_y);
    for (int i = 0; i < N_COLORMAP; i++)
        cairo_pattern_add_color_stop_rgb(g, (double)i / (N_COLORMAP - 1), COLORMAP[i].r,
                                         COLORMAP[i].g, COLORMAP[i].b);
    cairo_rectangle(cr, L->cb_x, L->cb_y, 14, L->cb_h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
    plot_set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, L->cb_x - 0.5, L->cb_y - 0.5, 15, L->cb_h + 1);
    const axis *a = &L->cb_axis;
    for (int i = 0; i < a->n; i++) {
        double py = round(plot_axis_px(a, a->at[i])) + 0.5;
        cairo_move_to(cr, L->cb_x + 14, py);
        cairo_line_to(cr, L->cb_x + 18, py);
    }
    cairo_stroke(cr);
    plot_set_font(cr, TICK_PT, false);
    double tick_w = 0;
    for (int i = 0; i < a->n; i++) {
        plot_text_at(cr, L->cb_x + 21, round(plot_axis_px(a, a->at[i])) + 0.5, a->label[i], 0);
        tick_w = fmax(tick_w, plot_text_width(cr, a->label[i]));
    }
    cairo_new_path(cr);
    plot_set_rgb(cr, INK, 1);
    plot_set_font(cr, LABEL_PT, false);
    plot_text_turned(cr, L->cb_x + 21 + tick_w + 8 + plot_text_height(cr) / 2,
                     L->cb_y + L->cb_h / 2, -PI / 2, "weight", 0.5);
}

static clformer_status measure_attention(const plot_attention_spec *s, attn_layout *L)
{
    cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(scratch);
    cairo_surface_destroy(scratch);
    layout_attention(cr, s, L);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st != CAIRO_STATUS_SUCCESS)
        return plot_cairo_failure(st, "attention layout", "(measuring)");
    if (L->width > 16384 || L->height > 16384)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_attention: %d heads of %d x %d need a %d x %d image, over 16384 "
                         "pixels; plot the mean or fewer heads",
                         s->heads, s->rows, s->cols, L->width, L->height);
    return CLFORMER_OK;
}

clformer_status plot_attention_geometry(const plot_attention_spec *s, int panel, int row, int col,
                                        int *width, int *height, double *x, double *y)
{
    CLI_TRY(check_attention_spec(s));
    attn_layout L;
    CLI_TRY(measure_attention(s, &L));
    if (panel < 0 || panel >= L.panels || row < 0 || row >= s->rows || col < 0 || col >= s->cols)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_attention_geometry: cell (%d, %d, %d) is outside %d panels of "
                         "%d x %d",
                         panel, row, col, L.panels, s->rows, s->cols);
    double px, py;
    panel_origin(&L, panel, &px, &py);
    *width = L.width, *height = L.height;
    *x = px + (col + 0.5) * L.cw;
    *y = py + (row + 0.5) * L.ch;
    return CLFORMER_OK;
}

clformer_status plot_attention(const char *png_path, const plot_attention_spec *s)
{
    if (!png_path || !*png_path)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention needs an output path");
    CLI_TRY(check_attention_spec(s));
    attn_layout L;
    CLI_TRY(measure_attention(s, &L));
    cairo_t *cr;
    CLI_TRY(plot_new_canvas(L.width, L.height, "attention map", png_path, &cr));
    for (int p = 0; p < L.panels; p++) {
        draw_cells(cr, s, &L, p);
        draw_labels(cr, s, &L, p);
    }
    draw_colour_bar(cr, &L);

    /* axis names and title */
    plot_set_rgb(cr, INK, 1);
    plot_set_font(cr, LABEL_PT, false);
    double name_h = plot_text_height(cr);
    double grid_w = (L.grid_cols - 1) * L.step_x + L.pw;
    double grid_h = (L.grid_rows - 1) * L.step_y + L.ph;
    plot_text_at(cr, L.x0 + grid_w / 2, L.y0 + grid_h + 6 + L.col_label_h + 8 + name_h / 2,
                 s->src_tokens ? "source" : "source position", 0.5);
    plot_text_turned(cr, MARGIN + name_h / 2, L.y0 + grid_h / 2, -PI / 2,
                     s->tgt_tokens ? "target" : "target position", 0.5);
    if (s->title) {
        char t[LABEL_BYTES + 8];
        plot_utf8_clean(s->title, t);
        plot_set_font(cr, TITLE_PT, true);
        plot_fit_width(cr, t, L.width - 2 * MARGIN);
        plot_text_at(cr, L.width / 2.0, MARGIN + (L.title_h - 14) / 2, t, 0.5);
    }
    clformer_status st = plot_save_png(cr, "attention map", png_path);
    cairo_destroy(cr);
    return st;
}
