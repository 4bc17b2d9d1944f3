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

#endif
