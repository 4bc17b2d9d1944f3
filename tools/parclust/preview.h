/* The preview picture of `parclust segment`: each cluster painted in its mean colour. */
#ifndef PCLI_PREVIEW_H
#define PCLI_PREVIEW_H

#include "raster_io.h"

#include <stddef.h>
#include <stdint.h>

/* Writes an RGB PNG of the label image to path (written in place: the caller stages it). Cluster c is
 * painted in the colour of centers[c] (k x im->bands, band values as the library reports them): the
 * first three bands as red, green and blue (one or two bands: grey from the first), each stretched
 * linearly from the band's valid range (im->lo .. im->hi) to 0..255; nodata and unlabelled pixels
 * black. palette = 1 paints a fixed palette of distinct colours instead. Images wider or taller than
 * max_side are subsampled (nearest pixel) to fit. labels: per valid pixel (compact) or per pixel. */
int pcli_preview_write(const char *path, const pcli_image *im, const int32_t *labels, int compact,
                       const float *centers, size_t k, int palette, size_t max_side, char *err, size_t errsize);

/* The picture's size for an image of W x H: the image's, scaled down to fit max_side (0: no limit);
 * returns the scale. Picture pixel (px, py) shows image pixel ((px + 0.5) x scale, (py + 0.5) x scale),
 * clamped to the image. */
double pcli_preview_size(size_t W, size_t H, size_t max_side, size_t *pw, size_t *ph);

/* The least pcli_preview_write writes for an image of width x height: checked against the free
 * space before the work. */
double pcli_preview_min_bytes(size_t width, size_t height, size_t max_side);

/* The preview of a run whose labels come a band of rows at a time, in a raster label type, as a
 * streamed run or the ranks of parclust-mpi write them: the picture's pixels are sampled from each band
 * as it passes (the pixels pcli_preview_write would pick), held (4 bytes a picture pixel) and painted
 * at the end, so that the picture equals the one pcli_preview_write makes of the whole label image. */
typedef struct {
    size_t width, height; /* the image's */
    size_t pw, ph;        /* the picture's */
    double scale;
    int32_t *labels;      /* pw x ph, -1 where nodata */
} pcli_picture;

/* 0, or -1 out of memory (said in err). */
int pcli_picture_init(pcli_picture *p, size_t width, size_t height, size_t max_side, char *err, size_t errsize);
/* The picture's pixels in image rows y0 .. y0 + rows - 1, from those rows' labels (rows x width of
 * `type`, its nodata meaning none). */
void pcli_picture_sample(pcli_picture *p, size_t y0, size_t rows, const void *labels, pcli_label_type type);
/* Writes the picture as pcli_preview_write writes an image: im gives the bands and their valid ranges. */
int pcli_picture_write(const pcli_picture *p, const char *path, const pcli_image *im, const float *centers, size_t k,
                       int palette, char *err, size_t errsize);
void pcli_picture_free(pcli_picture *p);

#endif
