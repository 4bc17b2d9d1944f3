/* What raster_io.c (NumPy images, validity, compaction) and raster_gdal.c (GDAL) share. */
#ifndef PCLI_RASTER_INTERNAL_H
#define PCLI_RASTER_INTERNAL_H

#include "raster_io.h"

/* Per chosen band: whether it has a nodata value, and that value in the file's own type. */
typedef struct {
    int has[PCLI_MAX_BANDS];
    double value[PCLI_MAX_BANDS];
} pcli_nodata;

/* Whether a pixel of the held type can equal a nodata value: NaN never does (NaN pixels are nodata
 * anyway), nor a value outside an integer type or between its integers. in_int16: uint16 holding int16. */
int pcli__nodata_can_match(pcli_pixtype type, int in_int16, double value);
/* Once the header is known (im's size, bands, type, may_have_nodata): refuses an empty or oversized
 * image, runs opt->check_header, then allocates im->pixels (height x width x bands of im->type) and
 * im->valid; lo/hi reset. */
int pcli__image_alloc(pcli_image *im, const pcli_read_options *opt, const char *path, char *err, size_t errsize);
/* Marks the validity bits of rows y0 .. y0 + rows - 1 (already in im->pixels, in the held type, before
 * any int16 shift) and widens lo/hi over their valid values. in_int16: the held uint16 bits are int16
 * values (compare against nodata as such). */
void pcli__mark_valid(pcli_image *im, size_t y0, size_t rows, const pcli_nodata *nd, int in_int16);
/* After every row: the int16 shift, the count of valid pixels, and the error for none. */
int pcli__image_finish(pcli_image *im, const char *path, int in_int16, char *err, size_t errsize);

/* The GDAL side (raster_gdal.c); without GDAL each says so. */
int pcli__gdal_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize);
/* type: resolved (not AUTO) and able to hold the labels. */
int pcli__gdal_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                            pcli_label_type type, const pcli_label_format *fmt, char *err, size_t errsize);
int pcli__gdal_label_format_check(const pcli_label_format *fmt, char *warning, size_t warnsize, char *err,
                                  size_t errsize);
int pcli__gdal_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize);
int pcli__gdal_labels_read_valid(const char *path, const pcli_image *im, size_t y0, size_t height, int32_t **labels,
                                 char *err, size_t errsize);
int pcli__gdal_create(const char *path, const pcli_raster_spec *spec, void **handle, char *err, size_t errsize);
int pcli__gdal_write_rows(void *handle, const pcli_raster_spec *spec, size_t y0, size_t rows, const void *data,
                          char *err, size_t errsize, const char *path);
int pcli__gdal_close(void *handle, char *err, size_t errsize, const char *path);

/* Labels of the n pixels of row y from column x0 in a label type (uint8, uint16 or int32 values in
 * out): each label as it is, the type's nodata value for -1 and for invalid pixels. Compact labels are
 * consumed from *cursor, which must be the index of the first valid pixel at or after (x0, y). */
void pcli__expand_span(const pcli_image *im, size_t y, size_t x0, size_t n, const int32_t *labels, int compact,
                       size_t *cursor, pcli_label_type type, void *out);
/* The number of valid pixels of index from .. to - 1. */
size_t pcli__count_valid(const pcli_image *im, size_t from, size_t to);
/* The pixel buffer: aligned to 2 MiB and marked for transparent huge pages when large (Linux), so
 * that first touching 400 MB takes 200 page faults instead of 100,000. Freed with free(). */
void *pcli__alloc_large(size_t bytes);

/* What the window reader (raster_window.c) shares with the whole-image readers. pcli__npy_layout: a
 * .npy image's data offset and band count (its header checked as pcli_image_read checks it). The GDAL
 * ones exist in GDAL builds only: the one-time set-up with the error handler, the first error since
 * (or a stand-in), the held type of the chosen bands and the narrowing of wide values, as
 * pcli__gdal_read uses them (ds: a GDALDatasetH), and the block size of a raster writer's dataset. */
int pcli__npy_layout(const char *path, size_t *data_start, size_t *file_bands, char *err, size_t errsize);
void pcli__gdal_start(void);
const char *pcli__gdal_error(void);
int pcli__gdal_choose_type(void *ds, const int *order, size_t nb, pcli_image *im, int *int16, int *wide,
                           const char *path, char *err, size_t errsize);
void pcli__gdal_narrow(const double *src, float *dst, size_t count, size_t nb, const pcli_nodata *nd,
                       pcli_image *im);
void pcli__gdal_block_size(void *handle, size_t *bw, size_t *bh);
void pcli__gdal_set_statistics(void *handle, size_t band, const double stats[4]);

#define PCLI_NO_GDAL_MESSAGE "this parclust was built without raster support (GDAL); .npy images still work"

#endif
