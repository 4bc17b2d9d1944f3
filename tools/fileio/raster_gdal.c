/* Rasters through GDAL: any format GDAL reads, read into one pixel-interleaved buffer in windows of
 * many rows (a GeoTIFF by several threads, each through its own dataset handle); label GeoTIFFs of
 * the smallest type, with the input's georeferencing, compressed on every core. Without GDAL every
 * call says so. */
#define _POSIX_C_SOURCE 200809L

#include "raster_internal.h"
#include "points_io.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PARCLUST_HAVE_GDAL

int pcli_have_gdal(void) { return 0; }

int pcli__gdal_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    (void)opt, (void)im;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                            pcli_label_type type, const pcli_label_format *fmt, char *err, size_t errsize)
{
    (void)im, (void)labels, (void)compact, (void)type, (void)fmt;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_label_format_check(const pcli_label_format *fmt, char *warning, size_t warnsize, char *err,
                                  size_t errsize)
{
    (void)fmt, (void)warning, (void)warnsize;
    return pcli_fail(err, errsize, "--co: %s", PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_labels_read_valid(const char *path, const pcli_image *im, size_t y0, size_t height, int32_t **labels,
                                 char *err, size_t errsize)
{
    (void)im, (void)y0, (void)height, (void)labels;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    (void)width, (void)height;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_create(const char *path, const pcli_raster_spec *spec, void **handle, char *err, size_t errsize)
{
    (void)spec, (void)handle;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_write_rows(void *handle, const pcli_raster_spec *spec, size_t y0, size_t rows, const void *data,
                          char *err, size_t errsize, const char *path)
{
    (void)handle, (void)spec, (void)y0, (void)rows, (void)data;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_close(void *handle, char *err, size_t errsize, const char *path)
{
    (void)handle;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

void pcli__gdal_block_size(void *handle, size_t *bw, size_t *bh)
{
    (void)handle;
    *bw = *bh = 1;
}

void pcli__gdal_set_statistics(void *handle, size_t band, const double stats[4]) { (void)handle, (void)band, (void)stats; }

#else

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <cpl_vsi.h>
#include <gdal.h>
#include <ogr_srs_api.h>
#include <pthread.h>

int pcli_have_gdal(void) { return 1; }

/* GDAL prints its errors by default; the programs' rule is one line of their own. The first failure is kept
 * here and put into that line, and the first warning beside it (the --co check says it). Readers on
 * several threads may fail at once: the lock keeps one message whole. */
static char gdal_first_error[512], gdal_first_warning[512];
static pthread_mutex_t gdal_error_lock = PTHREAD_MUTEX_INITIALIZER;

static void CPL_STDCALL keep_error(CPLErr cls, CPLErrorNum num, const char *msg)
{
    (void)num;
    char *keep = cls >= CE_Failure ? gdal_first_error : cls == CE_Warning ? gdal_first_warning : NULL;
    if (!keep)
        return;
    pthread_mutex_lock(&gdal_error_lock);
    if (!keep[0])
        snprintf(keep, sizeof gdal_first_error, "%s", msg ? msg : "GDAL error");
    pthread_mutex_unlock(&gdal_error_lock);
}

static void gdal_start(void)
{
    static int registered;
    if (!registered) {
        GDALAllRegister();
        CPLSetErrorHandler(keep_error);
        /* The pixels are read straight into their one buffer and the labels written from theirs, so
         * GDAL's block cache (5% of the machine's memory by default) would only add to the peak. */
        if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL))
            GDALSetCacheMax64((GIntBig)64 << 20);
        registered = 1;
    }
    gdal_first_error[0] = gdal_first_warning[0] = '\0';
    CPLErrorReset();
}

static const char *gdal_error(void) { return gdal_first_error[0] ? gdal_first_error : "unknown GDAL error"; }

/* Rows per RasterIO call ("window"): at most about `budget` bytes and at most a quarter of each
 * reader's share of the image (so the validity pass runs on rows still in cache), a multiple of 8 rows
 * (the readers' validity bytes never overlap) and, where that allows, of the file's block height (no
 * block is decoded twice, by two windows or two readers). */
static size_t window_rows(size_t height, size_t row_bytes, size_t block_height, size_t readers, size_t budget)
{
    size_t rows = budget / (row_bytes ? row_bytes : 1), share = height / (4 * readers);
    rows = share < rows ? share : rows;
    rows = rows < 8 ? 8 : rows / 8 * 8;
    size_t unit = block_height ? block_height : 1;
    while (unit % 8)
        unit *= 2; /* lcm(block height, 8) */
    if (unit <= 4 * rows)
        rows = rows < unit ? unit : rows / unit * unit;
    return rows;
}

/* Opens path for reading. An uncompressed GeoTIFF is then read through a mapping of the file, copied
 * from it straight into the caller's buffer (GTIFF_VIRTUAL_MEM_IO), not read into libtiff's buffers
 * and GDAL's block cache first: 0.28 against 0.38 s for the 400 MB of the 100-Mpix scene on 2
 * threads, 0.47 against 0.69 s on one (bench/RESULTS.md). GDAL reads the option when it opens a file,
 * and uses the mapping only for what is uncompressed and a local file; a value the user set is kept. */
static GDALDatasetH open_for_reading(const char *path)
{
    int set = !CPLGetConfigOption("GTIFF_VIRTUAL_MEM_IO", NULL);
    if (set)
        CPLSetThreadLocalConfigOption("GTIFF_VIRTUAL_MEM_IO", "IF_ENOUGH_RAM");
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (set)
        CPLSetThreadLocalConfigOption("GTIFF_VIRTUAL_MEM_IO", NULL);
    return ds;
}

static GDALDatasetH open_raster(const char *path, char *err, size_t errsize)
{
    /* GDAL says nothing of a directory or an empty file, and nothing of a format no driver knows (only
     * with GDAL_OF_VERBOSE_ERROR, "not recognized as a supported file format", for all three alike). */
    if (pcli_check_input_file(path, err, errsize))
        return NULL;
    gdal_start();
    GDALDatasetH ds = open_for_reading(path);
    if (!ds && gdal_first_error[0])
        pcli_fail(err, errsize, "%s: GDAL cannot read it as a raster (corrupt or truncated?): %s", path,
                  gdal_first_error);
    else if (!ds)
        pcli_fail(err, errsize, "%s: not a raster format GDAL recognises", path);
    else if (GDALGetRasterCount(ds) < 1) {
        pcli_fail(err, errsize, "%s: has no raster bands", path);
        GDALClose(ds);
        ds = NULL;
    }
    return ds;
}

/* The held type: uint8 when every chosen band is Byte, uint16 when all are Byte/UInt16 or all Int16
 * (shifted), float32 otherwise (Float64, Int32, UInt32 are rounded to float32). */
static int choose_type(GDALDatasetH ds, const int *order, size_t nb, pcli_image *im, int *int16, int *wide,
                       const char *path, char *err, size_t errsize)
{
    int all_byte = 1, all_u16 = 1, all_i16 = 1;
    GDALDataType first = GDT_Unknown;
    for (size_t b = 0; b < nb; b++) {
        GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, order[b]));
        if (GDALDataTypeIsComplex(t))
            return pcli_fail(err, errsize, "%s: band %d is complex (%s); only real bands can be segmented", path,
                             order[b], GDALGetDataTypeName(t));
        if (b == 0)
            first = t;
        all_byte &= t == GDT_Byte;
        all_u16 &= t == GDT_Byte || t == GDT_UInt16;
        all_i16 &= t == GDT_Int16;
    }
    *int16 = *wide = 0;
    const char *name = GDALGetDataTypeName(first);
    if (all_byte) {
        im->type = PCLI_PIX_U8;
        snprintf(im->source_type, sizeof im->source_type, "%s", name);
    } else if (all_u16) {
        im->type = PCLI_PIX_U16;
        snprintf(im->source_type, sizeof im->source_type, "UInt16");
    } else if (all_i16) {
        im->type = PCLI_PIX_U16;
        *int16 = 1;
        snprintf(im->source_type, sizeof im->source_type, "Int16");
    } else {
        im->type = PCLI_PIX_F32;
        int exact = 1;
        for (size_t b = 0; b < nb; b++) {
            GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, order[b]));
            exact &= t == GDT_Float32 || t == GDT_Byte || t == GDT_UInt16 || t == GDT_Int16;
        }
        snprintf(im->source_type, sizeof im->source_type, "%s%s", exact ? "Float32" : name,
                 exact ? "" : " (read as float32)");
        *wide = !exact;
    }
    return 0;
}

/* count pixels of nb bands, double to float32: a finite value beyond float32's range becomes infinity
 * (so nodata) and is counted, unless it is its band's nodata value; a value beyond 2^24 that float32
 * rounds is counted as rounded. */
static void narrow(const double *src, float *dst, size_t count, size_t nb, const pcli_nodata *nd, pcli_image *im)
{
    size_t beyond = 0, rounded = 0;
    for (size_t i = 0; i < count; i++)
        for (size_t b = 0; b < nb; b++) {
            double v = src[i * nb + b];
            if (fabs(v) > FLT_MAX && isfinite(v)) { /* the cast itself would be undefined in C */
                dst[i * nb + b] = v > 0 ? INFINITY : -INFINITY;
                beyond += !(nd->has[b] && v == nd->value[b]);
                continue;
            }
            float f = (float)v;
            dst[i * nb + b] = f;
            rounded += fabs(v) > 16777216.0 && (double)f != v;
        }
    im->beyond_f32 += beyond;
    im->rounded_f32 += rounded;
}

/* Readers: a GeoTIFF is read by several threads, each through its own dataset handle (a GDAL dataset
 * is not thread-safe), each decoding, converting and checking its own rows. On 2 cores, for the
 * 100-Mpix 4-band scene from the page cache: 0.28 s against 0.47 s on one thread uncompressed, 0.81
 * against 1.58 s deflated in tiles, where GDAL_NUM_THREADS on one handle gives 0.95 s and adds
 * nothing to several (bench/RESULTS.md; GDAL still honours it when the user sets it). Other formats
 * are one compressed stream (PNG, JPEG): a reader starting half way would decode the first half
 * again, so they are read by one thread. */
typedef struct {
    const char *path;
    GDALDatasetH ds;   /* its own handle; the first reader's is the one the header came from */
    pcli_image part;   /* the image's buffers, its own lo/hi and counters (merged after) */
    const pcli_nodata *nd;
    const int *order;
    size_t nb, y0, y1, window;
    int int16, wide;
    GDALDataType buf_type;
    int failed;
    char err[512];
} reader;

static void *read_rows(void *arg)
{
    reader *r = arg;
    pcli_image *im = &r->part;
    double *scratch = NULL;
    size_t W = im->width, es = pcli_pixtype_size(im->type), ps = es * r->nb, xs = r->wide ? 8 : es;
    if (!r->ds && !(r->ds = open_for_reading(r->path))) {
        pthread_mutex_lock(&gdal_error_lock);
        r->failed = pcli_fail(r->err, sizeof r->err, "%s: cannot open it again to read rows %zu-%zu: %s", r->path,
                              r->y0, r->y1 - 1, gdal_error());
        pthread_mutex_unlock(&gdal_error_lock);
        return NULL;
    }
    /* Bands float32 cannot hold exactly (Float64, Int32, UInt32, 64-bit) come as doubles through a
     * window buffer and are narrowed here, where what float32 loses is counted: GDAL's own conversion
     * would turn 1e300 into infinity (so nodata) without a word. */
    if (r->wide && !(scratch = malloc(r->window * W * r->nb * sizeof *scratch))) {
        r->failed = pcli_fail(r->err, sizeof r->err, "%s: out of memory", r->path);
        return NULL;
    }
    for (size_t y = r->y0; y < r->y1; y += r->window) {
        size_t rows = r->y1 - y < r->window ? r->y1 - y : r->window;
        unsigned char *dst = (unsigned char *)im->pixels + y * W * ps;
        /* Band-interleaved or not in the file, pixel-interleaved here: the spacings put band b of
         * pixel x at x * ps + b * es, so the buffer is the library's row-major point view as it stands. */
        CPLErr e = GDALDatasetRasterIOEx(r->ds, GF_Read, 0, (int)y, (int)W, (int)rows,
                                         r->wide ? (void *)scratch : dst, (int)W, (int)rows,
                                         r->wide ? GDT_Float64 : r->buf_type, (int)r->nb, (int *)r->order,
                                         (GSpacing)(xs * r->nb), (GSpacing)(W * xs * r->nb), (GSpacing)xs, NULL);
        if (e != CE_None) {
            pthread_mutex_lock(&gdal_error_lock); /* another reader may be failing too */
            r->failed = pcli_fail(r->err, sizeof r->err, "%s: read error in rows %zu-%zu (corrupt or truncated "
                                  "file?): %s", r->path, y, y + rows - 1, gdal_error());
            pthread_mutex_unlock(&gdal_error_lock);
            break;
        }
        if (r->wide)
            narrow(scratch, (float *)(void *)dst, rows * W, r->nb, r->nd, im);
        pcli__mark_valid(im, y, rows, r->nd, r->int16);
    }
    free(scratch);
    return NULL;
}

/* How many readers: every core (or --threads) for a GeoTIFF of at least 1 MiB, one otherwise. */
static size_t reader_count(GDALDatasetH ds, int asked, size_t bytes)
{
    GDALDriverH drv = GDALGetDatasetDriver(ds);
    if (!drv || strcmp(GDALGetDriverShortName(drv), "GTiff") != 0 || bytes < ((size_t)1 << 20))
        return 1;
    long cores = asked > 0 ? asked : sysconf(_SC_NPROCESSORS_ONLN);
    return cores < 1 ? 1 : cores > 64 ? 64 : (size_t)cores;
}

int pcli__gdal_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    GDALDatasetH ds = open_raster(path, err, errsize);
    if (!ds)
        return -1;
    int rc = -1, int16 = 0, wide = 0, count = GDALGetRasterCount(ds);
    int order[PCLI_MAX_BANDS];
    reader *readers = NULL;
    size_t nr = 0, started = 0;
    pthread_t *threads = NULL;
    size_t nb = opt->bands ? opt->nbands : (size_t)count;
    if (nb == 0 || nb > PCLI_MAX_BANDS) {
        pcli_fail(err, errsize, "%s: %zu bands; at most %d can be used (choose some with --bands)", path, nb,
                  PCLI_MAX_BANDS);
        goto done;
    }
    for (size_t b = 0; b < nb; b++) {
        order[b] = opt->bands ? opt->bands[b] : (int)b + 1;
        if (order[b] < 1 || order[b] > count) {
            pcli_fail(err, errsize, "%s: no band %d (the image has %d band%s)", path, order[b], count,
                      count == 1 ? "" : "s");
            goto done;
        }
    }
    im->width = (size_t)GDALGetRasterXSize(ds);
    im->height = (size_t)GDALGetRasterYSize(ds);
    im->bands = nb;
    if (choose_type(ds, order, nb, im, &int16, &wide, path, err, errsize))
        goto done;
    pcli_nodata nd;
    im->may_have_nodata = im->type == PCLI_PIX_F32;
    for (size_t b = 0; b < nb; b++) {
        int has = 0;
        double v = GDALGetRasterNoDataValue(GDALGetRasterBand(ds, order[b]), &has);
        nd.has[b] = opt->has_nodata || has;
        nd.value[b] = opt->has_nodata ? opt->nodata : v;
        /* A NaN nodata is caught as NaN anyway; --nodata nan says only NaN is nodata. */
        nd.has[b] = nd.has[b] && pcli__nodata_can_match(im->type, int16, nd.value[b]);
        im->may_have_nodata |= nd.has[b];
    }
    if (pcli__image_alloc(im, opt, path, err, errsize))
        goto done;
    if (GDALGetGeoTransform(ds, im->geotransform) == CE_None)
        im->has_geotransform = 1;
    const char *wkt = GDALGetProjectionRef(ds);
    if (wkt && *wkt && !(im->projection = strdup(wkt))) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    size_t es = pcli_pixtype_size(im->type), W = im->width, H = im->height;
    int bw = 0, bh = 0;
    GDALGetBlockSize(GDALGetRasterBand(ds, order[0]), &bw, &bh);
    size_t want = reader_count(ds, opt->threads, W * H * nb * es);
    /* 16 MiB a window; a wide type's readers hold a double buffer of a window each: 64 MiB in all. */
    size_t budget = wide ? ((size_t)64 << 20) / want : (size_t)16 << 20;
    budget = budget < ((size_t)16 << 20) ? budget : (size_t)16 << 20;
    size_t window = window_rows(H, W * nb * (wide ? 8 : es), bh > 0 ? (size_t)bh : 1, want, budget);
    size_t windows = (H + window - 1) / window;
    nr = want < windows ? want : windows;
    readers = calloc(nr, sizeof *readers);
    threads = calloc(nr, sizeof *threads);
    if (!readers || !threads) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    for (size_t t = 0; t < nr; t++) {
        reader *r = &readers[t];
        r->path = path;
        r->ds = t == 0 ? ds : NULL;
        r->part = *im;
        r->nd = &nd;
        r->order = order;
        r->nb = nb;
        r->window = window;
        r->int16 = int16;
        r->wide = wide;
        r->buf_type = im->type == PCLI_PIX_U8 ? GDT_Byte : im->type == PCLI_PIX_F32 ? GDT_Float32
                      : int16                   ? GDT_Int16
                                                : GDT_UInt16;
        /* Whole windows each, so every reader's first row is a multiple of 8 (and of the block). */
        r->y0 = t * windows / nr * window;
        r->y1 = (t + 1) * windows / nr * window;
        r->y1 = r->y1 < H ? r->y1 : H;
    }
    /* The first reader runs here, the others on their threads (any that cannot start, here after). */
    for (started = 1; started < nr; started++)
        if (pthread_create(&threads[started], NULL, read_rows, &readers[started]) != 0)
            break;
    read_rows(&readers[0]);
    for (size_t t = 1; t < started; t++)
        pthread_join(threads[t], NULL);
    for (size_t t = started; t < nr; t++)
        read_rows(&readers[t]);
    int failed = 0;
    for (size_t t = 0; t < nr; t++) {
        reader *r = &readers[t];
        if (r->failed && !failed++)
            snprintf(err, errsize, "%s", r->err);
        for (size_t b = 0; b < nb; b++) {
            im->lo[b] = r->part.lo[b] < im->lo[b] ? r->part.lo[b] : im->lo[b];
            im->hi[b] = r->part.hi[b] > im->hi[b] ? r->part.hi[b] : im->hi[b];
        }
        im->beyond_f32 += r->part.beyond_f32;
        im->rounded_f32 += r->part.rounded_f32;
        if (t > 0 && r->ds)
            GDALClose(r->ds);
    }
    if (!failed)
        rc = pcli__image_finish(im, path, int16, err, errsize);
done:
    free(readers);
    free(threads);
    GDALClose(ds);
    return rc;
}

static GDALDatasetH create_tiff(const char *path, size_t width, size_t height, size_t bands, GDALDataType type,
                                int compress, char *err, size_t errsize)
{
    gdal_start();
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    if (!drv) {
        pcli_fail(err, errsize, "%s: GDAL has no GeoTIFF driver", path);
        return NULL;
    }
    /* Labels compress to a fraction with deflate at its fastest level plus the horizontal predictor
     * (runs of equal labels); BIGTIFF when the file could pass 4 GiB. */
    char **options = NULL;
    options = CSLSetNameValue(options, "BIGTIFF", "IF_SAFER");
    if (compress) {
        options = CSLSetNameValue(options, "COMPRESS", "DEFLATE");
        options = CSLSetNameValue(options, "ZLEVEL", "1");
        options = CSLSetNameValue(options, "PREDICTOR", "2");
    }
    if (bands > 1)
        options = CSLSetNameValue(options, "INTERLEAVE", "PIXEL");
    GDALDatasetH ds = GDALCreate(drv, path, (int)width, (int)height, (int)bands, type, options);
    CSLDestroy(options);
    if (!ds)
        pcli_fail(err, errsize, "%s: cannot create GeoTIFF: %s", path, gdal_error());
    return ds;
}

static int close_checked(GDALDatasetH ds, const char *path, char *err, size_t errsize)
{
    GDALClose(ds); /* flushes: a full disk shows up here */
    if (gdal_first_error[0])
        return pcli_fail(err, errsize, "%s: write failed: %s", path, gdal_first_error);
    return 0;
}

/* The creation options of a label GeoTIFF: the user's (--co, NAME=VALUE) over the defaults, each
 * default added unless its name was given. Labels compress to a fraction (runs of equal labels) with
 * deflate at its fastest level and no predictor (which would cost a pass and, measured on the
 * 100-Mpix scene, makes the file larger: 0.51 against 0.41 MB in Byte, 1.0 against 0.82 MB in
 * Int32, and the Int32 write twice as long), in 512 x 512 tiles (TILED=NO: strips of 512 rows),
 * BIGTIFF when the file could pass 4 GiB. ZLEVEL is added only where the compression takes it. */
static char **label_options(const pcli_label_format *fmt)
{
    char **o = NULL;
    for (size_t i = 0; i < fmt->n_options; i++) {
        char *name = NULL;
        const char *value = CPLParseNameValue(fmt->options[i], &name);
        if (name && value)
            o = CSLSetNameValue(o, name, value);
        CPLFree(name);
    }
    if (!CSLFetchNameValue(o, "COMPRESS"))
        o = CSLSetNameValue(o, "COMPRESS", "DEFLATE");
    const char *c = CSLFetchNameValue(o, "COMPRESS");
    if (EQUAL(c, "DEFLATE") && !CSLFetchNameValue(o, "ZLEVEL"))
        o = CSLSetNameValue(o, "ZLEVEL", "1");
    static const char *const blocks[][2] = {{"TILED", "YES"}, {"BLOCKXSIZE", "512"}, {"BLOCKYSIZE", "512"}};
    for (size_t i = 0; i < 3; i++)
        if (!CSLFetchNameValue(o, blocks[i][0]) && (i != 1 || CPLTestBool(CSLFetchNameValue(o, "TILED"))))
            o = CSLSetNameValue(o, blocks[i][0], blocks[i][1]);
    if (!CSLFetchNameValue(o, "BIGTIFF"))
        o = CSLSetNameValue(o, "BIGTIFF", "IF_SAFER");
    if (!CSLFetchNameValue(o, "NUM_THREADS")) {
        char n[32];
        snprintf(n, sizeof n, "%d", fmt->threads);
        o = CSLSetNameValue(o, "NUM_THREADS", fmt->threads > 0 ? n : "ALL_CPUS");
    }
    return o;
}

static GDALDataType label_gdal_type(pcli_label_type t)
{
    return t == PCLI_LABELS_INT32 ? GDT_Int32 : t == PCLI_LABELS_UINT16 ? GDT_UInt16 : GDT_Byte;
}

/* Options GDAL takes that would change the labels: lossy compression, fewer bits, a signed reading. */
static const char *changes_labels(char **o)
{
#define KEEP " and labels are kept exactly: use DEFLATE, LZW, ZSTD, LZMA or NONE"
    const char *c = CSLFetchNameValueDef(o, "COMPRESS", "");
    if (EQUAL(c, "JPEG"))
        return "COMPRESS=JPEG is lossy" KEEP;
    if (EQUAL(c, "WEBP") && !CPLTestBool(CSLFetchNameValueDef(o, "WEBP_LOSSLESS", "NO")))
        return "COMPRESS=WEBP is lossy without WEBP_LOSSLESS=YES" KEEP;
    if (STARTS_WITH_CI(c, "LERC") && CPLAtof(CSLFetchNameValueDef(o, "MAX_Z_ERROR", "0")) != 0)
        return "a MAX_Z_ERROR other than 0 is lossy" KEEP;
    if (EQUAL(c, "JXL") && !CPLTestBool(CSLFetchNameValueDef(o, "JXL_LOSSLESS", "YES")))
        return "JXL_LOSSLESS=NO is lossy" KEEP;
#undef KEEP
    if (CSLFetchNameValue(o, "NBITS"))
        return "NBITS would cut bits off the labels and the nodata value";
    if (CSLFetchNameValue(o, "DISCARD_LSB"))
        return "DISCARD_LSB would change the labels";
    if (CSLFetchNameValue(o, "PIXELTYPE"))
        return "PIXELTYPE would have the labels read as signed";
    return NULL;
}

/* GDAL's message without the name of the trial file ("/vsimem/...: "), which the user never gave. */
static void without_path(char *msg, const char *path)
{
    size_t n = strlen(path);
    for (char *p; (p = strstr(msg, path));) {
        size_t cut = n + (p[n] == ':' ? 1 : 0);
        cut += p[cut] == ' ' ? 1 : 0;
        memmove(p, p + cut, strlen(p + cut) + 1);
    }
}

int pcli__gdal_label_format_check(const pcli_label_format *fmt, char *warning, size_t warnsize, char *err,
                                  size_t errsize)
{
    gdal_start();
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    if (!drv)
        return pcli_fail(err, errsize, "GDAL has no GeoTIFF driver");
    char **o = label_options(fmt);
    int rc = 0;
    const char *lossy = changes_labels(o);
    if (lossy) {
        CSLDestroy(o);
        return pcli_fail(err, errsize, "--co: %s", lossy);
    }
    /* GDAL checks the names and the values of its listed choices, and says why as a warning. */
    if (!GDALValidateCreationOptions(drv, o)) {
        rc = pcli_fail(err, errsize, "--co: %s", gdal_first_warning[0] ? gdal_first_warning
                                                                        : "GDAL's GeoTIFF driver refuses these options");
        CSLDestroy(o);
        return rc;
    }
    /* The rest (a bad ZLEVEL, a predictor the type cannot take, ...) shows only when a file is made:
     * a small one in memory, before any pixel is read. */
    static const char mem[] = "/vsimem/parclust-co-check.tif";
    pcli_label_type type = fmt->type == PCLI_LABELS_AUTO ? PCLI_LABELS_BYTE : fmt->type;
    GDALDatasetH ds = GDALCreate(drv, mem, 64, 64, 1, label_gdal_type(type), o);
    CSLDestroy(o);
    if (ds) {
        int32_t zeros[64 * 64] = {0};
        if (GDALRasterIO(GDALGetRasterBand(ds, 1), GF_Write, 0, 0, 64, 64, zeros, 64, 64, GDT_Int32, 0, 0) != CE_None &&
            !gdal_first_error[0])
            snprintf(gdal_first_error, sizeof gdal_first_error, "cannot write");
        GDALClose(ds);
    }
    VSIUnlink(mem);
    without_path(gdal_first_error, mem);
    without_path(gdal_first_warning, mem);
    if (!ds || gdal_first_error[0])
        rc = pcli_fail(err, errsize, "--co: GDAL cannot write a GeoTIFF with these options: %s", gdal_error());
    else if (gdal_first_warning[0]) /* an option GDAL ignores (ZLEVEL=99): said, not refused */
        snprintf(warning, warnsize, "--co: %s", gdal_first_warning);
    return rc;
}

int pcli__gdal_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                            pcli_label_type type, const pcli_label_format *fmt, char *err, size_t errsize)
{
    if (im->width > INT32_MAX || im->height > INT32_MAX)
        return pcli_fail(err, errsize, "%s: image too large for GeoTIFF", path);
    gdal_start();
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    if (!drv)
        return pcli_fail(err, errsize, "%s: GDAL has no GeoTIFF driver", path);
    char **o = label_options(fmt);
    GDALDataType gt = label_gdal_type(type);
    GDALDatasetH ds = GDALCreate(drv, path, (int)im->width, (int)im->height, 1, gt, o);
    CSLDestroy(o);
    if (!ds)
        return pcli_fail(err, errsize, "%s: cannot create GeoTIFF: %s", path, gdal_error());
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(band, pcli_label_type_nodata(type));
    if (im->has_geotransform)
        GDALSetGeoTransform(ds, (double *)im->geotransform);
    if (im->projection)
        GDALSetProjection(ds, im->projection);
    /* Block by block, straight to the driver (GDALWriteBlock: no block cache, so no copy of the labels
     * into it): each block is filled here from the labels, and with NUM_THREADS GDAL's threads
     * compress it while the next is filled. Compact labels are consumed row by row, so each row of a
     * row of blocks keeps its own cursor. Beyond the image's edge the blocks hold nodata. */
    int bw = 0, bh = 0;
    GDALGetBlockSize(band, &bw, &bh);
    size_t W = im->width, H = im->height, es = (size_t)GDALGetDataTypeSizeBytes(gt);
    size_t BW = bw > 0 ? (size_t)bw : W, BH = bh > 0 ? (size_t)bh : 1, cursor = 0;
    unsigned char *buf = pcli__alloc_large(BW * BH * es);
    size_t *row_cursor = malloc(BH * sizeof *row_cursor);
    int rc = 0;
    if (!buf || !row_cursor)
        rc = pcli_fail(err, errsize, "%s: out of memory", path);
    for (size_t by = 0; by * BH < H && rc == 0; by++) {
        size_t y0 = by * BH, rows = H - y0 < BH ? H - y0 : BH;
        for (size_t r = 0; r < rows; r++) {
            row_cursor[r] = cursor;
            if (compact)
                cursor += pcli__count_valid(im, (y0 + r) * W, (y0 + r + 1) * W);
        }
        for (size_t bx = 0; bx * BW < W && rc == 0; bx++) {
            size_t x0 = bx * BW, cols = W - x0 < BW ? W - x0 : BW;
            for (size_t r = 0; r < BH; r++) {
                unsigned char *row = buf + r * BW * es;
                size_t done = 0;
                if (r < rows) {
                    pcli__expand_span(im, y0 + r, x0, cols, labels, compact, &row_cursor[r], type, row);
                    done = cols;
                }
                memset(row + done * es, 0xff, (BW - done) * es); /* 255, 65535 and -1 are all ones */
            }
            if (GDALWriteBlock(band, (int)bx, (int)by, buf) != CE_None)
                rc = pcli_fail(err, errsize, "%s: write failed: %s", path, gdal_error());
        }
    }
    free(row_cursor);
    free(buf);
    if (close_checked(ds, path, rc ? NULL : err, rc ? 0 : errsize))
        rc = -1;
    return rc;
}

int pcli__gdal_labels_read_valid(const char *path, const pcli_image *im, size_t y0, size_t height, int32_t **labels,
                                 char *err, size_t errsize)
{
    GDALDatasetH ds = open_raster(path, err, errsize);
    if (!ds)
        return -1;
    int rc = -1;
    int32_t *row = NULL, *out = NULL;
    if ((size_t)GDALGetRasterXSize(ds) != im->width || (size_t)GDALGetRasterYSize(ds) != height) {
        pcli_fail(err, errsize, "%s: %d x %d pixels, the image is %zu x %zu", path, GDALGetRasterXSize(ds),
                  GDALGetRasterYSize(ds), im->width, height);
        goto done;
    }
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    int has = 0;
    double nodata = GDALGetRasterNoDataValue(band, &has);
    row = malloc(im->width * sizeof *row);
    out = malloc((im->n_valid ? im->n_valid : 1) * sizeof *out);
    if (!row || !out) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    size_t k = 0;
    for (size_t y = 0; y < im->height; y++) {
        if (GDALRasterIO(band, GF_Read, 0, (int)(y0 + y), (int)im->width, 1, row, (int)im->width, 1, GDT_Int32, 0,
                         0) != CE_None) {
            pcli_fail(err, errsize, "%s: read error in row %zu: %s", path, y0 + y, gdal_error());
            goto done;
        }
        for (size_t x = 0; x < im->width; x++)
            if (pcli_image_is_valid(im, y * im->width + x))
                out[k++] = has && row[x] == nodata ? -1 : row[x];
    }
    *labels = out;
    out = NULL;
    rc = 0;
done:
    free(row);
    free(out);
    GDALClose(ds);
    return rc;
}

int pcli__gdal_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize)
{
    GDALDatasetH ds = open_raster(path, err, errsize);
    if (!ds)
        return -1;
    int rc = -1;
    int32_t *row = NULL;
    if ((size_t)GDALGetRasterXSize(ds) != width || (size_t)GDALGetRasterYSize(ds) != height) {
        pcli_fail(err, errsize, "%s: %d x %d pixels, the image is %zu x %zu", path, GDALGetRasterXSize(ds),
                  GDALGetRasterYSize(ds), width, height);
        goto done;
    }
    if (!(row = malloc(width * sizeof *row))) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    /* The first and the last row: a file cut short fails at its end, and this costs two rows. */
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    for (size_t y = 0; y < height; y += height > 1 ? height - 1 : 1)
        if (GDALRasterIO(band, GF_Read, 0, (int)y, (int)width, 1, row, (int)width, 1, GDT_Int32, 0, 0) != CE_None) {
            pcli_fail(err, errsize, "%s: read error in row %zu: %s", path, y, gdal_error());
            goto done;
        }
    rc = 0;
done:
    free(row);
    GDALClose(ds);
    return rc;
}

static GDALDataType spec_type(int t) { return t == 0 ? GDT_Byte : t == 1 ? GDT_UInt16 : t == 2 ? GDT_Float32 : GDT_Int32; }

int pcli__gdal_create(const char *path, const pcli_raster_spec *spec, void **handle, char *err, size_t errsize)
{
    if (spec->width > INT32_MAX || spec->height > INT32_MAX)
        return pcli_fail(err, errsize, "%s: image too large for GeoTIFF", path);
    /* Generated scenes are written uncompressed, as imagery usually comes (and read back at disk speed);
     * labels (spec->labels) with the creation options of pcli_labels_write. */
    GDALDatasetH ds = NULL;
    if (spec->labels) {
        gdal_start();
        GDALDriverH drv = GDALGetDriverByName("GTiff");
        char **o = drv ? label_options(spec->labels) : NULL;
        ds = drv ? GDALCreate(drv, path, (int)spec->width, (int)spec->height, (int)spec->bands, spec_type(spec->type), o)
                 : NULL;
        CSLDestroy(o);
        if (!ds)
            return pcli_fail(err, errsize, "%s: cannot create GeoTIFF: %s", path,
                             drv ? gdal_error() : "GDAL has no GeoTIFF driver");
    } else if (!(ds = create_tiff(path, spec->width, spec->height, spec->bands, spec_type(spec->type), spec->type == 3,
                                  err, errsize)))
        return -1;
    if (spec->geotransform)
        GDALSetGeoTransform(ds, (double *)spec->geotransform);
    if (spec->projection)
        GDALSetProjection(ds, spec->projection);
    else if (spec->epsg) {
        OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
        char *wkt = NULL;
        if (OSRImportFromEPSG(srs, spec->epsg) != OGRERR_NONE || OSRExportToWkt(srs, &wkt) != OGRERR_NONE) {
            OSRDestroySpatialReference(srs);
            GDALClose(ds);
            return pcli_fail(err, errsize, "%s: cannot make the projection EPSG:%d: %s", path, spec->epsg,
                             gdal_error());
        }
        GDALSetProjection(ds, wkt);
        CPLFree(wkt);
        OSRDestroySpatialReference(srs);
    }
    if (spec->has_nodata)
        for (size_t b = 1; b <= spec->bands; b++)
            GDALSetRasterNoDataValue(GDALGetRasterBand(ds, (int)b), spec->nodata);
    *handle = ds;
    return 0;
}

int pcli__gdal_write_rows(void *handle, const pcli_raster_spec *spec, size_t y0, size_t rows, const void *data,
                          char *err, size_t errsize, const char *path)
{
    size_t es = spec->type == 0 ? 1 : spec->type == 1 ? 2 : 4, ps = es * spec->bands;
    CPLErr e = GDALDatasetRasterIOEx(handle, GF_Write, 0, (int)y0, (int)spec->width, (int)rows, (void *)data,
                                     (int)spec->width, (int)rows, spec_type(spec->type), (int)spec->bands, NULL,
                                     (GSpacing)ps, (GSpacing)(spec->width * ps), (GSpacing)es, NULL);
    if (e != CE_None)
        return pcli_fail(err, errsize, "%s: write failed: %s", path, gdal_error());
    return 0;
}

int pcli__gdal_close(void *handle, char *err, size_t errsize, const char *path)
{
    return close_checked(handle, path, err, errsize);
}

/* For the window reader (raster_window.c): the same set-up, errors, types and narrowing. */
void pcli__gdal_start(void) { gdal_start(); }

const char *pcli__gdal_error(void) { return gdal_error(); }

int pcli__gdal_choose_type(void *ds, const int *order, size_t nb, pcli_image *im, int *int16, int *wide,
                           const char *path, char *err, size_t errsize)
{
    return choose_type(ds, order, nb, im, int16, wide, path, err, errsize);
}

void pcli__gdal_narrow(const double *src, float *dst, size_t count, size_t nb, const pcli_nodata *nd,
                       pcli_image *im)
{
    narrow(src, dst, count, nb, nd, im);
}

/* Kept in the GeoTIFF itself (its GDAL_METADATA tag, as gdalinfo -stats would write them to a side file
 * of a file opened read-only), so they travel with the file when a staged output is renamed. */
void pcli__gdal_set_statistics(void *handle, size_t band, const double stats[4])
{
    GDALSetRasterStatistics(GDALGetRasterBand(handle, (int)band + 1), stats[0], stats[1], stats[2], stats[3]);
}

void pcli__gdal_block_size(void *handle, size_t *bw, size_t *bh)
{
    int x = 0, y = 0;
    GDALGetBlockSize(GDALGetRasterBand(handle, 1), &x, &y);
    *bw = x > 0 ? (size_t)x : 1;
    *bh = y > 0 ? (size_t)y : 1;
}

#endif
