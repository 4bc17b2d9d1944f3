/* Images for `parclust segment` and `parclust generate scene`: rasters through GDAL (when the CLI is
 * built with it) and NumPy (H, W) / (H, W, B) arrays (always). The pixels of the chosen bands are held
 * once, pixel-interleaved, in the type the library reads in place (uint8, uint16) or float32. */
#ifndef PCLI_RASTER_IO_H
#define PCLI_RASTER_IO_H

#include <stddef.h>
#include <stdint.h>

#define PCLI_MAX_BANDS 64

typedef enum { PCLI_PIX_U8 = 0, PCLI_PIX_U16, PCLI_PIX_F32 } pcli_pixtype;

size_t pcli_pixtype_size(pcli_pixtype t);
const char *pcli_pixtype_name(pcli_pixtype t); /* "uint8", "uint16", "float32" */

typedef struct {
    size_t width, height, bands; /* bands: the bands read (the chosen ones, in the order asked) */
    pcli_pixtype type;           /* how the pixels are held */
    /* Value = held value - offset: int16 bands are held as uint16 shifted by 32768 (exact, and half
     * the memory of float32); 0 otherwise. */
    double offset;
    void *pixels;                /* height x width x bands, pixel-interleaved, malloc'd */
    /* One bit per pixel (row-major, bit i % 8 of byte i / 8): 1 = valid. A pixel is invalid when any
     * chosen band holds its nodata value there, or NaN. */
    uint8_t *valid;
    size_t n_valid;
    double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS]; /* range of the valid values of each band */
    char source_type[64];        /* what the file holds, e.g. "Int16 (held as uint16 + 32768)" */
    /* Georeferencing (GDAL inputs), copied to the label raster. */
    int has_geotransform;
    double geotransform[6];
    char *projection;            /* WKT, malloc'd; NULL when the input has none */
    int is_npy;                  /* read from .npy: labels go to .npy */
    /* Known from the header: 1 when some pixel may turn out nodata (a chosen band has a nodata value
     * its type can hold, or float bands, which may hold NaN); 0 when every pixel is surely valid. */
    int may_have_nodata;
    /* Values that float32 cannot hold as the file has them (bands of Float64, Int32, UInt32, ...):
     * finite beyond float32's range (held as infinity, so nodata), and integers beyond 2^24 that
     * float32 rounds (kept, rounded). The caller warns. */
    size_t beyond_f32, rounded_f32;
} pcli_image;

static inline int pcli_image_is_valid(const pcli_image *im, size_t i) { return im->valid[i >> 3] >> (i & 7) & 1; }

/* How the pixels should be read. */
typedef struct {
    const int *bands;   /* 1-based band numbers; NULL: all bands */
    size_t nbands;
    int has_nodata;     /* 1: `nodata` overrides the file's nodata value for every band (NaN: only
                           NaN is nodata, which it always is) */
    double nodata;
    /* Called once the header is read, before any pixel is allocated or read: width, height, bands,
     * type, source_type and may_have_nodata are set. Nonzero (err filled) stops the read, so a run
     * that cannot work is refused before it reads gigabytes. NULL: no check. */
    int (*check_header)(const pcli_image *im, void *ctx, char *err, size_t errsize);
    void *check_ctx;
    int threads;        /* threads reading a GeoTIFF (each through its own GDAL handle); 0: every core */
} pcli_read_options;

/* 1 when this build can read and write rasters through GDAL. */
int pcli_have_gdal(void);

/* Reads path (.npy by extension, anything else through GDAL) into im. Errors (one line in err): the
 * file cannot be opened or is not an image, a band number out of range, a band type that cannot be
 * clustered, a read error (truncated file), no valid pixel at all, out of memory. */
int pcli_image_read(const char *path, const pcli_read_options *opt, pcli_image *im, char *err, size_t errsize);
void pcli_image_free(pcli_image *im); /* NULL-safe; leaves an empty image */

/* Moves the valid pixels, in order, to the front of im->pixels (in place, no copy of the image). */
void pcli_image_compact(pcli_image *im);
/* The labels of image row y, one a pixel: compact labels (one a valid pixel, in order) taken from
 * labels[*cursor++] for valid pixels, or labels[y * width + x] (compact = 0); -1 for invalid pixels. */
void pcli_image_expand_row(const pcli_image *im, size_t y, const int32_t *labels, int compact, size_t *cursor,
                           int32_t *out);

/* The integer type of a label raster and its nodata value (the label of nodata pixels, and of the
 * noise of HCA --noise): Byte 255 (clusters 0..254), UInt16 65535 (0..65534), Int32 -1. AUTO: the
 * first of them that holds the clusters. Int8 and Int16 (nodata -1) are .npy's alone, chosen by the
 * cluster count as every .npy of labels is (npy_format.h); --ot does not take them. */
typedef enum {
    PCLI_LABELS_AUTO = 0,
    PCLI_LABELS_BYTE,
    PCLI_LABELS_UINT16,
    PCLI_LABELS_INT32,
    PCLI_LABELS_INT8,
    PCLI_LABELS_INT16
} pcli_label_type;

/* "Byte", "UInt16", "Int32" (GDAL's names, as --ot takes them; any case); -1 for another. */
int pcli_label_type_parse(const char *name, pcli_label_type *type);
const char *pcli_label_type_name(pcli_label_type type);
double pcli_label_type_nodata(pcli_label_type type);
size_t pcli_label_type_max_clusters(pcli_label_type type);
/* The type a label GeoTIFF of `clusters` clusters gets: `asked` unless AUTO. */
pcli_label_type pcli_label_type_for(pcli_label_type asked, size_t clusters);
/* The type the label raster `path` gets: a .npy Int8, Int16 or Int32 by the clusters (asked is for
 * GeoTIFFs), anything else pcli_label_type_for's. */
pcli_label_type pcli_label_type_of_output(const char *path, pcli_label_type asked, size_t clusters);
size_t pcli_label_type_size(pcli_label_type type); /* bytes a label */
int pcli_label_type_raster(pcli_label_type type);  /* the pcli_raster_spec type that stores it */

/* How label GeoTIFFs are written: the type, and GDAL GTiff creation options (NAME=VALUE, as
 * gdal_translate -co) that override the defaults (deflate level 1 with the horizontal predictor,
 * 512 x 512 tiles, BIGTIFF when needed, compression on every core or on `threads`). */
typedef struct {
    pcli_label_type type;
    const char *const *options;
    size_t n_options;
    int threads; /* 0: NUM_THREADS=ALL_CPUS */
} pcli_label_format;

/* Checks the creation options before any work: each NAME=VALUE, a name and value the GTiff driver
 * takes, and a small file created with them in memory. 0, or -1 with a one-line reason in err. An
 * option GDAL takes but ignores (ZLEVEL=99) is not refused: warning gets a line that says so ("--co:
 * ..."; empty when there is none). */
int pcli_label_format_check(const pcli_label_format *fmt, char *warning, size_t warnsize, char *err, size_t errsize);

/* Writes the labels of the image's pixels to path: a GeoTIFF (fmt's type for `clusters` clusters,
 * its nodata value, the input's geotransform and projection, fmt's creation options) through GDAL,
 * or .npy (int8, int16 or int32 by the clusters, shape (H, W), -1 for nodata) by extension; fmt
 * NULL: the defaults. labels are per valid pixel in order (compact = 1; n_valid of them) or per pixel (compact = 0); -1 (HCA's noise)
 * and invalid pixels get the nodata value. A type that cannot hold the clusters is refused. path is
 * written in place: the caller stages it (pcli_outputs, output_files.h). */
int pcli_labels_write(const char *path, const pcli_image *im, const int32_t *labels, int compact, size_t clusters,
                      const pcli_label_format *fmt, char *err, size_t errsize);

/* Reads a label raster of the image's size (GeoTIFF band 1 or .npy (H, W) integers) and keeps the
 * labels of the image's valid pixels, in order (n_valid, malloc'd). Its own nodata pixels read -1. */
int pcli_labels_read_valid(const char *path, const pcli_image *im, int32_t **labels, char *err, size_t errsize);
/* The same for the image rows y0 .. y0 + rows->height - 1 of a label raster `height` rows high: rows is
 * those rows' image (width, height = its row count, valid bits). */
int pcli_labels_read_valid_rows(const char *path, const pcli_image *rows, size_t y0, size_t height, int32_t **labels,
                                char *err, size_t errsize);
/* Opens a label raster and checks, without reading it whole, that pcli_labels_read_valid can read it
 * for an image of width x height: the same size, an integer type (.npy), data not cut short (.npy),
 * its first and last rows readable (GDAL). */
int pcli_labels_check(const char *path, size_t width, size_t height, char *err, size_t errsize);
/* Refuses, with a one-line reason, what cannot be an image file: a missing or unreadable path, a
 * directory, an empty file. */
int pcli_check_input_file(const char *path, char *err, size_t errsize);

/* A raster written row block by row block (the scene generator, streamed segmentations): GeoTIFF
 * through GDAL, or .npy (H, W, B) / (H, W) when path ends in .npy. */
typedef struct pcli_raster_writer pcli_raster_writer;
typedef struct {
    size_t width, height, bands;
    int type;               /* 0 uint8, 1 uint16, 2 float32, 3 int32, 4 int8 and 5 int16 (.npy only) */
    int has_nodata;
    double nodata;
    const double *geotransform; /* 6 values or NULL */
    int epsg;                   /* projection by EPSG code, 0 = none */
    const char *projection;     /* projection as WKT (over epsg), or NULL */
    /* Labels (GeoTIFF): created with pcli_labels_write's creation options (the defaults and fmt's
     * --co); NULL: uncompressed, as the scene generator writes. */
    const pcli_label_format *labels;
} pcli_raster_spec;
int pcli_raster_create(const char *path, const pcli_raster_spec *spec, pcli_raster_writer **w, char *err,
                       size_t errsize);
/* rows x width x bands values, pixel-interleaved, of the spec's type, for rows y0 .. y0 + rows - 1
 * (blocks in any order; in order, a .npy is written without a seek). */
int pcli_raster_write_rows(pcli_raster_writer *w, size_t y0, size_t rows, const void *data, char *err,
                           size_t errsize);
/* The file's block (GeoTIFF: its tiles or strips; .npy: one row): writes of whole rows of blocks
 * go to the file without waiting in GDAL's block cache for the rest of their blocks. */
void pcli_raster_block(const pcli_raster_writer *w, size_t *block_width, size_t *block_height);
/* A band's statistics (minimum, maximum, mean, standard deviation of its valid values), stored with a
 * GeoTIFF (as GDAL's STATISTICS_* items, which `parclust segment --box stats` and gdalinfo read); a .npy
 * has no place for them. Exact minima and maxima let a streamed HCA skip its pass for the box. */
void pcli_raster_set_statistics(pcli_raster_writer *w, size_t band, const double stats[4]);
int pcli_raster_close(pcli_raster_writer *w, char *err, size_t errsize); /* flushes; frees w */
void pcli_raster_abort(pcli_raster_writer *w); /* frees w; the caller removes the file */

#endif /* PCLI_RASTER_IO_H */
