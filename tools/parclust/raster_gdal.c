/* Rasters through GDAL: any format GDAL reads, read band-interleaved into one pixel-interleaved buffer
 * in row blocks; label GeoTIFFs with the input's georeferencing. Without GDAL every call says so. */
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
                            char *err, size_t errsize)
{
    (void)im, (void)labels, (void)compact;
    return pcli_fail(err, errsize, "%s: %s", path, PCLI_NO_GDAL_MESSAGE);
}

int pcli__gdal_labels_read_valid(const char *path, const pcli_image *im, int32_t **labels, char *err,
                                 size_t errsize)
{
    (void)im, (void)labels;
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

#else

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <ogr_srs_api.h>

int pcli_have_gdal(void) { return 1; }

/* GDAL prints its errors by default; the CLI's rule is one line of its own. The first failure is kept
 * here and put into that line. The CLI calls GDAL from one thread only. */
static char gdal_first_error[512];

static void CPL_STDCALL keep_error(CPLErr cls, CPLErrorNum num, const char *msg)
{
    (void)num;
    if (cls >= CE_Failure && !gdal_first_error[0])
        snprintf(gdal_first_error, sizeof gdal_first_error, "%s", msg ? msg : "GDAL error");
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
    gdal_first_error[0] = '\0';
    CPLErrorReset();
}

static const char *gdal_error(void) { return gdal_first_error[0] ? gdal_first_error : "unknown GDAL error"; }

/* Rows per RasterIO call: about 16 MiB of pixels, so progress is steady and the validity pass runs
 * on rows still in cache. */
static size_t block_rows(size_t width, size_t pixel_bytes)
{
    size_t rows = ((size_t)16 << 20) / (width * pixel_bytes + 1);
    return rows < 1 ? 1 : rows;
}

static GDALDatasetH open_raster(const char *path, char *err, size_t errsize)
{
    /* GDAL says nothing of a directory or an empty file, and nothing of a format no driver knows (only
     * with GDAL_OF_VERBOSE_ERROR, "not recognized as a supported file format", for all three alike). */
    if (pcli_check_input_file(path, err, errsize))
        return NULL;
    gdal_start();
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
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

int pcli__gdal_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize)
{
    GDALDatasetH ds = open_raster(path, err, errsize);
    if (!ds)
        return -1;
    int rc = -1, int16 = 0, wide = 0, count = GDALGetRasterCount(ds);
    double *scratch = NULL;
    int order[PCLI_MAX_BANDS];
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
    GDALDataType buf_type = im->type == PCLI_PIX_U8 ? GDT_Byte : im->type == PCLI_PIX_F32 ? GDT_Float32
                            : int16                   ? GDT_Int16
                                                      : GDT_UInt16;
    size_t es = pcli_pixtype_size(im->type), ps = es * nb, W = im->width;
    /* Bands float32 cannot hold exactly (Float64, Int32, UInt32, 64-bit) come as doubles through a
     * block buffer and are narrowed here, where what float32 loses is counted: GDAL's own conversion
     * would turn 1e300 into infinity (so nodata) without a word. */
    size_t step = block_rows(W, wide ? 8 * nb : ps), xs = wide ? 8 : es;
    if (wide && !(scratch = malloc(step * W * nb * sizeof *scratch))) {
        pcli_fail(err, errsize, "%s: out of memory", path);
        goto done;
    }
    for (size_t y = 0; y < im->height; y += step) {
        size_t rows = im->height - y < step ? im->height - y : step;
        unsigned char *dst = (unsigned char *)im->pixels + y * W * ps;
        /* Band-interleaved in the file, pixel-interleaved here: the spacings put band b of pixel x at
         * x * ps + b * es, so the buffer is the library's row-major point view as it stands. */
        CPLErr e = GDALDatasetRasterIOEx(ds, GF_Read, 0, (int)y, (int)W, (int)rows, wide ? (void *)scratch : dst,
                                         (int)W, (int)rows, wide ? GDT_Float64 : buf_type, (int)nb, order,
                                         (GSpacing)(xs * nb), (GSpacing)(W * xs * nb), (GSpacing)xs, NULL);
        if (e != CE_None) {
            pcli_fail(err, errsize, "%s: read error in rows %zu-%zu (corrupt or truncated file?): %s", path, y,
                      y + rows - 1, gdal_error());
            goto done;
        }
        if (wide)
            narrow(scratch, (float *)(void *)dst, rows * W, nb, &nd, im);
        pcli__mark_valid(im, y, rows, &nd, int16);
    }
    rc = pcli__image_finish(im, path, int16, err, errsize);
done:
    free(scratch);
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

int pcli__gdal_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                            char *err, size_t errsize)
{
    if (im->width > INT32_MAX || im->height > INT32_MAX)
        return pcli_fail(err, errsize, "%s: image too large for GeoTIFF", path);
    GDALDatasetH ds = create_tiff(path, im->width, im->height, 1, GDT_Int32, 1, err, errsize);
    if (!ds)
        return -1;
    GDALRasterBandH band = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(band, -1);
    if (im->has_geotransform)
        GDALSetGeoTransform(ds, (double *)im->geotransform);
    if (im->projection)
        GDALSetProjection(ds, im->projection);
    size_t W = im->width, step = block_rows(W, 4), cursor = 0;
    int32_t *buf = malloc(step * W * sizeof *buf);
    int rc = 0;
    if (!buf)
        rc = pcli_fail(err, errsize, "%s: out of memory", path);
    for (size_t y = 0; y < im->height && rc == 0; y += step) {
        size_t rows = im->height - y < step ? im->height - y : step;
        for (size_t r = 0; r < rows; r++)
            pcli__expand_row(im, y + r, labels, compact, &cursor, buf + r * W);
        if (GDALRasterIO(band, GF_Write, 0, (int)y, (int)W, (int)rows, buf, (int)W, (int)rows, GDT_Int32, 0, 0) !=
            CE_None)
            rc = pcli_fail(err, errsize, "%s: write failed: %s", path, gdal_error());
    }
    free(buf);
    if (close_checked(ds, path, rc ? NULL : err, rc ? 0 : errsize))
        rc = -1;
    return rc;
}

int pcli__gdal_labels_read_valid(const char *path, const pcli_image *im, int32_t **labels, char *err,
                                 size_t errsize)
{
    GDALDatasetH ds = open_raster(path, err, errsize);
    if (!ds)
        return -1;
    int rc = -1;
    int32_t *row = NULL, *out = NULL;
    if ((size_t)GDALGetRasterXSize(ds) != im->width || (size_t)GDALGetRasterYSize(ds) != im->height) {
        pcli_fail(err, errsize, "%s: %d x %d pixels, the image is %zu x %zu", path, GDALGetRasterXSize(ds),
                  GDALGetRasterYSize(ds), im->width, im->height);
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
        if (GDALRasterIO(band, GF_Read, 0, (int)y, (int)im->width, 1, row, (int)im->width, 1, GDT_Int32, 0, 0) !=
            CE_None) {
            pcli_fail(err, errsize, "%s: read error in row %zu: %s", path, y, gdal_error());
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
    /* Generated scenes are written uncompressed, as imagery usually comes (and read back at disk speed). */
    GDALDatasetH ds =
        create_tiff(path, spec->width, spec->height, spec->bands, spec_type(spec->type), spec->type == 3, err, errsize);
    if (!ds)
        return -1;
    if (spec->geotransform)
        GDALSetGeoTransform(ds, (double *)spec->geotransform);
    if (spec->epsg) {
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

#endif
