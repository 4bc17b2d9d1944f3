/* Images held once, pixel-interleaved: NumPy (H, W[, B]) arrays read straight into the pixel buffer,
 * nodata/NaN validity bits, in-place compaction of the valid pixels, and label rasters as .npy. The
 * GDAL formats are in raster_gdal.c. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */

#include "raster_internal.h"
#include "points_io.h"
#include "npy_format.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

size_t pcli_pixtype_size(pcli_pixtype t) { return t == PCLI_PIX_U8 ? 1 : t == PCLI_PIX_U16 ? 2 : 4; }

const char *pcli_pixtype_name(pcli_pixtype t)
{
    return t == PCLI_PIX_U8 ? "uint8" : t == PCLI_PIX_U16 ? "uint16" : "float32";
}

void pcli_image_free(pcli_image *im)
{
    if (!im)
        return;
    free(im->pixels);
    free(im->valid);
    free(im->projection);
    memset(im, 0, sizeof *im);
}

int pcli_check_input_file(const char *path, char *err, size_t errsize)
{
    struct stat st;
    if (stat(path, &st) != 0 || access(path, R_OK) != 0)
        return pcli_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return pcli_fail(err, errsize, "%s: is a directory, not an image file", path);
    if (S_ISREG(st.st_mode) && st.st_size == 0)
        return pcli_fail(err, errsize, "%s: empty file (0 bytes)", path);
    return 0;
}

int pcli__nodata_can_match(pcli_pixtype type, int in_int16, double value)
{
    if (isnan(value))
        return 0;
    if (type == PCLI_PIX_F32)
        return 1;
    double lo = in_int16 ? -32768 : 0, hi = in_int16 ? 32767 : type == PCLI_PIX_U8 ? 255 : 65535;
    return value >= lo && value <= hi && value == floor(value);
}

void *pcli__alloc_large(size_t bytes)
{
    const size_t huge = (size_t)2 << 20;
    if (bytes < 4 * huge)
        return malloc(bytes ? bytes : 1);
    void *p = NULL;
    if (posix_memalign(&p, huge, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it (THP "never") only slower */
#endif
    return p;
}

int pcli__image_alloc(pcli_image *im, const pcli_read_options *opt, const char *path, char *err, size_t errsize)
{
    size_t es = pcli_pixtype_size(im->type);
    if (im->width == 0 || im->height == 0 || im->bands == 0)
        return pcli_fail(err, errsize, "%s: empty image (%zu x %zu pixels, %zu bands)", path, im->width, im->height,
                         im->bands);
    if (im->height > SIZE_MAX / im->width / im->bands / es / 2)
        return pcli_fail(err, errsize, "%s: image is too large", path);
    if (opt->check_header && opt->check_header(im, opt->check_ctx, err, errsize))
        return -1;
    size_t n = im->width * im->height;
    im->pixels = pcli__alloc_large(n * im->bands * es);
    im->valid = pcli__alloc_large((n + 7) / 8);
    if (im->valid)
        memset(im->valid, 0, (n + 7) / 8);
    if (!im->pixels || !im->valid)
        return pcli_fail(err, errsize, "%s: out of memory for %zu x %zu pixels of %zu bands", path, im->width,
                         im->height, im->bands);
    for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
        im->lo[b] = INFINITY;
        im->hi[b] = -INFINITY;
    }
    return 0;
}

/* Float pixels: NaN and infinities are invalid too. */
#define MARK_FLOAT()                                                                                           \
    do {                                                                                                       \
        const float *px = (const float *)im->pixels + first * B;                                               \
        for (size_t i = first; i < last; i++, px += B) {                                                       \
            int ok = 1;                                                                                        \
            for (size_t b = 0; b < B; b++)                                                                     \
                if (!isfinite(px[b]) || (nd->has[b] && (double)px[b] == nodata[b]))                            \
                    ok = 0;                                                                                    \
            if (!ok)                                                                                           \
                continue;                                                                                      \
            im->valid[i >> 3] |= (uint8_t)(1u << (i & 7));                                                    \
            for (size_t b = 0; b < B; b++) {                                                                   \
                double v = px[b];                                                                              \
                lo[b] = v < lo[b] ? v : lo[b];                                                                 \
                hi[b] = v > hi[b] ? v : hi[b];                                                                 \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)

/* Integer pixels (uint8, uint16, and int16 held as uint16 before its shift), 8 at a time: the 8 x B
 * values behind one validity byte are compared with the nodata values repeated 8 times (a band
 * without one its type can hold never matches), and when all 8 pixels are valid, as nearly all are,
 * folded into running minima and maxima of 8 x B lanes, loops the compiler turns into a few vector
 * instructions when B is a constant (1, 3, 4 below). This runs over every value of a 100-megapixel
 * image: pixel by pixel in doubles it took 0.5 s of the read. ORD maps a held value to one whose
 * unsigned order is the value's (int16: the sign bit flipped); UNORD maps it back. */
#define DEFINE_MARK(NAME, T, ORD, UNORD)                                                                       \
    static inline __attribute__((always_inline)) void NAME(uint8_t *valid, const T *px, size_t first,          \
                                                           size_t last, size_t NB, const int *has_nd,          \
                                                           const T *nd, long *lo, long *hi)                    \
    {                                                                                                          \
        T pat[8 * PCLI_MAX_BANDS], use[8 * PCLI_MAX_BANDS], mn[8 * PCLI_MAX_BANDS], mx[8 * PCLI_MAX_BANDS];   \
        for (size_t k = 0; k < 8 * NB; k++) {                                                                  \
            pat[k] = nd[k % NB];                                                                               \
            use[k] = has_nd[k % NB] ? (T)~(T)0 : 0;                                                            \
            mn[k] = (T)~(T)0;                                                                                  \
            mx[k] = 0;                                                                                         \
        }                                                                                                      \
        size_t i = first;                                                                                      \
        for (; i < last; i++) {                                                                                \
            if ((i & 7) == 0 && i + 8 <= last) {                                                               \
                const T *g = px + i * NB;                                                                      \
                T eq[8 * PCLI_MAX_BANDS];                                                                      \
                for (size_t k = 0; k < 8 * NB; k++)                                                            \
                    eq[k] = (T)((g[k] == pat[k] ? (T)~(T)0 : 0) & use[k]);                                     \
                unsigned bits = 0;                                                                             \
                for (size_t j = 0; j < 8; j++) {                                                               \
                    T bad = 0;                                                                                 \
                    for (size_t b = 0; b < NB; b++)                                                            \
                        bad |= eq[j * NB + b];                                                                 \
                    bits |= (unsigned)(bad == 0) << j;                                                         \
                }                                                                                              \
                valid[i >> 3] = (uint8_t)bits;                                                                 \
                if (bits == 0xFF) {                                                                            \
                    for (size_t k = 0; k < 8 * NB; k++) {                                                      \
                        T v = ORD(g[k]);                                                                       \
                        mn[k] = v < mn[k] ? v : mn[k];                                                         \
                        mx[k] = v > mx[k] ? v : mx[k];                                                         \
                    }                                                                                          \
                    i += 7;                                                                                    \
                    continue;                                                                                  \
                }                                                                                              \
                for (size_t j = 0; j < 8; j++)                                                                 \
                    if (bits >> j & 1)                                                                         \
                        for (size_t b = 0; b < NB; b++) {                                                      \
                            T v = ORD(g[j * NB + b]);                                                          \
                            mn[b] = v < mn[b] ? v : mn[b];                                                     \
                            mx[b] = v > mx[b] ? v : mx[b];                                                     \
                        }                                                                                      \
                i += 7;                                                                                        \
                continue;                                                                                      \
            }                                                                                                  \
            /* the pixels before the first whole byte and after the last: one by one */                        \
            const T *p = px + i * NB;                                                                          \
            int bad = 0;                                                                                       \
            for (size_t b = 0; b < NB; b++)                                                                    \
                bad |= has_nd[b] && p[b] == nd[b];                                                             \
            if (bad)                                                                                           \
                continue;                                                                                      \
            valid[i >> 3] |= (uint8_t)(1u << (i & 7));                                                        \
            for (size_t b = 0; b < NB; b++) {                                                                  \
                T v = ORD(p[b]);                                                                               \
                mn[b] = v < mn[b] ? v : mn[b];                                                                 \
                mx[b] = v > mx[b] ? v : mx[b];                                                                 \
            }                                                                                                  \
        }                                                                                                      \
        for (size_t k = 0; k < 8 * NB; k++) {                                                                  \
            if (mn[k] > mx[k])                                                                                 \
                continue; /* no valid value in this lane */                                                   \
            long a = UNORD(mn[k]), z = UNORD(mx[k]);                                                           \
            lo[k % NB] = a < lo[k % NB] ? a : lo[k % NB];                                                      \
            hi[k % NB] = z > hi[k % NB] ? z : hi[k % NB];                                                      \
        }                                                                                                      \
    }
#define SAME(x) (x)
#define FLIP16(x) ((uint16_t)((x) ^ 0x8000u))
#define UNFLIP16(x) ((long)(int16_t)(uint16_t)((x) ^ 0x8000u))
DEFINE_MARK(mark_u8, uint8_t, SAME, (long))
DEFINE_MARK(mark_u16, uint16_t, SAME, (long))
DEFINE_MARK(mark_i16, uint16_t, FLIP16, UNFLIP16)

/* The band count as a constant where it is 1, 3 or 4 (the common images). */
#define MARK_BANDS(FN, T)                                                                                      \
    do {                                                                                                       \
        const T *px_ = im->pixels;                                                                             \
        if (B == 1)                                                                                            \
            FN(im->valid, px_, first, last, 1, has, (const T *)nd_t, lo_l, hi_l);                              \
        else if (B == 3)                                                                                       \
            FN(im->valid, px_, first, last, 3, has, (const T *)nd_t, lo_l, hi_l);                              \
        else if (B == 4)                                                                                       \
            FN(im->valid, px_, first, last, 4, has, (const T *)nd_t, lo_l, hi_l);                              \
        else                                                                                                   \
            FN(im->valid, px_, first, last, B, has, (const T *)nd_t, lo_l, hi_l);                              \
    } while (0)

void pcli__mark_valid(pcli_image *im, size_t y0, size_t rows, const pcli_nodata *nd, int in_int16)
{
    size_t B = im->bands, first = y0 * im->width, last = (y0 + rows) * im->width;
    if (first == last)
        return;
    if (im->type == PCLI_PIX_F32) {
        double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS], nodata[PCLI_MAX_BANDS];
        /* A float32 pixel equals the nodata value as float32 holds it (0.1 is stored as 0.1f; one
         * beyond float32's range, as -DBL_MAX often is, as infinity, which is nodata anyway). */
        for (size_t b = 0; b < B; b++)
            nodata[b] = fabs(nd->value[b]) > FLT_MAX ? (nd->value[b] > 0 ? INFINITY : -INFINITY)
                                                      : (double)(float)nd->value[b];
        memcpy(lo, im->lo, sizeof lo);
        memcpy(hi, im->hi, sizeof hi);
        MARK_FLOAT();
        memcpy(im->lo, lo, sizeof lo);
        memcpy(im->hi, hi, sizeof hi);
        return;
    }
    int has[PCLI_MAX_BANDS];
    long lo_l[PCLI_MAX_BANDS], hi_l[PCLI_MAX_BANDS];
    uint8_t nd8[PCLI_MAX_BANDS];
    uint16_t nd16[PCLI_MAX_BANDS];
    for (size_t b = 0; b < B; b++) {
        has[b] = nd->has[b] && pcli__nodata_can_match(im->type, in_int16, nd->value[b]);
        long v = has[b] ? (long)nd->value[b] : 0;
        nd8[b] = (uint8_t)v;
        nd16[b] = (uint16_t)(in_int16 ? (uint16_t)(int16_t)v : (uint16_t)v); /* int16 as its held bits */
        lo_l[b] = LONG_MAX;
        hi_l[b] = LONG_MIN;
    }
    const void *nd_t = im->type == PCLI_PIX_U8 ? (const void *)nd8 : (const void *)nd16;
    if (im->type == PCLI_PIX_U8)
        MARK_BANDS(mark_u8, uint8_t);
    else if (in_int16)
        MARK_BANDS(mark_i16, uint16_t);
    else
        MARK_BANDS(mark_u16, uint16_t);
    for (size_t b = 0; b < B; b++)
        if (lo_l[b] <= hi_l[b]) {
            im->lo[b] = (double)lo_l[b] < im->lo[b] ? (double)lo_l[b] : im->lo[b];
            im->hi[b] = (double)hi_l[b] > im->hi[b] ? (double)hi_l[b] : im->hi[b];
        }
}

int pcli__image_finish(pcli_image *im, const char *path, int in_int16, char *err, size_t errsize)
{
    size_t n = im->width * im->height, count = pcli__count_valid(im, 0, n);
    im->n_valid = count;
    if (count == 0)
        return pcli_fail(err, errsize, "%s: every pixel is nodata (or NaN) in the chosen bands: nothing to segment",
                         path);
    if (in_int16) {
        /* int16 -> uint16 + 32768 is the sign bit flipped: exact, order-preserving, same width. */
        uint16_t *px = im->pixels;
        for (size_t i = 0; i < n * im->bands; i++)
            px[i] ^= 0x8000u;
        im->offset = 32768;
    }
    return 0;
}

/* The first pixel from i on (before n) whose validity bit is `bit`: whole bytes at a time between
 * the edges of runs, which in images are long. */
static size_t next_with(const uint8_t *valid, size_t i, size_t n, int bit)
{
    uint8_t skip = bit ? 0x00 : 0xFF;
    while (i < n && (i & 7))
        if ((valid[i >> 3] >> (i & 7) & 1) == bit)
            return i;
        else
            i++;
    while (i + 8 <= n && valid[i >> 3] == skip)
        i += 8;
    while (i < n && (valid[i >> 3] >> (i & 7) & 1) != bit)
        i++;
    return i;
}

void pcli_image_compact(pcli_image *im)
{
    size_t n = im->width * im->height, ps = im->bands * pcli_pixtype_size(im->type), out = 0;
    unsigned char *px = im->pixels;
    /* Runs of valid pixels move with one memmove each; images are mostly long runs. */
    for (size_t i = next_with(im->valid, 0, n, 1); i < n; i = next_with(im->valid, i, n, 1)) {
        size_t start = i;
        i = next_with(im->valid, i, n, 0);
        if (start != out)
            memmove(px + out * ps, px + start * ps, (i - start) * ps);
        out += i - start;
    }
}

void pcli_image_expand_row(const pcli_image *im, size_t y, const int32_t *labels, int compact, size_t *cursor,
                           int32_t *out)
{
    size_t W = im->width;
    for (size_t x = 0, i = y * W; x < W; x++, i++) {
        if (!pcli_image_is_valid(im, i))
            out[x] = -1;
        else
            out[x] = compact ? labels[(*cursor)++] : labels[i];
    }
}

void pcli__expand_span(const pcli_image *im, size_t y, size_t x0, size_t n, const int32_t *labels, int compact,
                       size_t *cursor, pcli_label_type type, void *out)
{
    size_t first = y * im->width + x0, last = first + n;
    int32_t nodata = (int32_t)pcli_label_type_nodata(type);
    /* One loop per type; a label below 0 (HCA's noise) is nodata as an invalid pixel is. Whole bytes
     * of validity bits at a time where they can be: 8 valid pixels (nearly all) are 8 labels in a row. */
#define ONE(T, i)                                                                                              \
    do {                                                                                                       \
        int32_t v_ = nodata;                                                                                   \
        if (pcli_image_is_valid(im, i)) {                                                                      \
            int32_t l_ = compact ? labels[(*cursor)++] : labels[i];                                            \
            v_ = l_ < 0 ? nodata : l_;                                                                         \
        }                                                                                                      \
        o[(i) - first] = (T)v_;                                                                                \
    } while (0)
#define EXPAND(T)                                                                                              \
    do {                                                                                                       \
        T *o = out;                                                                                            \
        size_t i = first;                                                                                      \
        for (; i < last && (i & 7); i++)                                                                       \
            ONE(T, i);                                                                                         \
        for (; i + 8 <= last; i += 8) {                                                                        \
            unsigned bits = im->valid[i >> 3];                                                                 \
            if (bits == 0xFF) {                                                                                \
                const int32_t *l = compact ? labels + *cursor : labels + i;                                    \
                for (size_t j = 0; j < 8; j++)                                                                 \
                    o[i - first + j] = (T)(l[j] < 0 ? nodata : l[j]);                                          \
                *cursor += compact ? 8 : 0;                                                                    \
            } else {                                                                                           \
                for (size_t j = i; j < i + 8; j++)                                                             \
                    ONE(T, j);                                                                                 \
            }                                                                                                  \
        }                                                                                                      \
        for (; i < last; i++)                                                                                  \
            ONE(T, i);                                                                                         \
    } while (0)
    if (type == PCLI_LABELS_BYTE)
        EXPAND(uint8_t);
    else if (type == PCLI_LABELS_UINT16)
        EXPAND(uint16_t);
    else if (type == PCLI_LABELS_INT8)
        EXPAND(int8_t);
    else if (type == PCLI_LABELS_INT16)
        EXPAND(int16_t);
    else
        EXPAND(int32_t);
#undef ONE
#undef EXPAND
}

/* Bits set in 64 (without -mpopcnt __builtin_popcount is a library call per byte, 0.1 s at 100 Mpix). */
static inline size_t popcount64(uint64_t x)
{
    x -= (x >> 1) & 0x5555555555555555u;
    x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
    return (size_t)((x * 0x0101010101010101u) >> 56);
}

size_t pcli__count_valid(const pcli_image *im, size_t from, size_t to)
{
    size_t count = 0, i = from;
    for (; i < to && (i & 63); i++)
        count += pcli_image_is_valid(im, i);
    for (; i + 64 <= to; i += 64) {
        uint64_t w;
        memcpy(&w, im->valid + (i >> 3), 8);
        count += popcount64(w);
    }
    for (; i < to; i++)
        count += pcli_image_is_valid(im, i);
    return count;
}

/* ---------------------------------------------------------------- label types */

static const char *const label_type_names[] = {"auto", "Byte", "UInt16", "Int32", "Int8", "Int16"};

int pcli_label_type_parse(const char *name, pcli_label_type *type)
{
    for (int t = PCLI_LABELS_BYTE; t <= PCLI_LABELS_INT32; t++)
        if (strcasecmp(name, label_type_names[t]) == 0) {
            *type = (pcli_label_type)t;
            return 0;
        }
    return -1;
}

const char *pcli_label_type_name(pcli_label_type type) { return label_type_names[type]; }

/* The largest value of the unsigned types is their nodata: a label is never it, and every label from
 * 0 up stays as it is. Int32 keeps -1, as .npy labels and every earlier parclust. */
double pcli_label_type_nodata(pcli_label_type type)
{
    return type == PCLI_LABELS_BYTE ? 255 : type == PCLI_LABELS_UINT16 ? 65535 : -1;
}

size_t pcli_label_type_max_clusters(pcli_label_type type)
{
    return type == PCLI_LABELS_BYTE     ? 255
           : type == PCLI_LABELS_UINT16 ? 65535
           : type == PCLI_LABELS_INT8   ? 128
           : type == PCLI_LABELS_INT16  ? 32768
                                        : (size_t)INT32_MAX;
}

/* Bytes a value of each pcli_raster_spec type. */
static const size_t raster_bytes[] = {1, 2, 4, 4, 1, 2};

int pcli_label_type_raster(pcli_label_type type)
{
    static const int spec_type[] = {3, 0, 1, 3, 4, 5};
    return spec_type[type];
}

size_t pcli_label_type_size(pcli_label_type type) { return raster_bytes[pcli_label_type_raster(type)]; }

pcli_label_type pcli_label_type_of_output(const char *path, pcli_label_type asked, size_t clusters)
{
    if (!pcli_has_extension(path, ".npy"))
        return pcli_label_type_for(asked, clusters);
    size_t size = pcli_npy_label_type_for(clusters).size;
    return size == 1 ? PCLI_LABELS_INT8 : size == 2 ? PCLI_LABELS_INT16 : PCLI_LABELS_INT32;
}

pcli_label_type pcli_label_type_for(pcli_label_type asked, size_t clusters)
{
    if (asked != PCLI_LABELS_AUTO)
        return asked;
    return clusters <= 255 ? PCLI_LABELS_BYTE : clusters <= 65535 ? PCLI_LABELS_UINT16 : PCLI_LABELS_INT32;
}

int pcli_label_format_check(const pcli_label_format *fmt, char *warning, size_t warnsize, char *err, size_t errsize)
{
    if (warnsize)
        warning[0] = '\0';
    for (size_t i = 0; i < fmt->n_options; i++) {
        const char *o = fmt->options[i], *eq = strchr(o, '=');
        if (!eq || eq == o)
            return pcli_fail(err, errsize, "--co '%s': expected NAME=VALUE (a GeoTIFF creation option, as "
                                           "gdal_translate -co)", o);
    }
    return pcli__gdal_label_format_check(fmt, warning, warnsize, err, errsize);
}

/* ---------------------------------------------------------------- NumPy images */

typedef struct {
    char descr[8];
    size_t shape[3];
    int ndim;
    long data_start;
} npy_header;

/* Reads the header: magic, version, the dict's descr, fortran_order and shape (1 to 3 dims). */
static int npy_header_read(FILE *fp, const char *path, npy_header *h, char *err, size_t errsize)
{
    unsigned char pre[12];
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0)
        return pcli_fail(err, errsize, "%s: not a NumPy .npy file", path);
    size_t hlen;
    if (pre[6] == 1) {
        hlen = (size_t)(pre[8] | pre[9] << 8);
        h->data_start = 10;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, fp) != 2)
            return pcli_fail(err, errsize, "%s: truncated .npy header", path);
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        h->data_start = 12;
    } else {
        return pcli_fail(err, errsize, "%s: unsupported .npy format version %d", path, pre[6]);
    }
    if (hlen > 65536)
        return pcli_fail(err, errsize, "%s: malformed .npy header", path);
    char *dict = malloc(hlen + 1);
    if (!dict)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    if (fread(dict, 1, hlen, fp) != hlen) {
        free(dict);
        return pcli_fail(err, errsize, "%s: truncated .npy header", path);
    }
    dict[hlen] = '\0';
    h->data_start += (long)hlen;
    int rc = -1;
    const char *d = strstr(dict, "'descr'"), *f = strstr(dict, "'fortran_order'"), *s = strstr(dict, "'shape'");
    if (!d || !f || !s) {
        pcli_fail(err, errsize, "%s: malformed .npy header", path);
        goto done;
    }
    d = strchr(d + 7, '\'');
    if (!d || sscanf(d + 1, "%7[^']", h->descr) != 1) {
        pcli_fail(err, errsize, "%s: malformed .npy header (descr)", path);
        goto done;
    }
    f = strchr(f + 15, ':');
    while (f && (*f == ':' || isspace((unsigned char)*f)))
        f++;
    if (!f || strncmp(f, "False", 5) != 0) {
        pcli_fail(err, errsize, "%s: Fortran-order arrays are not supported; save with np.ascontiguousarray()",
                  path);
        goto done;
    }
    s = strchr(s, '(');
    h->ndim = 0;
    while (s && *s && *s != ')') {
        s++;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == ')')
            break;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || errno || h->ndim == 3) {
            pcli_fail(err, errsize, "%s: array must have 2 dimensions (H, W) or 3 (H, W, bands)", path);
            goto done;
        }
        h->shape[h->ndim++] = (size_t)v;
        s = end;
        while (isspace((unsigned char)*s))
            s++;
        if (*s != ',' && *s != ')') {
            pcli_fail(err, errsize, "%s: malformed .npy header (shape)", path);
            goto done;
        }
    }
    rc = 0;
done:
    free(dict);
    return rc;
}

static int npy_open(const char *path, FILE **fp, npy_header *h, char *err, size_t errsize)
{
    *fp = NULL;
    if (pcli_check_input_file(path, err, errsize))
        return -1;
    *fp = fopen(path, "rb");
    if (!*fp)
        return pcli_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
    if (npy_header_read(*fp, path, h, err, errsize)) {
        fclose(*fp);
        *fp = NULL;
        return -1;
    }
    return 0;
}

/* A file shorter than its header's shape is said before its rows are read (a regular file's size is
 * known; a pipe's is not, and its rows are checked as they come). */
static int npy_check_size(FILE *fp, const char *path, const npy_header *h, size_t es, char *err, size_t errsize)
{
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    double need = (double)es; /* in double: a shape's product may pass 2^64 */
    for (int d = 0; d < h->ndim; d++)
        need *= (double)h->shape[d];
    need += (double)h->data_start;
    if ((double)st.st_size < need)
        return pcli_fail(err, errsize, "%s: truncated: %lld bytes, the header's shape needs %.0f", path,
                         (long long)st.st_size, need);
    return 0;
}

static int npy_read_image(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    int rc = -1;
    unsigned char *row = NULL;
    size_t es;
    if (strcmp(h.descr, "|u1") == 0 || strcmp(h.descr, "<u1") == 0) {
        im->type = PCLI_PIX_U8, es = 1;
    } else if (strcmp(h.descr, "<u2") == 0) {
        im->type = PCLI_PIX_U16, es = 2;
    } else if (strcmp(h.descr, "<f4") == 0) {
        im->type = PCLI_PIX_F32, es = 4;
    } else {
        pcli_fail(err, errsize, "%s: unsupported image dtype '%s' (expected |u1, <u2 or <f4)", path, h.descr);
        goto done;
    }
    if (h.ndim < 2) {
        pcli_fail(err, errsize, "%s: array must have 2 dimensions (H, W) or 3 (H, W, bands), got %d", path, h.ndim);
        goto done;
    }
    size_t file_bands = h.ndim == 3 ? h.shape[2] : 1;
    im->height = h.shape[0];
    im->width = h.shape[1];
    im->is_npy = 1;
    snprintf(im->source_type, sizeof im->source_type, "%s", pcli_pixtype_name(im->type));
    int order[PCLI_MAX_BANDS];
    size_t nb = opt->bands ? opt->nbands : file_bands;
    if (nb == 0 || nb > PCLI_MAX_BANDS) {
        pcli_fail(err, errsize, "%s: %zu bands; at most %d can be used", path, nb, PCLI_MAX_BANDS);
        goto done;
    }
    for (size_t b = 0; b < nb; b++) {
        order[b] = opt->bands ? opt->bands[b] : (int)b + 1;
        if (order[b] < 1 || (size_t)order[b] > file_bands) {
            pcli_fail(err, errsize, "%s: no band %d (the image has %zu band%s)", path, order[b], file_bands,
                      file_bands == 1 ? "" : "s");
            goto done;
        }
    }
    im->bands = nb;
    im->may_have_nodata =
        im->type == PCLI_PIX_F32 || (opt->has_nodata && pcli__nodata_can_match(im->type, 0, opt->nodata));
    if (npy_check_size(fp, path, &h, es, err, errsize) || pcli__image_alloc(im, opt, path, err, errsize))
        goto done;
    size_t W = im->width, rowbytes = W * file_bands * es;
    row = malloc(rowbytes);
    if (!row) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    pcli_nodata nd = {{0}, {0}};
    for (size_t b = 0; b < nb; b++) {
        nd.has[b] = opt->has_nodata;
        nd.value[b] = opt->nodata;
    }
    unsigned char *px = im->pixels;
    for (size_t y = 0; y < im->height; y++) {
        if (fread(row, 1, rowbytes, fp) != rowbytes) {
            pcli_fail(err, errsize, "%s: truncated: the data end in row %zu of %zu", path, y, im->height);
            goto done;
        }
        /* .npy is little-endian, and so are the machines this runs on (checked by the tests). */
        unsigned char *dst = px + y * W * nb * es;
        for (size_t x = 0; x < W; x++)
            for (size_t b = 0; b < nb; b++)
                memcpy(dst + (x * nb + b) * es, row + (x * file_bands + (size_t)order[b] - 1) * es, es);
        pcli__mark_valid(im, y, 1, &nd, 0);
    }
    rc = pcli__image_finish(im, path, 0, err, errsize);
done:
    free(row);
    fclose(fp);
    return rc;
}

int pcli__npy_layout(const char *path, size_t *data_start, size_t *file_bands, char *err, size_t errsize)
{
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    *data_start = (size_t)h.data_start;
    *file_bands = h.ndim == 3 ? h.shape[2] : 1;
    fclose(fp);
    return 0;
}

int pcli_image_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    memset(im, 0, sizeof *im);
    int rc = pcli_has_extension(path, ".npy") ? npy_read_image(path, opt, im, err, errsize)
                                              : pcli__gdal_read(path, opt, im, err, errsize);
    if (rc)
        pcli_image_free(im);
    return rc;
}

/* The .npy type of each pcli_raster_spec type. */
static const char *const npy_descr[] = {"|u1", "<u2", "<f4", "<i4", "|i1", "<i2"};

static int npy_write_header(FILE *fp, const char *descr, const size_t *shape, int ndim)
{
    unsigned char h[PCLI_NPY_HEADER_MAX];
    size_t len = pcli_npy_header(h, descr, shape, ndim);
    return fwrite(h, 1, len, fp) == len ? 0 : -1;
}

/* Writes into `path` itself: the callers stage their outputs. Rows are expanded into a block of
 * about 16 MiB in the file's type (the smallest that holds the clusters, as every .npy of labels) and
 * written with one call each. */
static int npy_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                            size_t clusters, char *err, size_t errsize)
{
    pcli_label_type type = pcli_label_type_of_output(path, PCLI_LABELS_AUTO, clusters);
    size_t es = pcli_label_type_size(type);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(errno));
    size_t W = im->width, step = ((size_t)16 << 20) / (W * es) + 1;
    step = step < im->height ? step : im->height;
    unsigned char *block = pcli__alloc_large(step * W * es);
    size_t shape[2] = {im->height, im->width}, cursor = 0;
    if (!block) {
        fclose(fp);
        return pcli_fail(err, errsize, "%s: out of memory", path);
    }
    /* The errno of the first failure is the cause (ENOSPC on a full disk): fclose may succeed after
     * it, or fail with another. */
    errno = 0;
    int bad = npy_write_header(fp, npy_descr[pcli_label_type_raster(type)], shape, 2), e = errno;
    for (size_t y = 0; y < im->height && !bad; y += step) {
        size_t rows = im->height - y < step ? im->height - y : step;
        for (size_t r = 0; r < rows; r++)
            pcli__expand_span(im, y + r, 0, W, labels, compact, &cursor, type, block + r * W * es);
        bad = fwrite(block, es, rows * W, fp) != rows * W;
        e = errno;
    }
    free(block);
    errno = 0;
    if (fclose(fp) != 0 && !bad)
        bad = 1, e = errno;
    if (bad)
        return pcli_fail(err, errsize, "%s: write failed: %s", path, e ? strerror(e) : "I/O error");
    return 0;
}

int pcli_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact, size_t clusters,
                      const pcli_label_format *fmt, char *err, size_t errsize)
{
    if (pcli_has_extension(path, ".npy"))
        return npy_labels_write(path, im, labels, compact, clusters, err, errsize);
    static const pcli_label_format defaults;
    fmt = fmt ? fmt : &defaults;
    pcli_label_type type = pcli_label_type_for(fmt->type, clusters);
    if (clusters > pcli_label_type_max_clusters(type))
        return pcli_fail(err, errsize, "%s: %s labels hold at most %zu clusters (0-%zu; nodata %.0f), the run found "
                                       "%zu: choose a wider --ot, or leave --ot out",
                         path, pcli_label_type_name(type), pcli_label_type_max_clusters(type),
                         pcli_label_type_max_clusters(type) - 1, pcli_label_type_nodata(type), clusters);
    return pcli__gdal_labels_write(path, im, labels, compact, type, fmt, err, errsize);
}

/* The bytes of a label in a .npy of them: any signed integer type (this program's own label files
 * are |i1, <i2 or <i4, npy_format.h); 0 with the message in err for any other. */
static size_t npy_label_size(const char *path, const npy_header *h, char *err, size_t errsize)
{
    static const char *const types[] = {"|i1", "<i2", "<i4", "<i8"};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(h->descr, types[i]) == 0)
            return (size_t)1 << i;
    pcli_fail(err, errsize, "%s: labels must be |i1, <i2, <i4 or <i8, got '%s'", path, h->descr);
    return 0;
}

static int npy_labels_read_valid(const char *path, const pcli_image *im, size_t y0, size_t height, int32_t **labels,
                                 char *err, size_t errsize)
{
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    int rc = -1;
    size_t es = npy_label_size(path, &h, err, errsize);
    unsigned char *row = NULL;
    int32_t *out = NULL;
    if (!es)
        goto done;
    if (h.ndim != 2 || h.shape[0] != height || h.shape[1] != im->width) {
        pcli_fail(err, errsize, "%s: labels must have shape (%zu, %zu), the image's", path, height, im->width);
        goto done;
    }
    if (y0 && fseeko(fp, (off_t)(y0 * im->width * es), SEEK_CUR) != 0) {
        pcli_fail(err, errsize, "%s: cannot seek to row %zu: %s", path, y0, strerror(errno));
        goto done;
    }
    row = malloc(im->width * es);
    out = malloc((im->n_valid ? im->n_valid : 1) * sizeof *out);
    if (!row || !out) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    size_t k = 0;
    for (size_t y = 0; y < im->height; y++) {
        if (fread(row, es, im->width, fp) != im->width) {
            pcli_fail(err, errsize, "%s: truncated: the data end in row %zu of %zu", path, y0 + y, height);
            goto done;
        }
        for (size_t x = 0; x < im->width; x++) {
            if (!pcli_image_is_valid(im, y * im->width + x))
                continue;
            const unsigned char *b = row + x * es;
            uint64_t u = 0;
            for (size_t i = 0; i < es; i++) /* little-endian, sign-extended from its top byte */
                u |= (uint64_t)b[i] << (8 * i);
            if (es < 8 && (b[es - 1] & 0x80))
                u |= ~(uint64_t)0 << (8 * es);
            int64_t v = (int64_t)u;
            out[k++] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
        }
    }
    *labels = out;
    out = NULL;
    rc = 0;
done:
    free(row);
    free(out);
    fclose(fp);
    return rc;
}

int pcli_labels_read_valid(const char *path, const pcli_image *im, int32_t **labels, char *err, size_t errsize)
{
    return pcli_labels_read_valid_rows(path, im, 0, im->height, labels, err, errsize);
}

int pcli_labels_read_valid_rows(const char *path, const pcli_image *rows, size_t y0, size_t height, int32_t **labels,
                                char *err, size_t errsize)
{
    *labels = NULL;
    if (pcli_has_extension(path, ".npy"))
        return npy_labels_read_valid(path, rows, y0, height, labels, err, errsize);
    return pcli__gdal_labels_read_valid(path, rows, y0, height, labels, err, errsize);
}

int pcli_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    if (!pcli_has_extension(path, ".npy"))
        return pcli__gdal_labels_check(path, width, height, err, errsize);
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    size_t es = npy_label_size(path, &h, err, errsize);
    int rc = -1;
    if (es && (h.ndim != 2 || h.shape[0] != height || h.shape[1] != width))
        pcli_fail(err, errsize, "%s: labels must have shape (%zu, %zu), the image's", path, height, width);
    else if (es)
        rc = npy_check_size(fp, path, &h, es, err, errsize);
    fclose(fp);
    return rc;
}

/* ---------------------------------------------------------------- raster writer */

struct pcli_raster_writer {
    pcli_raster_spec spec;
    const char *path;
    FILE *npy;     /* .npy output */
    void *gdal;    /* GDAL dataset otherwise */
    off_t data_start; /* .npy: where row 0 starts */
    size_t next_row;  /* .npy: the row the file position is at */
};

static size_t spec_elem(const pcli_raster_spec *s) { return raster_bytes[s->type]; }

int pcli_raster_create(const char *path, const pcli_raster_spec *spec, pcli_raster_writer **out, char *err,
                       size_t errsize)
{
    pcli_raster_writer *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    w->spec = *spec;
    w->path = path;
    if (spec->type > 3 && !pcli_has_extension(path, ".npy")) {
        free(w);
        return pcli_fail(err, errsize, "%s: int8 and int16 rasters are written as .npy only", path);
    }
    if (pcli_has_extension(path, ".npy")) {
        size_t shape[3] = {spec->height, spec->width, spec->bands};
        w->npy = fopen(path, "wb");
        if (!w->npy || npy_write_header(w->npy, npy_descr[spec->type], shape, spec->bands > 1 ? 3 : 2) ||
            (w->data_start = ftello(w->npy)) < 0) {
            int e = errno;
            if (w->npy)
                fclose(w->npy);
            free(w);
            return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(e));
        }
    } else if (pcli__gdal_create(path, spec, &w->gdal, err, errsize)) {
        free(w);
        return -1;
    }
    *out = w;
    return 0;
}

int pcli_raster_write_rows(pcli_raster_writer *w, size_t y0, size_t rows, const void *data, char *err,
                           size_t errsize)
{
    if (w->npy) {
        size_t count = rows * w->spec.width * w->spec.bands, row = w->spec.width * w->spec.bands * spec_elem(&w->spec);
        errno = 0;
        if ((y0 != w->next_row && fseeko(w->npy, w->data_start + (off_t)(y0 * row), SEEK_SET) != 0) ||
            fwrite(data, spec_elem(&w->spec), count, w->npy) != count)
            return pcli_fail(err, errsize, "%s: write failed: %s", w->path, errno ? strerror(errno) : "I/O error");
        w->next_row = y0 + rows;
        return 0;
    }
    return pcli__gdal_write_rows(w->gdal, &w->spec, y0, rows, data, err, errsize, w->path);
}

void pcli_raster_block(const pcli_raster_writer *w, size_t *block_width, size_t *block_height)
{
    if (w->npy) {
        *block_width = w->spec.width;
        *block_height = 1;
    } else {
        pcli__gdal_block_size(w->gdal, block_width, block_height);
    }
}

void pcli_raster_set_statistics(pcli_raster_writer *w, size_t band, const double stats[4])
{
    if (!w->npy)
        pcli__gdal_set_statistics(w->gdal, band, stats);
}

int pcli_raster_close(pcli_raster_writer *w, char *err, size_t errsize)
{
    int rc = 0;
    if (w->npy) {
        errno = 0;
        if (fclose(w->npy) != 0)
            rc = pcli_fail(err, errsize, "%s: write failed: %s", w->path, errno ? strerror(errno) : "I/O error");
    } else {
        rc = pcli__gdal_close(w->gdal, err, errsize, w->path);
    }
    free(w);
    return rc;
}

void pcli_raster_abort(pcli_raster_writer *w)
{
    if (!w)
        return;
    if (w->npy)
        fclose(w->npy);
    else if (w->gdal)
        pcli__gdal_close(w->gdal, NULL, 0, w->path);
    free(w);
}
