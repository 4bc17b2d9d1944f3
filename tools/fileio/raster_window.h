/* Images read a window of rows at a time, for runs over rasters larger than memory (parclust segment
 * --max-memory): the header once, then windows in any order, each into a buffer the caller holds, in
 * the layout pcli_image_read gives the whole image (pixel-interleaved; uint8, uint16 with int16
 * shifted, or float32) with its validity bits. GDAL formats are read through one dataset handle and
 * GDAL's block cache, never through a mapping of the file (its pages would count as the process's
 * memory); a .npy through a mapping whose pages are handed back after each window. */
#ifndef PCLI_RASTER_WINDOW_H
#define PCLI_RASTER_WINDOW_H

#include "raster_io.h"

typedef struct pcli_window_reader pcli_window_reader;

/* Opens path (.npy by extension, anything else through GDAL) and reads its header into im as
 * pcli_image_read would (size, bands, held type, offset, source_type, georeferencing, is_npy,
 * may_have_nodata; lo/hi empty), with no pixels (im->pixels and im->valid NULL). opt->check_header is
 * not called. Errors (one line in err) as pcli_image_read's. */
int pcli_window_open(const char *path, const pcli_read_options *opt, pcli_window_reader **reader, pcli_image *im,
                     char *err, size_t errsize);
void pcli_window_close(pcli_window_reader *r); /* NULL-safe (the header's projection is im's: pcli_image_free) */

/* The file's block height in rows (1 where it has none): windows aligned to it decode no block twice. */
size_t pcli_window_block_rows(const pcli_window_reader *r);
/* The bytes of one row of the file's blocks, every band of the file (GDAL decodes pixel-interleaved
 * blocks whole): what GDAL's block cache holds so that a window ending inside a block row does not
 * decode it again for the next; 0 for .npy. */
size_t pcli_window_block_row_bytes(const pcli_window_reader *r);
/* The bytes the reader itself holds beyond the caller's buffers (wide types' double-precision
 * buffer, at most 4 MiB or one row). */
size_t pcli_window_own_bytes(const pcli_window_reader *r);

/* Reads rows y0 .. y0 + rows - 1 into win: win->width, bands and type as the header's, height = rows,
 * pixels = buf (room for rows x width x bands values of the held type) or, where the file holds
 * exactly that (a .npy of the held type, every band chosen in order, no pixel that can be nodata),
 * the mapped file itself: read-only, until the next call. win->valid (the caller's, (rows x width +
 * 7) / 8 bytes) is set; n_valid counted; lo/hi widened (the caller empties them first), beyond_f32
 * and rounded_f32 added to; offset set. Errors: a read error naming the rows (truncated or corrupt
 * file). */
int pcli_window_read(pcli_window_reader *r, size_t y0, size_t rows, void *buf, pcli_image *win, char *err,
                     size_t errsize);

/* Tells the kernel rows y0 .. y0 + rows - 1 will be read next, so that their bytes are read from disk
 * while the caller works on the window before (its own readahead follows only forward reading). Where
 * the reader knows their place in the file: .npy, and the GeoTIFFs read straight from the file. */
void pcli_window_prefetch(pcli_window_reader *r, size_t y0, size_t rows);

/* The labels of a window's pixels in a label type (rows x width uint8, uint16 or int32 values in out):
 * compact labels (one per valid pixel, in order) as they are, the type's nodata value for -1 (HCA's
 * noise) and for invalid pixels, as pcli_labels_write writes them. */
void pcli_window_labels(const pcli_image *win, const int32_t *labels, pcli_label_type type, void *out);

/* The bands' exact statistics as the box of their values: 0 with lo/hi (held units) when every chosen
 * band carries statistics GDAL computed exactly (GDALGetRasterStatistics with bApproxOK FALSE and
 * bForce FALSE, STATISTICS_APPROXIMATE not YES) over the file's own nodata value; else -1 and a
 * reason in why ("band 2 has no statistics", "--nodata overrides the file's", ".npy files carry
 * none"). */
int pcli_window_stats(pcli_window_reader *r, double *lo, double *hi, char *why, size_t whysize);

/* GDAL's block cache: capped at `bytes` unless the user set GDAL_CACHEMAX; returns the cap in effect
 * (0 without GDAL). */
size_t pcli_window_cache_cap(size_t bytes);

#endif /* PCLI_RASTER_WINDOW_H */
