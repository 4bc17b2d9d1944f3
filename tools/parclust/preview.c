/* Preview PNGs of segmentations, streamed row by row: the picture of a 100-megapixel image is never
 * held, and neither is a full-size label image (compact labels are walked with the validity bits). */
#define _POSIX_C_SOURCE 200809L

#include "preview.h"
#include "png.h"
#include "points_io.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct colours for --palette (the same as the scatter plots' first ten, then hues). */
static void palette_colour(size_t c, uint8_t rgb[3])
{
    static const uint8_t base[10][3] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
                                        {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                        {188, 189, 34},  {23, 190, 207}};
    if (c < 10) {
        memcpy(rgb, base[c], 3);
        return;
    }
    double h = fmod((double)c * 0.618033988749895, 1.0) * 6, f = h - floor(h);
    double v[6][3] = {{1, f, 0}, {1 - f, 1, 0}, {0, 1, f}, {0, 1 - f, 1}, {f, 0, 1}, {1, 0, 1 - f}};
    for (int j = 0; j < 3; j++)
        rgb[j] = (uint8_t)(40 + 200 * v[(int)h % 6][j]);
}

static uint8_t stretch(double v, double lo, double hi)
{
    double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return (uint8_t)(t <= 0 ? 0 : t >= 1 ? 255 : lrint(255 * t));
}

/* Valid pixels in [from, to): how far compact labels advance over rows the subsampling skips. */
static size_t count_valid(const pcli_image *im, size_t from, size_t to)
{
    size_t count = 0;
    for (; from < to && (from & 7); from++)
        count += pcli_image_is_valid(im, from);
    for (; from + 8 <= to; from += 8)
        count += (size_t)__builtin_popcount(im->valid[from >> 3]);
    for (; from < to; from++)
        count += pcli_image_is_valid(im, from);
    return count;
}

double pcli_preview_size(size_t W, size_t H, size_t max_side, size_t *pw, size_t *ph)
{
    size_t side = W > H ? W : H;
    double scale = max_side && side > max_side ? (double)side / (double)max_side : 1;
    *pw = (size_t)((double)W / scale), *ph = (size_t)((double)H / scale);
    *pw = *pw ? *pw : 1, *ph = *ph ? *ph : 1;
    return scale;
}

double pcli_preview_min_bytes(size_t width, size_t height, size_t max_side)
{
    size_t pw, ph;
    pcli_preview_size(width, height, max_side, &pw, &ph);
    return (double)(1 + 3 * pw) * (double)ph; /* stored deflate: every row's bytes as they are */
}

int pcli_preview_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                       const float *centers, size_t k, int palette, size_t max_side, char *err, size_t errsize)
{
    size_t W = im->width, H = im->height, pw, ph;
    double scale = pcli_preview_size(W, H, max_side, &pw, &ph);
    uint8_t *colours = malloc((k + 1) * 3), *row = malloc(pw * 3);
    int32_t *labrow = malloc(W * sizeof *labrow);
    pcli_png *png = NULL;
    int rc = -1;
    if (!colours || !row || !labrow) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    size_t B = im->bands;
    for (size_t c = 0; c < k; c++) {
        if (palette) {
            palette_colour(c, colours + 3 * c);
            continue;
        }
        for (size_t j = 0; j < 3; j++) {
            size_t b = B >= 3 ? j : 0;
            colours[3 * c + j] = stretch(centers[c * B + b], im->lo[b], im->hi[b]);
        }
    }
    if (pcli_png_open(&png, path, pw, ph, err, errsize))
        goto done;
    size_t cursor = 0, next_row = 0;
    for (size_t py = 0; py < ph; py++) {
        size_t y = (size_t)(((double)py + 0.5) * scale);
        y = y < H ? y : H - 1;
        if (compact) /* the rows skipped still hold compact labels: step over them */
            cursor += count_valid(im, next_row * W, y * W);
        next_row = y + 1;
        pcli_image_expand_row(im, y, labels, compact, &cursor, labrow);
        for (size_t px = 0; px < pw; px++) {
            size_t x = (size_t)(((double)px + 0.5) * scale);
            int32_t l = labrow[x < W ? x : W - 1];
            if (l >= 0 && (size_t)l < k)
                memcpy(row + 3 * px, colours + 3 * (size_t)l, 3);
            else
                memset(row + 3 * px, 0, 3);
        }
        if (pcli_png_row(png, row))
            break;
    }
    rc = pcli_png_close(png, err, errsize);
done:
    free(colours);
    free(row);
    free(labrow);
    return rc;
}

int pcli_picture_init(pcli_picture *p, size_t width, size_t height, size_t max_side, char *err, size_t errsize)
{
    memset(p, 0, sizeof *p);
    p->width = width;
    p->height = height;
    p->scale = pcli_preview_size(width, height, max_side, &p->pw, &p->ph);
    if (!(p->labels = malloc(p->pw * p->ph * sizeof *p->labels)))
        return pcli_fail(err, errsize, "out of memory for the preview's %zu x %zu labels", p->pw, p->ph);
    for (size_t i = 0; i < p->pw * p->ph; i++)
        p->labels[i] = -1;
    return 0;
}

void pcli_picture_sample(pcli_picture *p, size_t y0, size_t rows, const void *labels, pcli_label_type type)
{
    size_t es = pcli_label_type_size(type), W = p->width;
    int32_t nodata = (int32_t)pcli_label_type_nodata(type);
    for (size_t py = 0; py < p->ph; py++) {
        size_t y = (size_t)(((double)py + 0.5) * p->scale);
        y = y < p->height ? y : p->height - 1; /* as pcli_preview_write picks them */
        if (y < y0 || y >= y0 + rows)
            continue;
        const unsigned char *row = (const unsigned char *)labels + (y - y0) * W * es;
        for (size_t px = 0; px < p->pw; px++) {
            size_t x = (size_t)(((double)px + 0.5) * p->scale);
            x = x < W ? x : W - 1;
            int32_t v = es == 1 ? row[x] : es == 2 ? ((const uint16_t *)(const void *)row)[x]
                                                   : ((const int32_t *)(const void *)row)[x];
            p->labels[py * p->pw + px] = v == nodata ? -1 : v;
        }
    }
}

int pcli_picture_write(const pcli_picture *p, const char *path, const pcli_image *im, const float *centers, size_t k,
                       int palette, char *err, size_t errsize)
{
    pcli_image pv; /* the picture's labels as an image of its own size, every pixel valid */
    memset(&pv, 0, sizeof pv);
    pv.width = p->pw;
    pv.height = p->ph;
    pv.bands = im->bands;
    memcpy(pv.lo, im->lo, sizeof pv.lo);
    memcpy(pv.hi, im->hi, sizeof pv.hi);
    size_t n = p->pw * p->ph;
    if (!(pv.valid = malloc((n + 7) / 8)))
        return pcli_fail(err, errsize, "%s: out of memory", path);
    memset(pv.valid, 0xff, (n + 7) / 8); /* nodata is in the labels (-1) */
    int rc = pcli_preview_write(path, &pv, p->labels, 0, centers, k, palette, 0, err, errsize);
    free(pv.valid);
    return rc;
}

void pcli_picture_free(pcli_picture *p)
{
    free(p->labels);
    p->labels = NULL;
}
