/* Scatter plots of clustered points (the programs' --plot), as PNG (own encoder, no zlib) or SVG.
 * Depends on libc and points_io (for the atomic output file), not on libparclust. */
#ifndef PCLI_PLOT_H
#define PCLI_PLOT_H

#include <stddef.h>
#include <stdint.h>

/* Draws points coloured by label (label < 0 in grey; labels == NULL: all one colour) with cluster
 * centre i marked by a black-outlined disc in the colour of label i, inside an axes box, using the
 * first two dimensions (dim 1: y = 0), scaled to the bounding box of points and centres with the
 * aspect ratio kept. Format by extension: .png (800 x 800 RGB; the title goes into a tEXt chunk,
 * no text is drawn) or .svg (at most 20000 points, an evenly strided subsample beyond that; the
 * title is drawn). Anything else is an error. points may be NULL when n == 0, centers when k == 0,
 * title may be NULL. Returns 0, or -1 with one line in err; the file is written whole or not at all. */
int pcli_plot(const char *path, const float *points, size_t n, size_t dim, const int32_t *labels,
              const float *centers, size_t k, const char *title, char *err, size_t errsize);

/* The least pcli_plot writes to path (by extension) for n points: checked against the free space
 * before the work. */
double pcli_plot_min_bytes(const char *path, size_t n);

#endif /* PCLI_PLOT_H */
