/* What the image mean shift files share: the image as float planes, the filtering step (every pixel
 * to its mode) and the region step (fusion, small regions, numbering). */
#ifndef PC_MEANSHIFT_IMAGE_INTERNAL_H
#define PC_MEANSHIFT_IMAGE_INTERNAL_H

#include "../core/internal.h"

/* Padding after each band plane: the filter reads whole vectors of 8 lanes and masks the lanes past
 * the end of a row, so the last pixel's vector may reach 7 floats beyond the image. */
#define PC__MSI_PAD 8

typedef struct {
    size_t width, height, bands;
    /* Band-major float copy of the pixels: band b of pixel i at planes[b * plane_stride + i], with
     * plane_stride = width * height + PC__MSI_PAD. Invalid pixels hold NaN, which fails every range
     * test, so the filter needs no separate mask in its inner loop. */
    const float *planes;
    size_t plane_stride;
    const uint8_t *ok; /* width * height: 1 for a valid pixel */
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

/* Moves every valid pixel to its mode. modes: n x bands floats (NaN for invalid pixels).
 * positions: NULL, or n x 2 doubles receiving each mode's (row, col). *iterations: the most shifts
 * any pixel took. */
pc_status pc__msi_filter(const pc__msi_image *image, const pc__msi_filter_params *params, float *modes,
                         double *positions, int *iterations);

/* Joins 8-connected valid pixels whose modes are within hr of each other into regions; then regions
 * smaller than min_size pixels join their neighbour of closest mean until none is small (or a small
 * one has no neighbour). Fills the result's labels, k, centres (mean original band values) and
 * sizes, regions numbered by size, largest first (ties: the one whose first pixel comes first), and
 * adds the "fuse" and "prune" stages. */
pc_status pc__msi_regions(const pc__msi_image *image, const float *modes, double hr, int64_t min_size,
                          pc_result *result);

#endif
