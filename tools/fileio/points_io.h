/* The file formats of parclust's programs: points and labels in text (CSV/TSV/whitespace) or NumPy
 * .npy, and output files that appear whole or not at all. Depends on libc only, not on libparclust. */
#ifndef PCLI_POINTS_IO_H
#define PCLI_POINTS_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every function that can fail returns 0 on success; on failure it returns -1 and writes one
 * human-readable line (no trailing newline) naming the file into err (size errsize), e.g.
 * "data.csv: line 7 has 2 values, expected 3". The format is chosen by extension: ".npy" (any case)
 * is NumPy, anything else is text. */

/* The element types the library reads in place (its pc_dtype, without depending on it). */
typedef enum { PCLI_F32 = 0, PCLI_F64, PCLI_U8, PCLI_U16 } pcli_dtype;

/* Points as read: row-major n x dim values of `type` at `values`. A .npy of float32, float64, uint8
 * or uint16 is the file itself, mapped (no copy, no conversion); other integer .npy types are
 * converted once (int8, int16 to float32, int32, uint32, int64, uint64 to float64, exact up to
 * 2^53); text is read into float32. */
typedef struct {
    const void *values;
    pcli_dtype type;
    size_t n;
    size_t dim;
    void *map;      /* the mapping of a .npy, or NULL */
    size_t map_len;
    void *owned;    /* memory that values or data point into, or NULL */
    float *f32;     /* a float32 copy made by pcli_matrix_f32 */
} pcli_matrix;

void pcli_matrix_free(pcli_matrix *m); /* NULL-safe; leaves an empty matrix */
/* The points as float32 rows (for plots): the values themselves when the type is float32, else a
 * copy made once and kept in m. NULL (error in err) when memory runs out. */
const float *pcli_matrix_f32(pcli_matrix *m, char *err, size_t errsize);

/* The memory the readers may hold (bytes): text points and labels, and .npy labels, are refused
 * once their values (or the file's bytes, for .npy labels) would take more, and text once 4 times
 * as many bytes are read (an input of comments fed forever), with a message naming the limit. The
 * program's (pcli_set_memory_limit, > 0), else the environment's PARCLUST_MAX_MEMORY ("512M", "2G",
 * "8GiB", bytes), else half of the physical memory, or ulimit -v if lower. why (may be NULL): which. */
void pcli_set_memory_limit(double bytes);
#define PCLI_TEXT_BLOCK ((size_t)1 << 20)     /* text is read and parsed this many bytes at a time */
#define PCLI_TEXT_MAX_LINE ((size_t)64 << 20) /* the longest line of text taken */
#define PCLI_TEXT_MAX_RATIO 4                 /* text read: at most this many times the memory limit */
double pcli_memory_limit(const char **why);

/* Whether the first row of a text file is a header (the first line that is neither blank nor a
 * comment). AUTO: when none of its fields is a number; a row with some fields numbers and some not
 * is neither, and an error naming the line and column, so that no row is dropped unnoticed. YES: it
 * is skipped whatever it holds. NO: it is data. A .npy file has no header row: the choice is moot. */
typedef enum { PCLI_HEADER_AUTO = 0, PCLI_HEADER_YES, PCLI_HEADER_NO } pcli_header;

/* "auto", "yes" or "no" (also true/false/1/0, any case); 0, or -1 for any other word. */
int pcli_header_parse(const char *s, pcli_header *out);

/* What a reader found, for the run's summary: the rows read, and the line of the header it skipped
 * (0: none). */
typedef struct {
    size_t rows;
    size_t header_line;
    const char *type; /* .npy points: the type the values are seen in ("uint8", ...); else NULL */
    int mapped;       /* .npy points: 1 when the file itself is read (no copy) */
} pcli_read_info;

/* Text: read and parsed a block (1 MiB) at a time, so binary content is refused at its first block;
 * lines of at most 64 MiB. CSV, TSV, ';'- or blank-separated, UTF-8 or ASCII, lines ended by LF, CRLF or CR; an
 * optional header row (above), '#' comments (whole lines or the rest of a line, as np.loadtxt) and
 * blank lines skipped. Numbers are read as NumPy reads them: decimal, with an optional exponent,
 * inf/infinity/nan in any case, no hexadecimal, no "1_000"; every value must be finite as a float32.
 * NPY: '<f4', '<f8', '|u1', '<u2' (mapped), '|i1', '<i2', '<i4', '<u4', '<i8', '<u8' (converted),
 * C order, shape (n, d) or (n,), a file exactly as long as its header says (a header that lies about
 * the size is refused before any value is read); its float values are checked by the library.
 * n >= 1 and dim >= 1 on success. info may be NULL. */
int pcli_read_points_ex(const char *path, pcli_header header, pcli_matrix *out, pcli_read_info *info,
                        char *err, size_t errsize);
int pcli_read_points(const char *path, pcli_matrix *out, char *err, size_t errsize); /* header AUTO */

/* One integer per line (header row as above; "3.0" accepted) or .npy of '<i4', '<i8', '<f4', '<f8'
 * with integer values, shape (n,) or (n, 1). *labels is malloc'd; n >= 1 on success. */
int pcli_read_labels_ex(const char *path, pcli_header header, int32_t **labels, size_t *n,
                        pcli_read_info *info, char *err, size_t errsize);
int pcli_read_labels(const char *path, int32_t **labels, size_t *n, char *err, size_t errsize);

/* The writers: .npy (any case) is NumPy, little-endian, C order, written as its header and then the
 * array in one write; anything else is text, formatted into 1 MiB blocks (no stdio call per value),
 * values separated by a tab in .tsv and by a comma otherwise (.csv, .txt). Each replaces path whole
 * or not at all (pcli_outfile below). */

/* Labels in [0, clusters) or -1. Text: one integer per line ("%d"); .npy: shape (n,) in the smallest
 * signed type that holds them (npy_format.h: '|i1' up to 128 clusters, '<i2' up to 32768, else '<i4');
 * a label outside that range is refused (nothing is written). */
int pcli_write_labels(const char *path, const int32_t *labels, size_t n, size_t clusters, char *err,
                      size_t errsize);

/* Text: one row per line, no header, each value as printf's "%.9g" prints it (so float32 values
 * round-trip; the digits are made by hand, exactly); .npy: '<f4' shape (n, dim). */
int pcli_write_matrix(const char *path, const float *data, size_t n, size_t dim, char *err,
                      size_t errsize);

/* Row-major rows x cols float64: text as printf's "%.17g" (round-trips; integers print as integers),
 * .npy '<f8' shape (rows, cols). names: the text's header row, cols names (NULL: none; never in .npy). */
int pcli_write_matrix_f64(const char *path, const double *data, size_t rows, size_t cols,
                          const char *const *names, char *err, size_t errsize);

/* An int64 table given by columns: columns[c] holds the rows values of column c (NULL: the row's
 * number, 0, 1, ...). Text: decimal integers, header row names as above; .npy: '<i8' shape
 * (rows, cols), row-major. */
int pcli_write_columns_i64(const char *path, const int64_t *const *columns, size_t rows, size_t cols,
                           const char *const *names, char *err, size_t errsize);

/* An output file written whole or not at all: the data go to path + ".tmp.XXXXXX" in the same
 * directory, and commit renames it over path. Use for any other output a program writes:
 *     pcli_outfile f;
 *     if (pcli_outfile_open(&f, path, err, size)) return -1;
 *     ... fprintf(f.fp, ...) ...
 *     return pcli_outfile_commit(&f, err, size);   (or pcli_outfile_discard(&f) on a failure)
 * commit checks every write, closes and renames; on failure it removes the temporary file. */
typedef struct {
    FILE *fp;
    char *tmp_path;
    const char *path;
} pcli_outfile;

int pcli_outfile_open(pcli_outfile *f, const char *path, char *err, size_t errsize);
int pcli_outfile_commit(pcli_outfile *f, char *err, size_t errsize);
void pcli_outfile_discard(pcli_outfile *f); /* closes and removes the temporary file; idempotent */

/* Writes one error line into err and returns -1, so that error paths of the file code read
 * `return pcli_fail(err, errsize, "%s: ...", path);`. */
int pcli_fail(char *err, size_t errsize, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* 1 when path ends with ext (".npy"), ignoring ASCII case. */
int pcli_has_extension(const char *path, const char *ext);

#endif /* PCLI_POINTS_IO_H */
