/* Windows of rows of an image (raster_window.h): a .npy through a mapping of each window's bytes, GDAL
 * formats through one dataset handle, both marked valid and held as pcli_image_read holds the whole
 * image (raster_io.c's validity marking, raster_gdal.c's types and narrowing). */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise */

#include "raster_window.h"
#include "raster_internal.h"
#include "points_io.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef PARCLUST_HAVE_GDAL
#include <cpl_conv.h>
#include <gdal.h>
#endif

/* Wide bands (Float64, Int32, ...) come as doubles through a buffer of at most this many bytes (or one
 * row), narrowed to float32 chunk by chunk. */
#define WIDE_BUFFER ((size_t)4 << 20)

struct pcli_window_reader {
    char *path;
    size_t width, height, nb;
    pcli_pixtype type;
    int int16, wide;
    pcli_nodata nd;
    int order[PCLI_MAX_BANDS];
    size_t block_rows, block_row_bytes;
    /* .npy: the file, where its data start, its bands; the window mapped now (in place) */
    int fd;
    size_t data_start, file_bands;
    int identity, in_place; /* every band, in order; and no pixel can be nodata */
    void *map;
    size_t map_len;
    /* GDAL */
    void *ds;
    double *scratch;
    size_t scratch_rows;
    /* An uncompressed GeoTIFF in strips holding exactly the held pixels: its rows read with pread
     * (raw_fd) from the strips' offsets, without GDAL's block cache and copies (5x faster). */
    int raw_fd;
};

void pcli_window_close(pcli_window_reader *r)
{
    if (!r)
        return;
    if (r->map)
        munmap(r->map, r->map_len);
    if (r->fd >= 0)
        close(r->fd);
    if (r->raw_fd >= 0)
        close(r->raw_fd);
#ifdef PARCLUST_HAVE_GDAL
    if (r->ds)
        GDALClose(r->ds);
#endif
    free(r->scratch);
    free(r->path);
    free(r);
}

size_t pcli_window_block_rows(const pcli_window_reader *r) { return r->block_rows ? r->block_rows : 1; }

size_t pcli_window_block_row_bytes(const pcli_window_reader *r) { return r->block_row_bytes; }

size_t pcli_window_own_bytes(const pcli_window_reader *r)
{
    if (!r->wide)
        return 0;
    size_t row = r->width * r->nb * sizeof(double), rows = WIDE_BUFFER / row;
    return (rows ? rows : 1) * row;
}

/* ---------------------------------------------------------------- .npy */

/* The header as pcli_image_read checks it: its own read stopped by this hook before any pixel. */
typedef struct {
    pcli_image header;
    int seen;
} capture;

static int capture_header(const pcli_image *im, void *ctx, char *err, size_t errsize)
{
    capture *c = ctx;
    c->header = *im;
    c->seen = 1;
    (void)err, (void)errsize;
    return -1;
}

static int npy_open(pcli_window_reader *r, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    capture c;
    memset(&c, 0, sizeof c);
    pcli_read_options o = *opt;
    o.check_header = capture_header;
    o.check_ctx = &c;
    pcli_image scratch;
    if (pcli_image_read(r->path, &o, &scratch, err, errsize) == 0) { /* cannot happen: the hook stops it */
        pcli_image_free(&scratch);
        return pcli_fail(err, errsize, "%s: internal error: the header was not seen", r->path);
    }
    if (!c.seen)
        return -1; /* err says why */
    *im = c.header;
    im->pixels = NULL;
    im->valid = NULL;
    if (pcli__npy_layout(r->path, &r->data_start, &r->file_bands, err, errsize))
        return -1;
    r->width = im->width;
    r->height = im->height;
    r->nb = im->bands;
    r->type = im->type;
    r->block_rows = 1;
    r->identity = r->nb == r->file_bands;
    for (size_t b = 0; b < r->nb; b++) {
        r->order[b] = opt->bands ? opt->bands[b] : (int)b + 1;
        r->identity &= r->order[b] == (int)b + 1;
        r->nd.has[b] = opt->has_nodata;
        r->nd.value[b] = opt->nodata;
    }
    r->in_place = r->identity && !im->may_have_nodata;
    if ((r->fd = open(r->path, O_RDONLY)) < 0)
        return pcli_fail(err, errsize, "%s: cannot open: %s", r->path, strerror(errno));
    return 0;
}

/* Maps the bytes of rows y0 .. y0 + rows - 1 (from the page that holds their first byte). */
static const unsigned char *npy_map(pcli_window_reader *r, size_t y0, size_t rows, char *err, size_t errsize)
{
    size_t es = pcli_pixtype_size(r->type), row = r->width * r->file_bands * es;
    size_t from = r->data_start + y0 * row, page = (size_t)sysconf(_SC_PAGESIZE);
    size_t start = from / page * page;
    r->map_len = from - start + rows * row;
    r->map = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, r->fd, (off_t)start);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        pcli_fail(err, errsize, "%s: cannot map rows %zu-%zu: %s", r->path, y0, y0 + rows - 1, strerror(errno));
        return NULL;
    }
    (void)madvise(r->map, r->map_len, MADV_WILLNEED);
    return (const unsigned char *)r->map + (from - start);
}

static void npy_unmap(pcli_window_reader *r)
{
    if (r->map)
        munmap(r->map, r->map_len); /* its pages leave this process (the page cache keeps them) */
    r->map = NULL;
}

static int npy_read(pcli_window_reader *r, size_t y0, size_t rows, void *buf, pcli_image *win, char *err,
                    size_t errsize)
{
    const unsigned char *src = npy_map(r, y0, rows, err, errsize);
    if (!src)
        return -1;
    size_t es = pcli_pixtype_size(r->type), n = rows * r->width, fb = r->file_bands, nb = r->nb;
    if (r->in_place) {
        win->pixels = (void *)src; /* read-only: nothing writes pixels that cannot be nodata */
        return 0;
    }
    unsigned char *dst = buf;
    if (r->identity)
        memcpy(dst, src, n * nb * es);
    else
        for (size_t i = 0; i < n; i++)
            for (size_t b = 0; b < nb; b++)
                memcpy(dst + (i * nb + b) * es, src + (i * fb + (size_t)r->order[b] - 1) * es, es);
    npy_unmap(r);
    win->pixels = buf;
    return 0;
}

/* ---------------------------------------------------------------- GDAL */

#ifdef PARCLUST_HAVE_GDAL

/* Whether the file's bytes are the held pixels as they are: a little-endian GeoTIFF, uncompressed,
 * in strips of whole rows, pixel-interleaved (or one band), every band chosen in order, all of the
 * held type at full bit depth. Then raw_fd is opened for raw_read. */
static void raw_open(pcli_window_reader *r, GDALDatasetH ds, int count, size_t block_width)
{
    GDALDriverH drv = GDALGetDatasetDriver(ds);
    const char *interleave = GDALGetMetadataItem(ds, "INTERLEAVE", "IMAGE_STRUCTURE");
    GDALDataType want = r->type == PCLI_PIX_U8 ? GDT_Byte : r->type == PCLI_PIX_F32 ? GDT_Float32
                        : r->int16                ? GDT_Int16
                                                  : GDT_UInt16;
    int ok = drv && strcmp(GDALGetDriverShortName(drv), "GTiff") == 0 && !r->wide && (size_t)count == r->nb &&
             block_width == r->width && !GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE") &&
             (count == 1 || (interleave && strcmp(interleave, "PIXEL") == 0));
    for (int b = 0; ok && b < count; b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
        ok = r->order[b] == b + 1 && GDALGetRasterDataType(band) == want &&
             !GDALGetMetadataItem(band, "NBITS", "IMAGE_STRUCTURE");
    }
    unsigned char magic[2] = {0, 0};
    int fd = ok ? open(r->path, O_RDONLY) : -1;
    if (fd >= 0 && (pread(fd, magic, 2, 0) != 2 || magic[0] != 'I' || magic[1] != 'I')) { /* big-endian: GDAL swaps */
        close(fd);
        fd = -1;
    }
    r->raw_fd = fd;
}

/* Rows y0 .. y0 + rows - 1 of a file raw_open took: each strip's part read where GDAL says the strip
 * is (BLOCK_OFFSET, BLOCK_SIZE), runs of strips that follow one another in the file in one pread (dst
 * NULL: only announced to the kernel, which reads them ahead). 1: a strip GDAL has no offset for (a
 * sparse file), which GDAL itself then reads. */
static int raw_read(pcli_window_reader *r, size_t y0, size_t rows, unsigned char *dst, char *err, size_t errsize)
{
    GDALRasterBandH band = GDALGetRasterBand(r->ds, 1);
    size_t row = r->width * r->nb * pcli_pixtype_size(r->type), bh = r->block_rows;
    size_t y = y0, end = y0 + rows;
    while (y < end) {
        off_t at = 0;
        size_t len = 0, first = y;
        for (size_t strip = y / bh; y < end; strip++) { /* a run of strips contiguous in the file */
            char key[64];
            snprintf(key, sizeof key, "BLOCK_OFFSET_0_%zu", strip);
            const char *o = GDALGetMetadataItem(band, key, "TIFF");
            snprintf(key, sizeof key, "BLOCK_SIZE_0_%zu", strip);
            const char *z = GDALGetMetadataItem(band, key, "TIFF");
            long long off = o ? atoll(o) : 0, size = z ? atoll(z) : 0;
            size_t r0 = y - strip * bh, r1 = end - strip * bh < bh ? end - strip * bh : bh;
            r1 = strip * bh + r1 > r->height ? r->height - strip * bh : r1;
            if (off <= 0 || size < (long long)(r1 * row))
                return 1; /* missing or short: GDAL knows what it holds */
            off_t from = (off_t)off + (off_t)(r0 * row);
            if (len && from != at + (off_t)len)
                break;
            if (!len)
                at = from;
            len += (r1 - r0) * row;
            y = strip * bh + r1;
        }
        if (!dst) {
            (void)posix_fadvise(r->raw_fd, at, (off_t)len, POSIX_FADV_WILLNEED);
            continue;
        }
        for (size_t done = 0; done < len;) {
            ssize_t got = pread(r->raw_fd, dst + (first - y0) * row + done, len - done, at + (off_t)done);
            if (got <= 0)
                return pcli_fail(err, errsize, "%s: read error in rows %zu-%zu (corrupt or truncated file?): %s",
                                 r->path, first, y - 1, got < 0 ? strerror(errno) : "the file ends before them");
            done += (size_t)got;
        }
    }
    return 0;
}

static int gdal_open(pcli_window_reader *r, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    const char *path = r->path;
    if (pcli_check_input_file(path, err, errsize))
        return -1;
    pcli__gdal_start();
    /* No GTIFF_VIRTUAL_MEM_IO here (pcli_image_read sets it): the mapped file's pages would count in
     * this process's resident memory, the very thing a streamed run bounds. */
    GDALDatasetH ds = r->ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds)
        return pcli_fail(err, errsize, "%s: GDAL cannot read it as a raster (corrupt, truncated, or not a raster "
                         "format GDAL recognises): %s", path, pcli__gdal_error());
    int count = GDALGetRasterCount(ds);
    if (count < 1)
        return pcli_fail(err, errsize, "%s: has no raster bands", path);
    size_t nb = opt->bands ? opt->nbands : (size_t)count;
    if (nb == 0 || nb > PCLI_MAX_BANDS)
        return pcli_fail(err, errsize, "%s: %zu bands; at most %d can be used (choose some with --bands)", path, nb,
                         PCLI_MAX_BANDS);
    for (size_t b = 0; b < nb; b++) {
        r->order[b] = opt->bands ? opt->bands[b] : (int)b + 1;
        if (r->order[b] < 1 || r->order[b] > count)
            return pcli_fail(err, errsize, "%s: no band %d (the image has %d band%s)", path, r->order[b], count,
                             count == 1 ? "" : "s");
    }
    im->width = r->width = (size_t)GDALGetRasterXSize(ds);
    im->height = r->height = (size_t)GDALGetRasterYSize(ds);
    im->bands = r->nb = nb;
    if (pcli__gdal_choose_type(ds, r->order, nb, im, &r->int16, &r->wide, path, err, errsize))
        return -1;
    r->type = im->type;
    im->offset = r->int16 ? 32768 : 0;
    im->may_have_nodata = im->type == PCLI_PIX_F32;
    for (size_t b = 0; b < nb; b++) { /* as pcli__gdal_read */
        int has = 0;
        double v = GDALGetRasterNoDataValue(GDALGetRasterBand(ds, r->order[b]), &has);
        r->nd.has[b] = opt->has_nodata || has;
        r->nd.value[b] = opt->has_nodata ? opt->nodata : v;
        r->nd.has[b] = r->nd.has[b] && pcli__nodata_can_match(im->type, r->int16, r->nd.value[b]);
        im->may_have_nodata |= r->nd.has[b];
    }
    if (GDALGetGeoTransform(ds, im->geotransform) == CE_None)
        im->has_geotransform = 1;
    const char *wkt = GDALGetProjectionRef(ds);
    if (wkt && *wkt && !(im->projection = strdup(wkt)))
        return pcli_fail(err, errsize, "%s: out of memory", path);
    int bw = 0, bh = 0;
    GDALGetBlockSize(GDALGetRasterBand(ds, r->order[0]), &bw, &bh);
    r->block_rows = bh > 0 ? (size_t)bh : 1;
    size_t bwide = bw > 0 ? (size_t)bw : r->width, across = (r->width + bwide - 1) / bwide;
    GDALDataType ft = GDALGetRasterDataType(GDALGetRasterBand(ds, r->order[0]));
    r->block_row_bytes = across * bwide * r->block_rows * (size_t)count * (size_t)GDALGetDataTypeSizeBytes(ft);
    if (r->wide) {
        size_t row = r->width * nb * sizeof(double);
        r->scratch_rows = WIDE_BUFFER / row ? WIDE_BUFFER / row : 1;
        if (!(r->scratch = malloc(r->scratch_rows * row)))
            return pcli_fail(err, errsize, "%s: out of memory", path);
    }
    raw_open(r, ds, count, (size_t)bw);
    return 0;
}

static int gdal_read(pcli_window_reader *r, size_t y0, size_t rows, void *buf, pcli_image *win, char *err,
                     size_t errsize)
{
    size_t W = r->width, nb = r->nb, es = pcli_pixtype_size(r->type), ps = es * nb;
    GDALDataType type = r->type == PCLI_PIX_U8 ? GDT_Byte : r->type == PCLI_PIX_F32 ? GDT_Float32
                        : r->int16                ? GDT_Int16
                                                  : GDT_UInt16;
    if (r->raw_fd >= 0) {
        int rc = raw_read(r, y0, rows, buf, err, errsize);
        if (rc <= 0) {
            win->pixels = buf;
            return rc;
        }
    }
    size_t step = r->wide ? r->scratch_rows : rows;
    for (size_t y = y0; y < y0 + rows; y += step) {
        size_t n = y0 + rows - y < step ? y0 + rows - y : step;
        unsigned char *dst = (unsigned char *)buf + (y - y0) * W * ps;
        size_t xs = r->wide ? sizeof(double) : es;
        CPLErr e = GDALDatasetRasterIOEx(r->ds, GF_Read, 0, (int)y, (int)W, (int)n, r->wide ? (void *)r->scratch : dst,
                                         (int)W, (int)n, r->wide ? GDT_Float64 : type, (int)nb, r->order,
                                         (GSpacing)(xs * nb), (GSpacing)(W * xs * nb), (GSpacing)xs, NULL);
        if (e != CE_None)
            return pcli_fail(err, errsize, "%s: read error in rows %zu-%zu (corrupt or truncated file?): %s", r->path,
                             y, y + n - 1, pcli__gdal_error());
        if (r->wide)
            pcli__gdal_narrow(r->scratch, (float *)(void *)dst, n * W, nb, &r->nd, win);
    }
    win->pixels = buf;
    return 0;
}

int pcli_window_stats(pcli_window_reader *r, double *lo, double *hi, char *why, size_t whysize)
{
    if (!r->ds)
        return pcli_fail(why, whysize, ".npy files carry no band statistics");
    for (size_t b = 0; b < r->nb; b++) {
        GDALRasterBandH band = GDALGetRasterBand(r->ds, r->order[b]);
        double mn = 0, mx = 0;
        const char *approx = GDALGetMetadataItem(band, "STATISTICS_APPROXIMATE", NULL);
        if (approx && strcasecmp(approx, "YES") == 0)
            return pcli_fail(why, whysize, "band %d has approximate statistics only", r->order[b]);
        if (GDALGetRasterStatistics(band, FALSE, FALSE, &mn, &mx, NULL, NULL) != CE_None)
            return pcli_fail(why, whysize, "band %d has no statistics", r->order[b]);
        if (r->type == PCLI_PIX_F32) { /* the values as float32 holds them (rounding keeps the order) */
            mn = (double)(float)mn;
            mx = (double)(float)mx;
        }
        if (!isfinite(mn) || !isfinite(mx) || mn > mx)
            return pcli_fail(why, whysize, "band %d's statistics give no finite range (%g to %g)", r->order[b], mn, mx);
        lo[b] = mn + (r->int16 ? 32768 : 0);
        hi[b] = mx + (r->int16 ? 32768 : 0);
    }
    return 0;
}

size_t pcli_window_cache_cap(size_t bytes)
{
    pcli__gdal_start();
    if (CPLGetConfigOption("GDAL_CACHEMAX", NULL))
        return (size_t)GDALGetCacheMax64();
    GDALSetCacheMax64((GIntBig)bytes);
    return bytes;
}

#else

static int gdal_open(pcli_window_reader *r, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    (void)opt, (void)im;
    return pcli_fail(err, errsize, "%s: %s", r->path, PCLI_NO_GDAL_MESSAGE);
}

static int gdal_read(pcli_window_reader *r, size_t y0, size_t rows, void *buf, pcli_image *win, char *err,
                     size_t errsize)
{
    (void)y0, (void)rows, (void)buf, (void)win;
    return pcli_fail(err, errsize, "%s: %s", r->path, PCLI_NO_GDAL_MESSAGE);
}

int pcli_window_stats(pcli_window_reader *r, double *lo, double *hi, char *why, size_t whysize)
{
    (void)r, (void)lo, (void)hi;
    return pcli_fail(why, whysize, ".npy files carry no band statistics");
}

size_t pcli_window_cache_cap(size_t bytes)
{
    (void)bytes;
    return 0;
}

#endif

/* ---------------------------------------------------------------- both */

int pcli_window_open(const char *path, const pcli_read_options *opt, pcli_window_reader **reader, pcli_image *im,
                     char *err, size_t errsize)
{
    *reader = NULL;
    memset(im, 0, sizeof *im);
    pcli_window_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return pcli_fail(err, errsize, "%s: out of memory", path);
    }
    r->fd = r->raw_fd = -1;
    int npy = pcli_has_extension(path, ".npy");
    im->is_npy = npy;
    if (npy ? npy_open(r, opt, im, err, errsize) : gdal_open(r, opt, im, err, errsize)) {
        pcli_window_close(r);
        pcli_image_free(im);
        return -1;
    }
    for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
        im->lo[b] = INFINITY;
        im->hi[b] = -INFINITY;
    }
    *reader = r;
    return 0;
}

/* The window's validity bits and band ranges, in chunks of rows on every core (a streamed run does
 * this for every pixel of every pass: on one core it was a tenth of the run). A chunk starts on a
 * multiple of 8 rows, so no byte of bits is shared between two. */
static void mark_rows(const pcli_window_reader *r, pcli_image *win, size_t rows)
{
    enum { MOST = 64 };
    pcli_image part[MOST];
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    size_t chunks = (size_t)threads * 2 < MOST ? (size_t)threads * 2 : MOST;
    size_t per = ((rows + chunks - 1) / chunks + 7) / 8 * 8;
    chunks = (rows + per - 1) / per;
#pragma omp parallel for schedule(dynamic)
    for (long c = 0; c < (long)chunks; c++) {
        size_t y = (size_t)c * per;
        part[c] = *win;
        for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
            part[c].lo[b] = INFINITY;
            part[c].hi[b] = -INFINITY;
        }
        pcli__mark_valid(&part[c], y, rows - y < per ? rows - y : per, &r->nd, r->int16);
    }
    for (size_t c = 0; c < chunks; c++)
        for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
            win->lo[b] = part[c].lo[b] < win->lo[b] ? part[c].lo[b] : win->lo[b];
            win->hi[b] = part[c].hi[b] > win->hi[b] ? part[c].hi[b] : win->hi[b];
        }
}

int pcli_window_read(pcli_window_reader *r, size_t y0, size_t rows, void *buf, pcli_image *win, char *err,
                     size_t errsize)
{
    if (r->map)
        npy_unmap(r); /* the previous window, read in place */
    if (rows == 0 || y0 + rows > r->height)
        return pcli_fail(err, errsize, "%s: rows %zu-%zu are outside the image's %zu", r->path, y0, y0 + rows - 1,
                         r->height);
    win->width = r->width;
    win->height = rows;
    win->bands = r->nb;
    win->type = r->type;
    win->offset = 0;
    if (r->fd >= 0 ? npy_read(r, y0, rows, buf, win, err, errsize) : gdal_read(r, y0, rows, buf, win, err, errsize))
        return -1;
    size_t n = rows * r->width;
    memset(win->valid, 0, (n + 7) / 8);
    mark_rows(r, win, rows);
    win->n_valid = pcli__count_valid(win, 0, n);
    if (r->int16) { /* as pcli__image_finish: the sign bit flipped, exact and order-preserving */
        uint16_t *px = win->pixels;
        for (size_t i = 0; i < n * r->nb; i++)
            px[i] ^= 0x8000u;
        win->offset = 32768;
    }
    return 0;
}

void pcli_window_labels(const pcli_image *win, const int32_t *labels, pcli_label_type type, void *out)
{
    size_t W = win->width, es = pcli_label_type_size(type), cursor = 0;
    for (size_t y = 0; y < win->height; y++)
        pcli__expand_span(win, y, 0, W, labels, 1, &cursor, type, (unsigned char *)out + y * W * es);
}

void pcli_window_prefetch(pcli_window_reader *r, size_t y0, size_t rows)
{
    if (rows == 0 || y0 + rows > r->height)
        return;
    if (r->fd >= 0) { /* .npy: the window's bytes */
        size_t row = r->width * r->file_bands * pcli_pixtype_size(r->type);
        (void)posix_fadvise(r->fd, (off_t)(r->data_start + y0 * row), (off_t)(rows * row), POSIX_FADV_WILLNEED);
    }
#ifdef PARCLUST_HAVE_GDAL
    else if (r->raw_fd >= 0) {
        char err[8];
        (void)raw_read(r, y0, rows, NULL, err, sizeof err);
    }
#endif
}
