/* Scatter plots of clustered points: a raster drawn in memory and written as a PNG (png.c), or an SVG
 * written as text. */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"
#include "png.h"
#include "points_io.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_SIZE 800
#define PLOT_MARGIN 40
#define PLOT_PAD 14 /* keeps dots and centre markers clear of the axes box */
#define SVG_MAX_POINTS 20000
#define CENTER_RADIUS 8

typedef struct {
    unsigned char r, g, b;
} rgb;

/* tab10 without its grey (grey means noise here), then six more that stay apart from it. */
static const rgb palette[] = {
    {31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189}, {140, 86, 75},
    {227, 119, 194}, {188, 189, 34}, {23, 190, 207}, {57, 59, 121},  {231, 186, 82},  {99, 121, 57},
    {173, 73, 74},  {107, 110, 207}, {140, 109, 49}, {123, 65, 115}};
#define PALETTE_SIZE (sizeof palette / sizeof palette[0])
static const rgb noise_colour = {175, 175, 175};
static const rgb white = {255, 255, 255};
static const rgb black = {0, 0, 0};
static const rgb axes_colour = {64, 64, 64};

/* -1 for noise, else an index into the palette. */
static int colour_index(const int32_t *labels, size_t i)
{
    if (!labels)
        return 0;
    return labels[i] < 0 ? -1 : (int)(labels[i] % (int32_t)PALETTE_SIZE);
}

static rgb colour_of(int index) { return index < 0 ? noise_colour : palette[index]; }

/* ---------------------------------------------------------------- data to pixels */

typedef struct {
    double minx, miny, scale, offx, offy;
} view;

static int get_xy(const float *row, size_t dim, double *x, double *y)
{
    *x = row[0];
    *y = dim > 1 ? row[1] : 0.0;
    return isfinite(*x) && isfinite(*y);
}

static void extend_box(const float *rows, size_t count, size_t dim, double box[4], int *any)
{
    for (size_t i = 0; i < count; i++) {
        double x, y;
        if (!get_xy(rows + i * dim, dim, &x, &y))
            continue;
        if (!*any || x < box[0]) box[0] = x;
        if (!*any || y < box[1]) box[1] = y;
        if (!*any || x > box[2]) box[2] = x;
        if (!*any || y > box[3]) box[3] = y;
        *any = 1;
    }
}

/* One scale for both axes keeps the clusters' shapes; a zero range (one point, all points equal,
 * dim 1) gets a unit range so that the data sit in the middle. */
static view make_view(const float *points, size_t n, const float *centers, size_t k, size_t dim)
{
    double box[4] = {0, 0, 0, 0};
    int any = 0;
    extend_box(points, n, dim, box, &any);
    extend_box(centers, k, dim, box, &any);
    double rx = box[2] - box[0], ry = box[3] - box[1];
    double range = rx > ry ? rx : ry;
    if (!(range > 0) || !isfinite(range))
        range = 1;
    double inner = PLOT_SIZE - 2.0 * (PLOT_MARGIN + PLOT_PAD);
    view v;
    v.minx = box[0];
    v.miny = box[1];
    v.scale = inner / range;
    v.offx = PLOT_MARGIN + PLOT_PAD + (inner - rx * v.scale) / 2;
    v.offy = PLOT_MARGIN + PLOT_PAD + (inner - ry * v.scale) / 2;
    return v;
}

/* Pixel coordinates, y growing downwards as images do. */
static void to_pixel(const view *v, double x, double y, double *px, double *py)
{
    *px = v->offx + (x - v->minx) * v->scale;
    *py = (PLOT_SIZE - 1) - (v->offy + (y - v->miny) * v->scale);
}

/* ---------------------------------------------------------------- raster */

typedef struct {
    unsigned char *px; /* PLOT_SIZE x PLOT_SIZE x 3 */
} canvas;

static void set_pixel(canvas *c, long x, long y, rgb col)
{
    if (x < 0 || y < 0 || x >= PLOT_SIZE || y >= PLOT_SIZE)
        return;
    unsigned char *p = c->px + ((size_t)y * PLOT_SIZE + (size_t)x) * 3;
    p[0] = col.r;
    p[1] = col.g;
    p[2] = col.b;
}

/* Clamped before the cast: converting an out-of-range double to long is undefined. */
static long to_long(double v)
{
    if (v < -1e6)
        return -1000000;
    if (v > 1e6)
        return 1000000;
    return (long)floor(v + 0.5);
}

static void draw_dot(canvas *c, double px, double py, int size, rgb col)
{
    long x0 = to_long(px) - size / 2, y0 = to_long(py) - size / 2;
    for (long y = y0; y < y0 + size; y++)
        for (long x = x0; x < x0 + size; x++)
            set_pixel(c, x, y, col);
}

/* A black ring around a white ring around the cluster's colour: visible over its own cluster's
 * dots as well as over white. (r^2 + r: a rounder disc than r^2 at these small radii.) */
static void draw_center(canvas *c, double px, double py, rgb fill)
{
    long cx = to_long(px), cy = to_long(py);
    const long r = CENTER_RADIUS, w = r - 2, f = r - 4;
    for (long dy = -r; dy <= r; dy++)
        for (long dx = -r; dx <= r; dx++) {
            long d2 = dx * dx + dy * dy;
            if (d2 <= r * r + r)
                set_pixel(c, cx + dx, cy + dy, d2 <= f * f + f ? fill : d2 <= w * w + w ? white : black);
        }
}

static void draw_box(canvas *c)
{
    const long lo = PLOT_MARGIN, hi = PLOT_SIZE - 1 - PLOT_MARGIN;
    for (long t = lo; t <= hi; t++) {
        set_pixel(c, t, lo, axes_colour);
        set_pixel(c, t, hi, axes_colour);
        set_pixel(c, lo, t, axes_colour);
        set_pixel(c, hi, t, axes_colour);
    }
}

/* Noise first, so that clusters are drawn over it; centres last. */
static void render(canvas *c, const float *points, size_t n, size_t dim, const int32_t *labels,
                   const float *centers, size_t k)
{
    view v = make_view(points, n, centers, k, dim);
    int size = n > 100000 ? 2 : 3;
    for (size_t i = 0; i < (size_t)PLOT_SIZE * PLOT_SIZE; i++)
        memcpy(c->px + 3 * i, &white, 3);
    draw_box(c);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            double x, y, px, py;
            int ci = colour_index(labels, i);
            if ((ci < 0) != (pass == 0) || !get_xy(points + i * dim, dim, &x, &y))
                continue;
            to_pixel(&v, x, y, &px, &py);
            draw_dot(c, px, py, size, colour_of(ci));
        }
    for (size_t j = 0; j < k; j++) {
        double x, y, px, py;
        if (!get_xy(centers + j * dim, dim, &x, &y))
            continue;
        to_pixel(&v, x, y, &px, &py);
        draw_center(c, px, py, palette[j % PALETTE_SIZE]);
    }
}

/* ---------------------------------------------------------------- PNG */

/* The encoder's own message (with the errno of the first failed write) is the one the user gets. */
static int write_png(FILE *fp, const char *path, const canvas *c, const char *title, char *err, size_t errsize)
{
    pcli_png *png;
    if (pcli_png_begin(&png, fp, path, PLOT_SIZE, PLOT_SIZE, title, err, errsize))
        return -1;
    for (size_t y = 0; y < PLOT_SIZE; y++)
        pcli_png_row(png, c->px + y * 3 * PLOT_SIZE);
    return pcli_png_close(png, err, errsize);
}

/* ---------------------------------------------------------------- SVG */

static int svg_escaped(FILE *fp, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int rc;
        switch (ch) {
        case '&': rc = fputs("&amp;", fp); break;
        case '<': rc = fputs("&lt;", fp); break;
        case '>': rc = fputs("&gt;", fp); break;
        case '"': rc = fputs("&quot;", fp); break;
        default: rc = fputc(ch < 32 ? '?' : ch, fp); break; /* control bytes are not XML */
        }
        if (rc == EOF)
            return -1;
    }
    return 0;
}

static int svg_header(FILE *fp, size_t n, size_t drawn, size_t k, const char *title)
{
    if (fprintf(fp,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\">\n",
                PLOT_SIZE, PLOT_SIZE, PLOT_SIZE, PLOT_SIZE) < 0)
        return -1;
    if (fprintf(fp, "<!-- parclust: %zu points, %zu centres", n, k) < 0)
        return -1;
    if (drawn < n &&
        fprintf(fp, "; only %zu of %zu points drawn, an evenly strided subsample", drawn, n) < 0)
        return -1;
    if (fputs(" -->\n<style>.n{fill:#afafaf}", fp) == EOF)
        return -1;
    for (size_t i = 0; i < PALETTE_SIZE; i++)
        if (fprintf(fp, ".c%zu{fill:#%02x%02x%02x}", i, palette[i].r, palette[i].g, palette[i].b) < 0)
            return -1;
    if (fprintf(fp,
                ".w{fill:#fff}.k{stroke:#000;stroke-width:2}</style>\n"
                "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#404040\"/>\n",
                PLOT_SIZE, PLOT_SIZE, PLOT_MARGIN, PLOT_MARGIN, PLOT_SIZE - 2 * PLOT_MARGIN,
                PLOT_SIZE - 2 * PLOT_MARGIN) < 0)
        return -1;
    if (!title || !*title)
        return 0;
    if (fprintf(fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-family=\"sans-serif\" "
                    "font-size=\"16\">", PLOT_SIZE / 2, PLOT_MARGIN - 12) < 0 ||
        svg_escaped(fp, title) || fputs("</text>\n", fp) == EOF)
        return -1;
    return 0;
}

/* ci: a palette index, -1 noise grey, -2 white (the ring of a centre marker). */
static int svg_circle(FILE *fp, const view *v, const float *row, size_t dim, int ci, double r,
                      const char *extra)
{
    double x, y, px, py;
    if (!get_xy(row, dim, &x, &y))
        return 0;
    to_pixel(v, x, y, &px, &py);
    if (ci < 0)
        return fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%g\" class=\"%s%s\"/>\n", px, py, r,
                       ci == -1 ? "n" : "w", extra) < 0 ? -1 : 0;
    return fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%g\" class=\"c%d%s\"/>\n", px, py, r, ci,
                   extra) < 0 ? -1 : 0;
}

/* At most SVG_MAX_POINTS points, picked as floor(j * n / drawn): the same every run, spread over
 * the whole input. Noise first, as in the PNG. */
static int write_svg(FILE *fp, const float *points, size_t n, size_t dim, const int32_t *labels,
                     const float *centers, size_t k, const char *title)
{
    view v = make_view(points, n, centers, k, dim);
    size_t drawn = n > SVG_MAX_POINTS ? SVG_MAX_POINTS : n;
    if (svg_header(fp, n, drawn, k, title) || fputs("<g>\n", fp) == EOF)
        return -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < drawn; j++) {
            size_t i = drawn == n ? j : (size_t)((double)j * (double)n / (double)drawn);
            int ci = colour_index(labels, i);
            if ((ci < 0) != (pass == 0))
                continue;
            if (svg_circle(fp, &v, points + i * dim, dim, ci, 2, ""))
                return -1;
        }
    if (fputs("</g>\n", fp) == EOF)
        return -1;
    for (size_t j = 0; j < k; j++)
        if (svg_circle(fp, &v, centers + j * dim, dim, -2, CENTER_RADIUS - 1, " k") ||
            svg_circle(fp, &v, centers + j * dim, dim, (int)(j % PALETTE_SIZE), CENTER_RADIUS - 4, ""))
            return -1;
    return fputs("</svg>\n", fp) == EOF ? -1 : 0;
}

/* ---------------------------------------------------------------- entry point */

static int check_args(const char *path, const float *points, size_t n, size_t dim,
                      const float *centers, size_t k, char *err, size_t errsize)
{
    if (!path || !*path)
        return pcli_fail(err, errsize, "empty plot file name");
    if (!pcli_has_extension(path, ".png") && !pcli_has_extension(path, ".svg"))
        return pcli_fail(err, errsize, "%s: unknown plot format (use a .png or .svg file name)", path);
    if ((n || k) && dim == 0)
        return pcli_fail(err, errsize, "%s: points have no dimensions to plot", path);
    if ((n && !points) || (k && !centers))
        return pcli_fail(err, errsize, "%s: no data to plot", path);
    return 0;
}

int pcli_plot(const char *path, const float *points, size_t n, size_t dim, const int32_t *labels,
              const float *centers, size_t k, const char *title, char *err, size_t errsize)
{
    pcli_outfile f;
    canvas c = {NULL};
    int rc;
    if (check_args(path, points, n, dim, centers, k, err, errsize))
        return -1;
    if (dim == 0)
        dim = 1; /* nothing is read through it, but the row arithmetic stays simple */
    if (pcli_has_extension(path, ".png")) {
        c.px = malloc((size_t)PLOT_SIZE * PLOT_SIZE * 3);
        if (!c.px)
            return pcli_fail(err, errsize, "%s: out of memory for the image", path);
        render(&c, points, n, dim, labels, centers, k);
    }
    if (pcli_outfile_open(&f, path, err, errsize)) {
        free(c.px);
        return -1;
    }
    if (c.px) {
        rc = write_png(f.fp, path, &c, title, err, errsize);
        free(c.px);
        if (rc) {
            pcli_outfile_discard(&f);
            return -1;
        }
    } else {
        errno = 0;
        if (write_svg(f.fp, points, n, dim, labels, centers, k, title)) {
            /* A failed fprintf sets errno (ENOSPC, EIO, ...); what is still buffered is tried once
             * more in case it did not. Never "out of memory": nothing is allocated here. */
            int e = errno;
            if (!e && fflush(f.fp) != 0)
                e = errno;
            pcli_outfile_discard(&f);
            return pcli_fail(err, errsize, "%s: write failed: %s", path, e ? strerror(e) : "I/O error");
        }
    }
    return pcli_outfile_commit(&f, err, errsize);
}

double pcli_plot_min_bytes(const char *path, size_t n)
{
    if (pcli_has_extension(path, ".png")) /* stored deflate: every row's bytes as they are */
        return (double)(1 + 3 * PLOT_SIZE) * PLOT_SIZE;
    size_t drawn = n > SVG_MAX_POINTS ? SVG_MAX_POINTS : n;
    return 44.0 * (double)drawn; /* a dot is at least <circle cx="0.0" cy="0.0" r="2" class="n"/> */
}
