/* Preview PNGs of segmentations, streamed row by row: the picture of a 100-megapixel image is never
 * held, and neither is a full-size label image (compact labels are walked with the validity bits). */
#define _POSIX_C_SOURCE 200809L

#include "preview.h"
#include "points_io.h"
#include "raster_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pcli_png {
    FILE *fp;
    const char *path;
    size_t width, height;
    uint32_t crc, adler_a, adler_b;
    unsigned char block[65535]; /* the stored deflate block being filled */
    size_t used, left;          /* bytes in block; raw bytes still to come */
    int failed;
};

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

static uint32_t crc_add(uint32_t crc, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* Bytes inside the IDAT chunk: they enter its CRC as they are written. */
static void idat_put(pcli_png *p, const unsigned char *d, size_t len)
{
    p->crc = crc_add(p->crc, d, len);
    if (fwrite(d, 1, len, p->fp) != len)
        p->failed = 1;
}

static void flush_block(pcli_png *p)
{
    unsigned char head[5];
    size_t m = p->used;
    head[0] = p->left == 0 ? 1 : 0; /* BFINAL on the last block; BTYPE 00 = stored */
    head[1] = (unsigned char)(m & 0xff), head[2] = (unsigned char)(m >> 8);
    head[3] = (unsigned char)(~m & 0xff), head[4] = (unsigned char)((~m >> 8) & 0xff);
    idat_put(p, head, 5);
    idat_put(p, p->block, m);
    p->used = 0;
}

/* Raw (filtered) image bytes: Adler-32 over them, cut into stored blocks of 65535. */
static void raw_put(pcli_png *p, const unsigned char *d, size_t len)
{
    while (len) {
        size_t m = sizeof p->block - p->used;
        if (m > len)
            m = len;
        memcpy(p->block + p->used, d, m);
        for (size_t i = 0; i < m; i++) {
            p->adler_a = (p->adler_a + d[i]) % 65521;
            p->adler_b = (p->adler_b + p->adler_a) % 65521;
        }
        p->used += m, p->left -= m, d += m, len -= m;
        if (p->used == sizeof p->block || p->left == 0)
            flush_block(p);
    }
}

static int write_chunk(FILE *fp, const char *type, const unsigned char *data, size_t len)
{
    unsigned char head[8], tail[4];
    be32(head, (uint32_t)len);
    memcpy(head + 4, type, 4);
    be32(tail, ~crc_add(crc_add(~0u, head + 4, 4), data, len));
    return fwrite(head, 1, 8, fp) != 8 || (len && fwrite(data, 1, len, fp) != len) || fwrite(tail, 1, 4, fp) != 4;
}

int pcli_png_open(pcli_png **out, const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    static const unsigned char signature[8] = {137, 'P', 'N', 'G', 13, 10, 26, 10};
    *out = NULL;
    size_t raw = (1 + 3 * width) * height, blocks = (raw + 65534) / 65535;
    size_t zlen = 2 + 5 * blocks + raw + 4;
    if (width == 0 || height == 0 || zlen > 0x7fffffffu)
        return pcli_fail(err, errsize, "%s: picture size %zu x %zu is out of range", path, width, height);
    pcli_png *p = calloc(1, sizeof *p);
    if (!p)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    p->fp = fopen(path, "wb");
    if (!p->fp) {
        free(p);
        return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(errno));
    }
    crc_init();
    p->path = path, p->width = width, p->height = height, p->left = raw, p->adler_a = 1;
    unsigned char ihdr[13] = {0};
    be32(ihdr, (uint32_t)width);
    be32(ihdr + 4, (uint32_t)height);
    ihdr[8] = 8, ihdr[9] = 2; /* 8 bits, truecolour RGB; deflate, no filter method choice, no interlace */
    unsigned char head[8];
    be32(head, (uint32_t)zlen);
    memcpy(head + 4, "IDAT", 4);
    if (fwrite(signature, 1, 8, p->fp) != 8 || write_chunk(p->fp, "IHDR", ihdr, 13) || fwrite(head, 1, 8, p->fp) != 8)
        p->failed = 1;
    p->crc = crc_add(~0u, head + 4, 4);
    static const unsigned char zhead[2] = {0x78, 0x01}; /* deflate, 32 KiB window, a multiple of 31 */
    idat_put(p, zhead, 2);
    *out = p;
    return 0;
}

int pcli_png_row(pcli_png *p, const uint8_t *rgb)
{
    static const unsigned char filter_none = 0;
    raw_put(p, &filter_none, 1);
    raw_put(p, rgb, 3 * p->width);
    return p->failed ? -1 : 0;
}

int pcli_png_close(pcli_png *p, char *err, size_t errsize)
{
    int rc = 0;
    unsigned char tail[8];
    if (p->left != 0) {
        rc = pcli_fail(err, errsize, "%s: internal error: picture rows missing", p->path);
    } else {
        be32(tail, p->adler_b << 16 | p->adler_a);
        idat_put(p, tail, 4);
        be32(tail, ~p->crc);
        if (fwrite(tail, 1, 4, p->fp) != 4 || write_chunk(p->fp, "IEND", NULL, 0))
            p->failed = 1;
    }
    errno = 0;
    if (fclose(p->fp) != 0 || p->failed)
        if (rc == 0)
            rc = pcli_fail(err, errsize, "%s: write failed: %s", p->path, errno ? strerror(errno) : "I/O error");
    free(p);
    return rc;
}

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

int pcli_preview_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                       const float *centers, size_t k, int palette, size_t max_side, char *err, size_t errsize)
{
    size_t W = im->width, H = im->height, side = W > H ? W : H;
    double scale = max_side && side > max_side ? (double)side / (double)max_side : 1;
    size_t pw = (size_t)((double)W / scale), ph = (size_t)((double)H / scale);
    pw = pw ? pw : 1, ph = ph ? ph : 1;
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
        pcli__expand_row(im, y, labels, compact, &cursor, labrow);
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
