/* Images held once, pixel-interleaved: NumPy (H, W[, B]) arrays read straight into the pixel buffer,
 * nodata/NaN validity bits, in-place compaction of the valid pixels, and label rasters as .npy. The
 * GDAL formats are in raster_gdal.c. */
#define _POSIX_C_SOURCE 200809L

#include "raster_internal.h"
#include "points_io.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    im->pixels = malloc(n * im->bands * es);
    im->valid = calloc((n + 7) / 8, 1);
    if (!im->pixels || !im->valid)
        return pcli_fail(err, errsize, "%s: out of memory for %zu x %zu pixels of %zu bands", path, im->width,
                         im->height, im->bands);
    for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
        im->lo[b] = INFINITY;
        im->hi[b] = -INFINITY;
    }
    return 0;
}

/* One loop per held type: this runs over every value of a 100-megapixel image. */
#define MARK_LOOP(T, IS_NAN)                                                                                   \
    do {                                                                                                       \
        const T *px = (const T *)im->pixels + first * B;                                                       \
        for (size_t i = first; i < last; i++, px += B) {                                                       \
            int ok = 1;                                                                                        \
            for (size_t b = 0; b < B; b++) {                                                                   \
                double v = in_int16 ? (double)(int16_t)(uint16_t)px[b] : (double)px[b];                       \
                if (IS_NAN(px[b]) || (nd->has[b] && v == nodata[b]))                                           \
                    ok = 0;                                                                                    \
            }                                                                                                  \
            if (!ok)                                                                                           \
                continue;                                                                                      \
            im->valid[i >> 3] |= (uint8_t)(1u << (i & 7));                                                    \
            for (size_t b = 0; b < B; b++) {                                                                   \
                double v = in_int16 ? (double)(int16_t)(uint16_t)px[b] : (double)px[b];                       \
                if (v < lo[b])                                                                                 \
                    lo[b] = v;                                                                                 \
                if (v > hi[b])                                                                                 \
                    hi[b] = v;                                                                                 \
            }                                                                                                  \
        }                                                                                                      \
    } while (0)
#define NEVER_NAN(x) 0
#define F32_NAN(x) (!isfinite(x)) /* NaN and infinities: no cluster can hold them */

void pcli__mark_valid(pcli_image *im, size_t y0, size_t rows, const pcli_nodata *nd, int in_int16)
{
    size_t B = im->bands, first = y0 * im->width, last = (y0 + rows) * im->width;
    double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS], nodata[PCLI_MAX_BANDS];
    /* A float32 pixel equals the nodata value as float32 holds it (0.1 is stored as 0.1f; one beyond
     * float32's range, as -DBL_MAX often is, as infinity, which is nodata anyway). */
    for (size_t b = 0; b < B; b++)
        nodata[b] = im->type != PCLI_PIX_F32     ? nd->value[b]
                    : fabs(nd->value[b]) > FLT_MAX ? (nd->value[b] > 0 ? INFINITY : -INFINITY)
                                                   : (double)(float)nd->value[b];
    memcpy(lo, im->lo, sizeof lo);
    memcpy(hi, im->hi, sizeof hi);
    if (im->type == PCLI_PIX_U8)
        MARK_LOOP(uint8_t, NEVER_NAN);
    else if (im->type == PCLI_PIX_U16)
        MARK_LOOP(uint16_t, NEVER_NAN);
    else
        MARK_LOOP(float, F32_NAN);
    memcpy(im->lo, lo, sizeof lo);
    memcpy(im->hi, hi, sizeof hi);
}

int pcli__image_finish(pcli_image *im, const char *path, int in_int16, char *err, size_t errsize)
{
    size_t n = im->width * im->height, count = 0;
    for (size_t i = 0; i < n / 8; i++)
        count += (size_t)__builtin_popcount(im->valid[i]);
    for (size_t i = n / 8 * 8; i < n; i++)
        count += pcli_image_is_valid(im, i);
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

void pcli_image_compact(pcli_image *im)
{
    size_t n = im->width * im->height, ps = im->bands * pcli_pixtype_size(im->type), out = 0;
    unsigned char *px = im->pixels;
    /* Runs of valid pixels move with one memmove each; images are mostly long runs. */
    for (size_t i = 0; i < n;) {
        if (!pcli_image_is_valid(im, i)) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < n && pcli_image_is_valid(im, i))
            i++;
        if (start != out)
            memmove(px + out * ps, px + start * ps, (i - start) * ps);
        out += i - start;
    }
}

void pcli__expand_row(const pcli_image *im, size_t y, const int32_t *labels, int compact, size_t *cursor,
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

int pcli_image_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    memset(im, 0, sizeof *im);
    int rc = pcli_has_extension(path, ".npy") ? npy_read_image(path, opt, im, err, errsize)
                                              : pcli__gdal_read(path, opt, im, err, errsize);
    if (rc)
        pcli_image_free(im);
    return rc;
}

/* Version 1.0 header padded to 64 bytes, as numpy writes it. */
static int npy_write_header(FILE *fp, const char *descr, const size_t *shape, int ndim)
{
    char dict[256], sh[96];
    if (ndim == 2)
        snprintf(sh, sizeof sh, "(%zu, %zu)", shape[0], shape[1]);
    else
        snprintf(sh, sizeof sh, "(%zu, %zu, %zu)", shape[0], shape[1], shape[2]);
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, sh);
    size_t pad = (64 - (10 + (size_t)len + 1) % 64) % 64, hlen = (size_t)len + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    if (fwrite(pre, 1, 10, fp) != 10 || fwrite(dict, 1, (size_t)len, fp) != (size_t)len)
        return -1;
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', fp) == EOF)
            return -1;
    return fputc('\n', fp) == EOF ? -1 : 0;
}

/* Writes into `path` itself: the callers stage their outputs. */
static int npy_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact, char *err,
                            size_t errsize)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(errno));
    int32_t *row = malloc(im->width * sizeof *row);
    size_t shape[2] = {im->height, im->width}, cursor = 0;
    if (!row) {
        fclose(fp);
        return pcli_fail(err, errsize, "%s: out of memory", path);
    }
    /* The errno of the first failure is the cause (ENOSPC on a full disk): fclose may succeed after
     * it, or fail with another. */
    errno = 0;
    int bad = npy_write_header(fp, "<i4", shape, 2), e = errno;
    for (size_t y = 0; y < im->height && !bad; y++) {
        pcli__expand_row(im, y, labels, compact, &cursor, row);
        bad = fwrite(row, sizeof *row, im->width, fp) != im->width;
        e = errno;
    }
    free(row);
    errno = 0;
    if (fclose(fp) != 0 && !bad)
        bad = 1, e = errno;
    if (bad)
        return pcli_fail(err, errsize, "%s: write failed: %s", path, e ? strerror(e) : "I/O error");
    return 0;
}

int pcli_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact, char *err,
                      size_t errsize)
{
    if (pcli_has_extension(path, ".npy"))
        return npy_labels_write(path, im, labels, compact, err, errsize);
    return pcli__gdal_labels_write(path, im, labels, compact, err, errsize);
}

static int npy_labels_read_valid(const char *path, const pcli_image *im, int32_t **labels, char *err,
                                 size_t errsize)
{
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    int rc = -1;
    size_t es = strcmp(h.descr, "<i4") == 0 ? 4 : strcmp(h.descr, "<i8") == 0 ? 8 : 0;
    unsigned char *row = NULL;
    int32_t *out = NULL;
    if (!es) {
        pcli_fail(err, errsize, "%s: labels must be <i4 or <i8, got '%s'", path, h.descr);
        goto done;
    }
    if (h.ndim != 2 || h.shape[0] != im->height || h.shape[1] != im->width) {
        pcli_fail(err, errsize, "%s: labels must have shape (%zu, %zu), the image's", path, im->height, im->width);
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
            pcli_fail(err, errsize, "%s: truncated: the data end in row %zu of %zu", path, y, im->height);
            goto done;
        }
        for (size_t x = 0; x < im->width; x++) {
            if (!pcli_image_is_valid(im, y * im->width + x))
                continue;
            int64_t v;
            if (es == 4) {
                int32_t v32;
                memcpy(&v32, row + x * 4, 4);
                v = v32;
            } else {
                memcpy(&v, row + x * 8, 8);
            }
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
    *labels = NULL;
    if (pcli_has_extension(path, ".npy"))
        return npy_labels_read_valid(path, im, labels, err, errsize);
    return pcli__gdal_labels_read_valid(path, im, labels, err, errsize);
}

int pcli_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    if (!pcli_has_extension(path, ".npy"))
        return pcli__gdal_labels_check(path, width, height, err, errsize);
    FILE *fp;
    npy_header h;
    if (npy_open(path, &fp, &h, err, errsize))
        return -1;
    size_t es = strcmp(h.descr, "<i4") == 0 ? 4 : strcmp(h.descr, "<i8") == 0 ? 8 : 0;
    int rc = -1;
    if (!es)
        pcli_fail(err, errsize, "%s: labels must be <i4 or <i8, got '%s'", path, h.descr);
    else if (h.ndim != 2 || h.shape[0] != height || h.shape[1] != width)
        pcli_fail(err, errsize, "%s: labels must have shape (%zu, %zu), the image's", path, height, width);
    else
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
};

static size_t spec_elem(const pcli_raster_spec *s) { return s->type == 0 ? 1 : s->type == 1 ? 2 : 4; }

int pcli_raster_create(const char *path, const pcli_raster_spec *spec, pcli_raster_writer **out, char *err,
                       size_t errsize)
{
    static const char *const descr[] = {"|u1", "<u2", "<f4", "<i4"};
    pcli_raster_writer *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    w->spec = *spec;
    w->path = path;
    if (pcli_has_extension(path, ".npy")) {
        size_t shape[3] = {spec->height, spec->width, spec->bands};
        w->npy = fopen(path, "wb");
        if (!w->npy || npy_write_header(w->npy, descr[spec->type], shape, spec->bands > 1 ? 3 : 2)) {
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
        size_t count = rows * w->spec.width * w->spec.bands;
        errno = 0;
        if (fwrite(data, spec_elem(&w->spec), count, w->npy) != count)
            return pcli_fail(err, errsize, "%s: write failed: %s", w->path, errno ? strerror(errno) : "I/O error");
        return 0;
    }
    return pcli__gdal_write_rows(w->gdal, &w->spec, y0, rows, data, err, errsize, w->path);
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
