/* parclust segment over windows of rows, for images whose run does not fit in --max-memory: the
 * image is read again on every pass (HCA: the box, the histogram, the labels) and never held whole. */
#ifndef PARCLUST_SEGMENT_STREAM_H
#define PARCLUST_SEGMENT_STREAM_H

#include "cli.h"
#include "raster_io.h"

/* Where the HCA grid's box comes from in a streamed run. AUTO: the bands' exact statistics where they
 * all have them, else SCAN (a first pass over the valid pixels, as the in-memory run finds it). TYPE:
 * the pixel type's whole range (uint8 0-255, uint16 and int16 0-65535 held), no extra pass, cells of
 * other sizes than the in-memory run's: other labels. */
typedef enum { SEG_BOX_AUTO = 0, SEG_BOX_SCAN, SEG_BOX_STATS, SEG_BOX_TYPE } seg_box;

/* Algorithms as cmd_segment.c numbers them. */
enum { SEG_HCA = 1, SEG_KMEANS = 2, SEG_MEANSHIFT = 4 };

typedef struct {
    const char *input, *output, *preview, *truth;
    int algorithm;
    int palette;
    size_t preview_size;
    const pcli_read_options *read;
    pc_hca_params hca;
    pc_kmeans_params km;
    pc_meanshift_image_params ms;
    int range_given;        /* mean shift: --range-bandwidth given (else from the bands' ranges) */
    const pcli_label_format *labels_format;
    const char *init_file;  /* k-means --init FILE, or NULL */
    seg_box box;
    double limit;           /* bytes the run may hold */
    const char *limit_what; /* how the limit was set: "--max-memory 2.0 GiB", ... */
    double need, pixels;    /* what the in-memory run would hold: in all, and of it the chosen bands */
} seg_stream_args;

/* SIZE as --max-memory takes it: a number of bytes with an optional binary unit K, M, G or T (also
 * KB/KiB, ...; any case; 1.5G allowed). 0, or -1 when it is not one. */
int seg_parse_size(const char *text, double *bytes);
/* 1 when this build streams the algorithm (HCA, k-means, mean shift). */
int seg_stream_can(int algorithm);
/* The streamed run, its outputs staged in out and committed together (or none): CLI_OK or CLI_FAILED,
 * errors printed. */
int seg_stream_run(const seg_stream_args *a, cli_outputs *out);

/* --init FILE: k rows of `bands` values, in the image's units; returned as float32 in held units (+
 * offset), malloc'd. NULL: error printed. */
float *seg_read_init(const char *path, size_t k, size_t bands, double offset);

/* cmd_segment.c: "  cluster I: N pixels (P%), mean (...)" for the first 20 clusters (P: of im's n_valid). */
void seg_print_clusters(const pcli_image *im, size_t k, const int64_t *sizes, const float *centres);

#endif
