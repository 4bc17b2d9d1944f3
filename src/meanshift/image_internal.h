/* What the image mean shift files share: the image as float planes, the filtering step (every pixel
 * to its mode) and the region step (fusion, small regions, numbering). */
#ifndef PC_MEANSHIFT_IMAGE_INTERNAL_H
#define PC_MEANSHIFT_IMAGE_INTERNAL_H

#include "../core/internal.h"

/* Padding after each band plane: the filter reads whole vectors of 8 lanes and masks the lanes past
 * the end of a row, so the last pixel's vector may reach 7 floats beyond the image. */
#define PC__MSI_PAD 8

typedef struct {
    size_t width, height, bands; /* height: the whole image's, also when only some rows are held */
    /* Band-major float copy of the rows held: band b of the pixel at (row0 + y, x) at
     * planes[b * plane_stride + y * width + x], with plane_stride >= rows * width + PC__MSI_PAD.
     * Invalid pixels hold NaN, which fails every range test, so the filter needs no separate mask in
     * its inner loop. */
    const float *planes;
    size_t plane_stride;
    const uint8_t *ok; /* rows * width, as planes: 1 for a valid pixel */
    /* The rows held: row0 .. row0 + rows - 1 of the image (pc_meanshift_image_rows holds a strip and
     * its halo). rows == 0: the whole image (row0 is then 0). */
    size_t row0, rows;
} pc__msi_image;

typedef struct {
    double hs;    /* spatial radius, pixels */
    double hr;    /* range radius, band units */
    double eps;   /* stop when the joint shift, in bandwidths, is <= eps */
    int max_iter;
    int parallel; /* 0: the sequential backend (one thread, same code) */
    int threads;  /* 0: OpenMP's default */
    pc_progress_fn progress;
    void *progress_user;
} pc__msi_filter_params;

/* The parameters' ranges (PC_INVALID_ARGUMENT with the reason). */
pc_status pc__msi_check_params(const pc_meanshift_image_params *params);

/* Moves every valid pixel to its mode. modes: n x bands floats (NaN for invalid pixels).
 * positions: NULL, or n x 2 doubles receiving each mode's (row, col). *iterations: the most shifts
 * any pixel took. The image holds every row. */
pc_status pc__msi_filter(const pc__msi_image *image, const pc__msi_filter_params *params, float *modes,
                         double *positions, int *iterations);

/* A climb stopped because its next window reaches rows the image does not hold: where it stands.
 * A shift depends on nothing else (the centre, the band values m, the shifts taken), so the climb
 * taken up where those rows are held goes on exactly as if it had never stopped. */
typedef struct {
    size_t pixel;  /* where it started: row * width + col in the whole image */
    double yr, yc; /* the window's centre */
    int it;        /* shifts taken */
} pc__msi_climb;

typedef struct {
    pc__msi_climb *climb;
    float *m; /* count x bands: each climb's band values so far */
    size_t count, cap, bands;
} pc__msi_climbs;

/* Appends a climb; PC_OUT_OF_MEMORY (recorded) when it cannot grow. */
pc_status pc__msi_climbs_push(pc__msi_climbs *list, const pc__msi_climb *climb, const float *m);
void pc__msi_climbs_free(pc__msi_climbs *list);

/* Rows a window reaches either side of its centre's nearest row (the filter's table: hs, capped
 * where the disk covers the whole image from anywhere). Windows centred in rows the image holds
 * with this many rows more either side always lie in what is held. */
long pc__msi_window_reach(double hs, size_t width, size_t height);

/* Filters the valid pixels of rows first .. first + count - 1 (held by the image). modes: count x
 * width x bands floats (NaN for invalid pixels). A pixel whose climb reaches rows not held is
 * appended to *stopped (sorted by pixel; its modes entry then holds its band values so far);
 * stopped == NULL: every window must lie in the rows held (PC_INTERNAL_ERROR otherwise).
 * *iterations: the most shifts a finished climb took. */
pc_status pc__msi_filter_rows(const pc__msi_image *image, const pc__msi_filter_params *params, size_t first,
                              size_t count, float *modes, int *iterations, pc__msi_climbs *stopped);

/* Takes up stopped climbs whose next window lies in the rows the image holds (the others are left
 * as they are): each goes on until it ends or stops again. over[t] receives 1 for a climb that
 * ended (climbs->m then holds its mode), 0 for one that stopped. The climbs taken up are
 * climbs->climb[ids[0 .. count - 1]], changed in place. *iterations: the most shifts an ended climb
 * took. */
pc_status pc__msi_resume(const pc__msi_image *image, const pc__msi_filter_params *params, pc__msi_climbs *climbs,
                         const size_t *ids, size_t count, uint8_t *over, int *iterations);

/* The squared distance of two modes, as fusion tests it against hr^2 (the same in either order). */
static inline double pc__msi_dist2_f(const float *a, const float *b, size_t bands)
{
    double d2 = 0;
    for (size_t k = 0; k < bands; k++) {
        double d = (double)a[k] - b[k];
        d2 += d * d;
    }
    return d2;
}

/* Fused regions as a graph, which is all that pruning and numbering need: regions numbered in the
 * order of their first pixels (raster order), their pixel counts and sums of original band values,
 * and who touches whom (8-connected valid pixels in different regions). */
typedef struct {
    size_t regions, bands;
    int64_t *size; /* regions */
    double *sum;   /* regions x bands: sums of the (scaled) original values, each in raster order */
    /* Region r's neighbours: next[start[r] .. start[r + 1] - 1], increasing. Only regions smaller
     * than min_size need theirs (a region that is large never becomes small); start NULL: none. */
    const size_t *start;
    const size_t *next;
} pc__msi_graph;

/* Prunes (as pc__msi_regions describes) and numbers the regions: label[r] receives region r's final
 * number, the result its k, sizes and centres (scaled units). size and sum are changed. */
pc_status pc__msi_prune_number(pc__msi_graph *graph, int64_t min_size, int32_t *label, pc_result *result);

/* Joins 8-connected valid pixels whose modes are within hr of each other into regions; then regions
 * smaller than min_size pixels join their neighbour of closest mean until none is small (or a small
 * one has no neighbour). Fills the result's labels, k, centres (mean original band values) and
 * sizes, regions numbered by size, largest first (ties: the one whose first pixel comes first), and
 * adds the "fuse" and "prune" stages. */
pc_status pc__msi_regions(const pc__msi_image *image, const float *modes, double hr, int64_t min_size,
                          pc_result *result);

#endif
