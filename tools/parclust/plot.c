/* Scatter plots of clustered points: a raster drawn in memory and written as a PNG made of stored
 * (uncompressed) deflate blocks, or an SVG written as text. */
#define _POSIX_C_SOURCE 200809L

#include "plot.h"
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

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

/* Running CRC-32 (PNG's, the same as zlib's): start with 0, feed pieces in order. */
static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t len)
{
    crc = ~crc;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t adler32(const unsigned char *p, size_t len)
{
    uint32_t a = 1, b = 0;
    while (len) {
        /* 5552 bytes is the most that can be summed before b could overflow 32 bits */
        size_t m = len < 5552 ? len : 5552;
        for (size_t i = 0; i < m; i++) {
            a += p[i];
            b += a;
        }
        a %= 65521;
        b %= 65521;
        p += m;
        len -= m;
    }
    return b << 16 | a;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static int write_chunk(FILE *fp, const char type[4], const unsigned char *data, size_t len)
{
    unsigned char head[8], tail[4];
    put_be32(head, (uint32_t)len);
    memcpy(head + 4, type, 4);
    uint32_t crc = crc32_update(0, head + 4, 4);
    crc = crc32_update(crc, data, len);
    put_be32(tail, crc);
    if (fwrite(head, 1, 8, fp) != 8 || (len && fwrite(data, 1, len, fp) != len) ||
        fwrite(tail, 1, 4, fp) != 4)
        return -1;
    return 0;
}

/* zlib stream of stored deflate blocks: no compression, so no compressor to get wrong; the image
 * is mostly white but 2 MB is an acceptable price for a plot. */
static unsigned char *zlib_stored(const unsigned char *raw, size_t len, size_t *out_len)
{
    size_t blocks = len ? (len + 65534) / 65535 : 1;
    size_t total = 2 + blocks * 5 + len + 4;
    unsigned char *z = malloc(total), *q = z;
    if (!z)
        return NULL;
    *q++ = 0x78; /* deflate, 32 KiB window */
    *q++ = 0x01; /* no preset dictionary, fastest; 0x7801 is a multiple of 31 as the check needs */
    size_t done = 0;
    for (size_t b = 0; b < blocks; b++) {
        size_t m = len - done < 65535 ? len - done : 65535;
        *q++ = b + 1 == blocks ? 1 : 0; /* BFINAL on the last, BTYPE 00 = stored */
        q[0] = (unsigned char)(m & 0xff);
        q[1] = (unsigned char)(m >> 8);
        q[2] = (unsigned char)(~m & 0xff);
        q[3] = (unsigned char)((~m >> 8) & 0xff);
        q += 4;
        memcpy(q, raw + done, m);
        q += m;
        done += m;
    }
    put_be32(q, adler32(raw, len));
    *out_len = total;
    return z;
}

/* Latin-1 text for the tEXt chunk; bytes that would not read back as such become '?'. */
static size_t png_text(unsigned char *out, size_t cap, const char *title)
{
    static const char keyword[] = "Title";
    size_t len = sizeof keyword; /* the NUL separator included */
    memcpy(out, keyword, sizeof keyword);
    for (const char *s = title; *s && len < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        out[len++] = (ch >= 32 && ch < 127) ? ch : '?';
    }
    return len;
}

static int write_png(FILE *fp, const canvas *c, const char *title)
{
    static const unsigned char signature[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
    const size_t row = 1 + 3 * (size_t)PLOT_SIZE, raw_len = row * PLOT_SIZE;
    unsigned char ihdr[13], text[512];
    int rc = -1;
    unsigned char *raw = malloc(raw_len), *z = NULL;
    size_t z_len = 0;
    if (!raw)
        goto done;
    for (size_t y = 0; y < PLOT_SIZE; y++) {
        raw[y * row] = 0; /* filter: none */
        memcpy(raw + y * row + 1, c->px + y * 3 * PLOT_SIZE, 3 * (size_t)PLOT_SIZE);
    }
    z = zlib_stored(raw, raw_len, &z_len);
    if (!z)
        goto done;
    put_be32(ihdr, PLOT_SIZE);
    put_be32(ihdr + 4, PLOT_SIZE);
    ihdr[8] = 8;  /* bits per sample */
    ihdr[9] = 2;  /* truecolour RGB */
    ihdr[10] = 0; /* deflate */
    ihdr[11] = 0; /* adaptive filtering */
    ihdr[12] = 0; /* no interlace */
    crc_init();
    if (fwrite(signature, 1, 8, fp) != 8 || write_chunk(fp, "IHDR", ihdr, sizeof ihdr))
        goto done;
    if (title && *title && write_chunk(fp, "tEXt", text, png_text(text, sizeof text, title)))
        goto done;
    if (write_chunk(fp, "IDAT", z, z_len) || write_chunk(fp, "IEND", NULL, 0))
        goto done;
    rc = 0;
done:
    free(raw);
    free(z);
    return rc;
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
    errno = 0;
    rc = c.px ? write_png(f.fp, &c, title) : write_svg(f.fp, points, n, dim, labels, centers, k, title);
    free(c.px);
    if (rc) {
        int e = errno;
        pcli_outfile_discard(&f);
        return pcli_fail(err, errsize, "%s: write failed: %s", path, e ? strerror(e) : "out of memory");
    }
    return pcli_outfile_commit(&f, err, errsize);
}
