/* What the files of pc_meanshift_image_rows share: the run's state (plan, the rows held, the strip
 * being fused, the region graph growing strip by strip, the stopped climbs) and the steps that
 * image_rows.c drives: reading rows (image_rows_io.c), fusing strips and building the graph
 * (image_rows_graph.c). */
#ifndef PC_MEANSHIFT_IMAGE_ROWS_INTERNAL_H
#define PC_MEANSHIFT_IMAGE_ROWS_INTERNAL_H

#include "image_internal.h"

/* A mode for a fusion test that had to wait for a stopped climb: either a copy (an index into
 * rows_graph.saved) or, with this bit, the stopped climb's id (its mode is known once it ends). */
#define PC__ROWS_CLIMB ((size_t)1 << (sizeof(size_t) * 8 - 1))
#define PC__ROWS_NONE SIZE_MAX

typedef struct {
    size_t a, b; /* strip regions (ids over the whole run), a < b */
} rows_pair;

typedef struct {
    size_t a, b;   /* strip regions of two 8-connected valid pixels */
    size_t ma, mb; /* their modes: see PC__ROWS_CLIMB */
} rows_wait;

/* The regions of every strip so far, numbered in raster order of their first pixels (strip by
 * strip), with who touches whom, and the fusion tests that wait for stopped climbs. */
typedef struct {
    size_t count, cap, bands;
    size_t *parent;   /* union-find over strip regions: the root of a set is its smallest member */
    int64_t *size;    /* pixels of each strip region */
    int sums;         /* 1: sums kept (integer pixels, whose sums are exact in any order) */
    double *sum;      /* count x bands sums of original values */
    rows_pair *pairs; /* touching strip regions, one of them small within its strip (min_size > 1) */
    size_t npairs, cap_pairs;
    rows_wait *waits;
    size_t nwaits, cap_waits;
    float *saved; /* modes copied for waiting tests, bands each */
    size_t nsaved, cap_saved;
    size_t peak_bytes;
} rows_graph;

/* Stopped climbs waiting for the strip that holds their window's centre row. */
typedef struct {
    size_t *ids;
    size_t count, cap;
} rows_bucket;

/* The temporary file that keeps the strip regions' numbers when the caller gives no scratch. */
typedef struct {
    int fd;
} rows_tmpfile;

typedef struct {
    /* the image and the plan */
    size_t width, height, bands, elem;
    pc_dtype dtype;
    size_t strip_rows, halo, strips, cap_rows;
    const pc_image_rows *io;
    int e;          /* values are scaled by 2^e, as pc_meanshift_image does */
    double hr;      /* scaled range bandwidth */
    int64_t min_size;
    pc__msi_filter_params fp;
    /* the rows held: planes and flags for rows held0 .. held0 + held - 1 */
    float *planes;
    size_t plane_stride;
    uint8_t *ok;
    size_t held0, held;
    void *raw;      /* strip_rows rows as the callback gives them */
    uint8_t *valid;
    /* the strip being fused */
    float *modes;      /* strip_rows x width x bands */
    int32_t *region;   /* strip_rows x width: strip region numbers, -1 for nodata */
    size_t *uf;        /* strip_rows x width: union-find over the strip's pixels */
    uint8_t *stopped;  /* strip_rows x width: 1 where the climb stopped */
    /* the last row of the strip before, for the seam */
    size_t *seam_region; /* width: strip region id, or PC__ROWS_NONE for nodata */
    size_t *seam_mode;   /* width: PC__ROWS_CLIMB | climb id for a stopped climb, else 0 */
    float *seam_modes;   /* width x bands */
    /* the run's state */
    rows_graph graph;
    size_t *strip_base; /* strips + 1: the first strip region id of each strip */
    pc__msi_climbs climbs;
    uint8_t *climb_over;
    size_t cap_over;
    rows_bucket *buckets; /* strips */
    size_t waiting;       /* climbs not over */
    rows_tmpfile tmp;
    size_t valid_count;
    double t_read;
    pc_image_rows_report rep;
} rows_run;

/* image_rows_io.c */
pc_status pc__rows_hold(rows_run *run, size_t row0, size_t row1); /* rows row0 .. row1 - 1 held */
pc_status pc__rows_read_raw(rows_run *run, size_t row0, size_t rows); /* into raw and valid */
pc_status pc__rows_scratch_open(rows_run *run);
void pc__rows_scratch_close(rows_run *run);
pc_status pc__rows_scratch_write(rows_run *run, size_t row0, size_t rows, const int32_t *labels);
pc_status pc__rows_scratch_read(rows_run *run, size_t row0, size_t rows, int32_t *labels);
/* A callback's failure, recorded with where it happened. */
pc_status pc__rows_callback_failed(pc_status st, const char *what, size_t row0, size_t rows);

/* image_rows_graph.c */
void pc__rows_graph_free(rows_graph *g);
/* Fuses strip s (its climbs done, except those marked in run->stopped, whose ids follow first_climb
 * in pixel order), joins it to the strip before across the seam and keeps its last row for the next. */
pc_status pc__rows_fuse_strip(rows_run *run, size_t s, size_t first_climb);
/* Once every climb is over: the waiting fusion tests, then the fused regions (numbered in the order
 * of their first pixels): fused[i] receives strip region i's, *regions their count, sizes and (for
 * integer pixels) sums filled in g (allocated here); the neighbour lists of the small ones follow
 * from the pairs once the sums are known (pc__rows_neighbours). */
pc_status pc__rows_fuse_all(rows_run *run, size_t **fused, pc__msi_graph *g);
pc_status pc__rows_neighbours(rows_run *run, const size_t *fused, pc__msi_graph *g, size_t **start, size_t **next);

#endif
