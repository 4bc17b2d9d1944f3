/* parclust segment's command line, shared with parclust-mpi segment (which takes the same options):
 * the algorithms, the parsed options, their defaults and the parser (cmd_segment.c). */
#ifndef PARCLUST_SEGMENT_CLI_H
#define PARCLUST_SEGMENT_CLI_H

#include "cli.h"
#include "raster_io.h"
#include "segment_stream.h"

enum { ALG_HCA = 1, ALG_KMEANS = 2, ALG_MEANSHIFT = 4, ALG_HECA = 8 };

typedef struct {
    const char *input, *output, *preview, *truth;
    int algorithm, palette;
    size_t preview_size;
    int bands[PCLI_MAX_BANDS];
    pcli_read_options read;
    pc_hca_params hca;
    pc_heca_params heca;     /* the members; the cut is hca's */
    pc_kmeans_params km;
    pc_meanshift_image_params ms;
    const char *only_for[32]; /* an option given that belongs to the algorithms in only_mask */
    int only_mask[32], only_count;
    int range_given;         /* --range-bandwidth was given (else it follows the pixel type) */
    pcli_label_format labels_format; /* --ot, --co */
    const char *co[64];
    const char *init_file;   /* k-means --init FILE */
    double max_memory;       /* --max-memory, 0: not given */
    seg_box box;             /* --box */
    /* Set by check_limits when the run does not fit in memory and streams: what it would hold. */
    int stream;
    double stream_need, stream_pixels;
    char limit_what[160];
} seg_cli;

/* The defaults (HCA, every algorithm's params initialised). */
void cli_segment_defaults(seg_cli *c);
/* Parses argv (argv[0] "segment") into c (after cli_segment_defaults): 0 ok, 1 --help printed, -1
 * error printed (exit CLI_USAGE). */
int cli_segment_parse(int argc, char **argv, seg_cli *c);

#endif
