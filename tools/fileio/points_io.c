/* Reads and writes the CLI's points and labels (text and NumPy .npy), with errors that name the file
 * and line, and outputs that replace their target atomically (temporary file + rename). */
#define _GNU_SOURCE /* sync_file_range (Linux) */
#define _POSIX_C_SOURCE 200809L

#include "points_io.h"

#include "npy_format.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int pcli_fail(char *err, size_t errsize, const char *fmt, ...)
{
    if (err && errsize) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsize, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int pcli_has_extension(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    if (lp < le)
        return 0;
    for (size_t i = 0; i < le; i++)
        if (tolower((unsigned char)path[lp - le + i]) != tolower((unsigned char)ext[i]))
            return 0;
    return 1;
}

void pcli_matrix_free(pcli_matrix *m)
{
    if (!m)
        return;
    if (m->map)
        munmap(m->map, m->map_len);
    free(m->owned);
    free(m->f32);
    memset(m, 0, sizeof *m);
}

/* Element i of values of `type` as a double (exact for all four). */
static double value_at(const void *values, pcli_dtype type, size_t i)
{
    switch (type) {
    case PCLI_F32: return ((const float *)values)[i];
    case PCLI_F64: return ((const double *)values)[i];
    case PCLI_U8: return ((const uint8_t *)values)[i];
    case PCLI_U16: return ((const uint16_t *)values)[i];
    }
    return 0;
}

const float *pcli_matrix_f32(pcli_matrix *m, char *err, size_t errsize)
{
    if (m->type == PCLI_F32)
        return m->values;
    if (!m->f32) {
        if (!(m->f32 = malloc(m->n * m->dim * sizeof *m->f32))) {
            pcli_fail(err, errsize, "out of memory for a float32 copy of %zu x %zu points", m->n, m->dim);
            return NULL;
        }
        for (size_t i = 0; i < m->n * m->dim; i++)
            m->f32[i] = (float)value_at(m->values, m->type, i);
    }
    return m->f32;
}

/* ---------------------------------------------------------------- the memory limit */

static double limit_set; /* pcli_set_memory_limit's; 0: none */

void pcli_set_memory_limit(double bytes) { limit_set = bytes > 0 ? bytes : 0; }

/* "512M", "2G", "8GiB", "1000000" (bytes): K, M, G, T are powers of 1024. -1 for anything else. */
static double parse_size(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (*end && !u)
        return -1;
    if (u) {
        for (const char *k = units; k <= u; k++)
            v *= 1024;
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
    } else if (*end == 'B' || *end == 'b') {
        end++;
    }
    return *end ? -1 : v;
}

double pcli_memory_limit(const char **why)
{
    const char *w = "set by the program";
    double limit = limit_set;
    const char *env = getenv("PARCLUST_MAX_MEMORY");
    if (!(limit > 0) && env && parse_size(env) > 0) {
        limit = parse_size(env);
        w = "PARCLUST_MAX_MEMORY";
    }
    if (!(limit > 0)) { /* as segment's --max-memory: half of the physical memory, or ulimit -v if lower */
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        limit = pages > 0 && page > 0 ? (double)pages * (double)page / 2 : 4.0 * 1024 * 1024 * 1024;
        w = "half of the physical memory";
        struct rlimit rl;
        if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < limit) {
            limit = (double)rl.rlim_cur;
            w = "ulimit -v";
        }
    }
    if (why)
        *why = w;
    return limit;
}

/* -1 (error in err) when PARCLUST_MAX_MEMORY is set to what is not a size: said, never ignored. */
static int check_limit_env(const char *path, char *err, size_t errsize)
{
    const char *env = getenv("PARCLUST_MAX_MEMORY");
    if (env && *env && !(parse_size(env) > 0))
        return pcli_fail(err, errsize, "%s: not read: PARCLUST_MAX_MEMORY='%.40s' is not a size (512M, 2G, 8GiB or "
                         "bytes)", path, env);
    return 0;
}

/* "1.5 GiB" */
static const char *bytes_text(double b, char *buf, size_t size)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    for (; b >= 1024 && u < 4; u++)
        b /= 1024;
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, units[u]);
    return buf;
}

/* The error of an input that outgrows the memory limit: what outgrew it, and how to set another. */
static int limit_fail(char *err, size_t errsize, const char *path, const char *where, const char *what)
{
    const char *why;
    char b[32];
    double limit = pcli_memory_limit(&why);
    int env = strcmp(why, "PARCLUST_MAX_MEMORY") == 0;
    return pcli_fail(err, errsize, "%s: %s%s exceed the memory limit, %s (%s%s%s): an input that never ends, or one "
                     "too large to hold", path, where, what, bytes_text(limit, b, sizeof b), env ? "from " : "", why,
                     env ? "" : "; PARCLUST_MAX_MEMORY=SIZE sets another");
}

/* ---------------------------------------------------------------- whole-file input */

/* The whole file, NUL-terminated, at most the memory limit (a pipe or device may never end); magic
 * (or NULL): what the file must begin with, checked on the first block, before reading on. */
static int read_whole_file(const char *path, const char *magic, const char *not_magic, unsigned char **out,
                           size_t *len, char *err, size_t errsize)
{
    if (check_limit_env(path, err, errsize))
        return -1;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return pcli_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
    double limit = pcli_memory_limit(NULL);
    size_t cap = (size_t)1 << 16, used = 0;
    unsigned char *buf = malloc(cap + 1);
    if (!buf)
        goto oom;
    while (!feof(fp) && !ferror(fp)) {
        if (magic && used >= strlen(magic) && memcmp(buf, magic, strlen(magic)) != 0) {
            free(buf);
            fclose(fp);
            return pcli_fail(err, errsize, "%s: %s", path, not_magic);
        }
        if (used == cap) {
            if ((double)cap * 2 > limit) {
                free(buf);
                fclose(fp);
                return limit_fail(err, errsize, path, "", "the file's bytes");
            }
            if (cap > SIZE_MAX / 2 - 1)
                goto oom;
            unsigned char *bigger = realloc(buf, cap * 2 + 1);
            if (!bigger)
                goto oom;
            buf = bigger;
            cap *= 2;
        }
        used += fread(buf + used, 1, cap - used, fp);
    }
    if (ferror(fp)) {
        int e = errno;
        free(buf);
        fclose(fp);
        return pcli_fail(err, errsize, "%s: read failed: %s", path, strerror(e));
    }
    fclose(fp);
    if (magic && memcmp(buf, magic, used < strlen(magic) ? used : strlen(magic)) != 0) {
        free(buf);
        return pcli_fail(err, errsize, "%s: %s", path, not_magic);
    }
    buf[used] = '\0';
    *out = buf;
    *len = used;
    return 0;
oom:
    free(buf);
    fclose(fp);
    return pcli_fail(err, errsize, "%s: out of memory reading the file", path);
}

/* ---------------------------------------------------------------- text input */

typedef enum { WANT_POINTS, WANT_LABELS } want_kind;

/* Both kinds store 4-byte values (float or int32), so one growable byte array serves both. */
typedef struct {
    const char *name;
    want_kind kind;
    unsigned char *vals;
    size_t count, cap; /* in values */
    char **fields;
    size_t nfields, fields_cap;
    size_t dim, rows;
    char delim; /* ',' or ';'; ' ' = runs of blanks; 0 = not yet known */
    int first_line_seen;
    pcli_header header;
    size_t header_line; /* the header row skipped; 0 = none */
    size_t max_values;  /* the memory limit, in values */
} text_parser;

/* The blanks NumPy strips around a field and splits blank-separated rows on (CR only ever ends a
 * line here, but a field cut from one is still trimmed). */
static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; }

/* A tab-separated file is split on runs of blanks: missing values are errors either way, and this
 * also reads columns aligned with several tabs. */
static char detect_delimiter(const char *line)
{
    if (strchr(line, ','))
        return ',';
    if (strchr(line, ';'))
        return ';';
    return ' ';
}

static int push_field(text_parser *p, char *field)
{
    if (p->nfields == p->fields_cap) {
        size_t cap = p->fields_cap ? p->fields_cap * 2 : 16;
        char **bigger = realloc(p->fields, cap * sizeof *bigger);
        if (!bigger)
            return -1;
        p->fields = bigger;
        p->fields_cap = cap;
    }
    p->fields[p->nfields++] = field;
    return 0;
}

/* Trims blanks and one pair of double quotes (spreadsheets quote numbers now and then). */
static char *trim_field(char *s)
{
    while (is_blank(*s))
        s++;
    size_t len = strlen(s);
    while (len && is_blank(s[len - 1]))
        s[--len] = '\0';
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
        s[len - 1] = '\0';
        s++;
    }
    return s;
}

static int split_line(text_parser *p, char *s)
{
    p->nfields = 0;
    if (p->delim == ' ') {
        for (;;) {
            while (is_blank(*s))
                s++;
            if (!*s)
                return 0;
            char *start = s;
            while (*s && !is_blank(*s))
                s++;
            if (*s)
                *s++ = '\0';
            if (push_field(p, trim_field(start)))
                return -1;
        }
    }
    for (;;) {
        char *start = s;
        while (*s && *s != p->delim)
            s++;
        char end = *s;
        *s = '\0';
        if (push_field(p, trim_field(start)))
            return -1;
        if (!end)
            return 0;
        s++;
    }
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* s equals word (lower case), ignoring ASCII case. */
static int same_word(const char *s, const char *word)
{
    for (; *word; s++, word++)
        if (tolower((unsigned char)*s) != *word)
            return 0;
    return *s == '\0';
}

/* Whether s is a number as np.loadtxt reads one: [+-], digits with an optional '.' (a digit on
 * either side of it), an optional exponent; or inf, infinity, nan in any case. strtod alone also
 * takes hexadecimal ("0x10" is 16, "0x1p3" is 8) and "nan(...)", which NumPy refuses: a file that
 * NumPy cannot read must not be read here as something else. */
static int numpy_number_syntax(const char *s)
{
    if (*s == '+' || *s == '-')
        s++;
    if (same_word(s, "inf") || same_word(s, "infinity") || same_word(s, "nan"))
        return 1;
    size_t digits = 0;
    for (; is_digit(*s); s++)
        digits++;
    if (*s == '.')
        for (s++; is_digit(*s); s++)
            digits++;
    if (!digits)
        return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!is_digit(*s))
            return 0;
        while (is_digit(*s))
            s++;
    }
    return *s == '\0';
}

static int parse_number(const char *s, double *v)
{
    char *end;
    if (!numpy_number_syntax(s))
        return -1;
    *v = strtod(s, &end); /* correctly rounded; out of range gives +-HUGE_VAL or 0, as NumPy's inf or 0 */
    return *end ? -1 : 0;
}

/* Why a field that looks like a number is not one, for the message; "" when nothing better to say. */
static const char *not_number_hint(const char *f)
{
    const char *s = f + (*f == '+' || *f == '-');
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return " (hexadecimal is not read: numbers are decimal, as NumPy reads them)";
    if (is_digit(*s) && strchr(s, '_'))
        return " (write numbers without '_' between digits, as NumPy reads them)";
    return "";
}

/* NULL when v was stored, else why it cannot be. */
static const char *store_value(text_parser *p, double v)
{
    unsigned char *slot = p->vals + p->count * 4;
    if (p->kind == WANT_POINTS) {
        if (!isfinite(v))
            return "value is not finite";
        if (fabs(v) > FLT_MAX)
            return "value is not finite as a float32 (too large)";
        float f = (float)v;
        memcpy(slot, &f, 4);
    } else {
        if (!isfinite(v) || v != floor(v))
            return "label is not an integer";
        if (v < INT32_MIN || v > INT32_MAX)
            return "label is outside the int32 range";
        int32_t i = (int32_t)v;
        memcpy(slot, &i, 4);
    }
    p->count++;
    return NULL;
}

/* 0, -1 out of memory, -2 beyond the memory limit. */
static int reserve_values(text_parser *p, size_t more)
{
    if (p->count + more <= p->cap)
        return 0;
    if (p->count + more > p->max_values)
        return -2;
    size_t cap = p->cap ? p->cap : 1024;
    while (cap < p->count + more) {
        if (cap > SIZE_MAX / 8)
            return -1;
        cap *= 2;
    }
    if (cap > p->max_values)
        cap = p->max_values;
    unsigned char *bigger = realloc(p->vals, cap * 4);
    if (!bigger)
        return -1;
    p->vals = bigger;
    p->cap = cap;
    return 0;
}

/* A field fit to quote in a one-line message: at most 40 bytes, control bytes (binary input) as '?'. */
static const char *quotable(const char *field, char buf[41])
{
    size_t i = 0;
    for (; field[i] && i < 40; i++)
        buf[i] = ((unsigned char)field[i] < 32 || field[i] == 127) ? '?' : field[i];
    buf[i] = '\0';
    return buf;
}

static int parse_row(text_parser *p, size_t lineno, char *err, size_t errsize)
{
    char shown[41];
    size_t k = p->nfields;
    if (p->kind == WANT_LABELS && k != 1)
        return pcli_fail(err, errsize, "%s: line %zu has %zu values; a labels file has one integer per line",
                    p->name, lineno, k);
    if (p->rows == 0)
        p->dim = k;
    else if (k != p->dim)
        return pcli_fail(err, errsize, "%s: line %zu has %zu value%s, expected %zu", p->name, lineno, k,
                    k == 1 ? "" : "s", p->dim);
    int reserved = reserve_values(p, k);
    if (reserved == -2) {
        char where[64];
        snprintf(where, sizeof where, "line %zu: ", lineno);
        return limit_fail(err, errsize, p->name, where, p->kind == WANT_POINTS ? "the points read so far" : "the labels read so far");
    }
    if (reserved)
        return pcli_fail(err, errsize, "%s: out of memory at line %zu", p->name, lineno);
    for (size_t c = 0; c < k; c++) {
        const char *f = p->fields[c];
        double v;
        if (!*f)
            return pcli_fail(err, errsize, "%s: line %zu, column %zu is empty", p->name, lineno, c + 1);
        if (parse_number(f, &v))
            return pcli_fail(err, errsize, "%s: line %zu, column %zu: '%s' is not a number%s", p->name,
                        lineno, c + 1, quotable(f, shown), not_number_hint(f));
        const char *why = store_value(p, v);
        if (why)
            return pcli_fail(err, errsize, "%s: line %zu, column %zu: %s ('%s')", p->name, lineno,
                        c + 1, why, quotable(f, shown));
    }
    p->rows++;
    return 0;
}

/* Only the first row (first line neither blank nor comment) may be a header. Under --header auto it
 * is one when none of its fields is a number; a row of numbers and text is neither a header nor data,
 * and an error: dropping it would shift every label against its point. Empty fields count as
 * neither: "1,,3" is a data row with a missing value (and says so), ",x,y" (pandas' index column) a
 * header. */
static int first_row_is_header(const text_parser *p, size_t lineno, int *header, char *err, size_t errsize)
{
    size_t numbers = 0, text_col = 0;
    double v;
    char shown[41];
    *header = p->header == PCLI_HEADER_YES;
    if (p->header != PCLI_HEADER_AUTO)
        return 0;
    for (size_t i = 0; i < p->nfields; i++) {
        if (!*p->fields[i])
            continue;
        if (parse_number(p->fields[i], &v) == 0)
            numbers++;
        else if (!text_col)
            text_col = i + 1;
    }
    if (text_col && numbers)
        return pcli_fail(err, errsize,
                         "%s: line %zu, column %zu: '%s' is not a number%s, yet the row holds numbers, so it is "
                         "not a header either (--header yes skips the first row)",
                         p->name, lineno, text_col, quotable(p->fields[text_col - 1], shown),
                         not_number_hint(p->fields[text_col - 1]));
    *header = text_col != 0;
    return 0;
}

static int parse_line(text_parser *p, char *line, size_t lineno, char *err, size_t errsize)
{
    char *comment = strchr(line, '#'); /* to the end of the line, as np.loadtxt's comments='#' */
    if (comment)
        *comment = '\0';
    while (is_blank(*line))
        line++;
    if (!*line)
        return 0;
    if (!p->delim)
        p->delim = detect_delimiter(line);
    if (split_line(p, line))
        return pcli_fail(err, errsize, "%s: out of memory at line %zu", p->name, lineno);
    if (p->nfields == 0)
        return pcli_fail(err, errsize, "%s: line %zu has no values", p->name, lineno);
    if (!p->first_line_seen) {
        int header;
        p->first_line_seen = 1;
        if (first_row_is_header(p, lineno, &header, err, errsize))
            return -1;
        if (header) {
            p->header_line = lineno;
            p->delim = 0; /* a header may be written differently from the data: look again */
            return 0;
        }
    }
    return parse_row(p, lineno, err, errsize);
}

/* Text in UTF-16 or UTF-32 (as Windows tools save "Unicode" CSV), by its byte-order mark or, without
 * one, by the NUL in every other byte that ASCII characters get in UTF-16 (at odd offsets little-
 * endian, even ones big-endian); iconv's name for it, or NULL. UTF-8 text has neither (FF and FE never
 * occur in UTF-8, NUL not in text), so a file read today cannot be taken for one. */
static const char *wide_encoding(const unsigned char *b, size_t len)
{
    if (len >= 4 && memcmp(b, "\xFF\xFE\0\0", 4) == 0)
        return "UTF-32LE";
    if (len >= 4 && memcmp(b, "\0\0\xFE\xFF", 4) == 0)
        return "UTF-32BE";
    if (len >= 2 && b[0] == 0xFF && b[1] == 0xFE)
        return "UTF-16LE";
    if (len >= 2 && b[0] == 0xFE && b[1] == 0xFF)
        return "UTF-16BE";
    size_t units = (len < 4096 ? len : 4096) / 2, nul_even = 0, nul_odd = 0;
    for (size_t i = 0; i < units; i++) {
        nul_even += b[2 * i] == 0;
        nul_odd += b[2 * i + 1] == 0;
    }
    if (units && nul_even == 0 && 2 * nul_odd >= units)
        return "UTF-16LE";
    if (units && nul_odd == 0 && 2 * nul_even >= units)
        return "UTF-16BE";
    return NULL;
}

/* Text is read and parsed a block at a time (TEXT_BLOCK bytes; a line cut by a block's end is carried
 * into the next), so a binary file is refused at its first block, not once read whole, and what is
 * held is the values, the block and one line. A line may be at most TEXT_MAX_LINE bytes; the values
 * at most the memory limit, and the text read at most TEXT_MAX_RATIO times it (blank lines and
 * comments hold nothing, but an input of them only, fed forever, must still end). */
#define TEXT_BLOCK PCLI_TEXT_BLOCK
#define TEXT_MAX_LINE PCLI_TEXT_MAX_LINE
#define TEXT_MAX_RATIO PCLI_TEXT_MAX_RATIO

/* The end of the text: the checks on what was read. */
static int text_done(const text_parser *p, char *err, size_t errsize)
{
    if (p->rows == 0 && p->header_line)
        return pcli_fail(err, errsize, "%s: no data rows (only the header, line %zu)", p->name, p->header_line);
    if (p->rows == 0)
        return pcli_fail(err, errsize, "%s: no data rows", p->name);
    if (p->dim == 0)
        return pcli_fail(err, errsize, "%s: rows have no values", p->name);
    return 0;
}

/* Lines end at LF, CRLF or a lone CR (classic Mac OS, and what Python's universal newlines, hence
 * np.loadtxt, take too). */
static int parse_stream(text_parser *p, FILE *fp, char *err, size_t errsize)
{
    /* A file smaller than a block gets a buffer of its size (a pipe or device, a whole block). */
    struct stat st;
    size_t block = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size < TEXT_BLOCK
                       ? (size_t)st.st_size + 1
                       : TEXT_BLOCK;
    size_t cap = block, have = 0, lineno = 0;
    double limit = pcli_memory_limit(NULL), total = 0;
    char *buf = malloc(cap + 1);
    int first = 1, eof = 0, rc = 0;
    if (!buf)
        return pcli_fail(err, errsize, "%s: out of memory for a block of text", p->name);
    while (!eof) {
        if (cap - have < block) { /* a long line: room for it and a block more */
            if (have > TEXT_MAX_LINE) {
                rc = pcli_fail(err, errsize, "%s: line %zu is longer than %zu MiB (no line end): not a text file "
                               "of points? (.npy for binary data)", p->name, lineno + 1, TEXT_MAX_LINE >> 20);
                break;
            }
            char *bigger = realloc(buf, have + block + 1);
            if (!bigger) {
                rc = pcli_fail(err, errsize, "%s: out of memory at line %zu", p->name, lineno + 1);
                break;
            }
            buf = bigger;
            cap = have + block;
        }
        size_t got = fread(buf + have, 1, cap - have, fp);
        if (got == 0) {
            if (ferror(fp)) {
                rc = pcli_fail(err, errsize, "%s: read failed: %s", p->name, strerror(errno));
                break;
            }
            eof = 1;
        }
        total += (double)got;
        char *s = buf, *end = buf + have + got;
        if (first) {
            first = 0;
            const char *wide = wide_encoding((const unsigned char *)buf, have + got);
            if (wide) {
                rc = pcli_fail(err, errsize,
                               "%s: the file is %s text; UTF-8 (or ASCII) is expected: convert it (iconv -f %s -t "
                               "UTF-8) or save it as UTF-8",
                               p->name, wide, wide);
                break;
            }
            if (end - s >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 byte-order mark, as Excel writes */
                s += 3;
            /* Binary content: a control byte text never holds, anywhere in the first block. */
            size_t line = 1;
            for (const char *c = s; c < end && !rc; c++) {
                unsigned char u = (unsigned char)*c;
                line += u == '\n' || (u == '\r' && !(c + 1 < end && c[1] == '\n'));
                if (u == 0)
                    rc = pcli_fail(err, errsize, "%s: line %zu contains a NUL byte (offset %zu): a binary file, not "
                                   "text (.npy for binary data)", p->name, line, (size_t)(c - buf));
                else if ((u < 32 && u != '\n' && u != '\r' && u != '\t' && u != '\v' && u != '\f') || u == 127)
                    rc = pcli_fail(err, errsize, "%s: line %zu contains the control byte 0x%02x (offset %zu): a binary "
                                   "file, not text (.npy for binary data)", p->name, line, u, (size_t)(c - buf));
            }
            if (rc)
                break;
        }
        /* The carried part of a line holds no line end (but a last CR): not scanned again, so a long line
         * costs its length, not its length times its blocks. */
        size_t known = s == buf && have ? (buf[have - 1] == '\r' ? have - 1 : have) : 0;
        while (s < end) {
            char *line_end = s + known;
            known = 0;
            while (line_end < end && *line_end != '\n' && *line_end != '\r' && *line_end)
                line_end++;
            /* a line the block cut, or a CR that may be the first half of a CRLF: with the next block */
            if (!eof && (line_end == end || (*line_end == '\r' && line_end + 1 == end)))
                break;
            lineno++;
            if (line_end < end && !*line_end) {
                rc = pcli_fail(err, errsize, "%s: line %zu contains a NUL byte (binary file? use .npy)", p->name,
                               lineno);
                break;
            }
            char *next = line_end + 1;
            if (line_end < end && *line_end == '\r' && next < end && *next == '\n')
                next++;
            *line_end = '\0'; /* at end too: the buffer holds one byte more */
            if ((rc = parse_line(p, s, lineno, err, errsize)) != 0)
                break;
            s = next < end ? next : end;
        }
        if (rc)
            break;
        if (total > TEXT_MAX_RATIO * limit) { /* after the block's lines: the values' limit is said first */
            char where[64];
            snprintf(where, sizeof where, "line %zu: ", lineno + 1);
            rc = limit_fail(err, errsize, p->name, where, "the bytes of text read so far (4 times the values' limit)");
            break;
        }
        have = (size_t)(end - s);
        memmove(buf, s, have);
    }
    free(buf);
    return rc ? -1 : text_done(p, err, errsize);
}

static void text_parser_free(text_parser *p)
{
    free(p->vals);
    free(p->fields);
}

/* On success *vals (count = rows * dim 4-byte values) belongs to the caller. */
static int read_text(const char *path, want_kind kind, pcli_header header, void **vals, size_t *rows,
                     size_t *dim, size_t *header_line, char *err, size_t errsize)
{
    text_parser p;
    memset(&p, 0, sizeof p);
    p.name = path;
    p.kind = kind;
    p.header = header;
    if (check_limit_env(path, err, errsize))
        return -1;
    double max_values = pcli_memory_limit(NULL) / 4;
    p.max_values = max_values < (double)(SIZE_MAX / 8) ? (size_t)max_values : SIZE_MAX / 8;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return pcli_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
    int rc = parse_stream(&p, fp, err, errsize);
    fclose(fp);
    if (rc) {
        text_parser_free(&p);
        return -1;
    }
    free(p.fields);
    *vals = p.vals;
    *rows = p.rows;
    *dim = p.dim;
    *header_line = p.header_line;
    return 0;
}

/* ---------------------------------------------------------------- .npy input */

typedef enum { NPY_F4, NPY_F8, NPY_I4, NPY_I8, NPY_U1, NPY_U2, NPY_I1, NPY_I2, NPY_U4, NPY_U8 } npy_type;

typedef struct {
    npy_type type;
    size_t itemsize;
    size_t shape[2];
    int ndim;
    const unsigned char *data;
} npy_array;

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Element i as a double; every supported type fits exactly except int64 beyond 2^53. */
static double npy_get(const npy_array *a, size_t i)
{
    const unsigned char *p = a->data + i * a->itemsize;
    uint32_t u32;
    uint64_t u64;
    float f;
    double d;
    int32_t i32;
    int64_t i64;
    switch (a->type) {
    case NPY_F4: u32 = le32(p); memcpy(&f, &u32, 4); return f;
    case NPY_F8: u64 = le64(p); memcpy(&d, &u64, 8); return d;
    case NPY_I4: u32 = le32(p); memcpy(&i32, &u32, 4); return i32;
    case NPY_I8: u64 = le64(p); memcpy(&i64, &u64, 8); return (double)i64;
    case NPY_U1: return p[0];
    case NPY_U2: return (double)(p[0] | p[1] << 8);
    case NPY_I1: return (int8_t)p[0];
    case NPY_I2: return (int16_t)(uint16_t)(p[0] | p[1] << 8);
    case NPY_U4: return le32(p);
    case NPY_U8: return (double)le64(p);
    }
    return 0;
}

/* Value of `key` in the header dict: the text after its ':'. numpy writes single quotes; double
 * quotes are accepted for hand-written files. */
static const char *npy_find_key(const char *hdr, const char *key)
{
    char pattern[32];
    for (int q = 0; q < 2; q++) {
        snprintf(pattern, sizeof pattern, q ? "\"%s\"" : "'%s'", key);
        const char *s = strstr(hdr, pattern);
        if (!s)
            continue;
        s += strlen(pattern);
        while (isspace((unsigned char)*s))
            s++;
        if (*s != ':')
            return NULL;
        s++;
        while (isspace((unsigned char)*s))
            s++;
        return s;
    }
    return NULL;
}

static int npy_parse_descr(const char *name, const char *v, npy_array *a, char *err, size_t errsize)
{
    static const struct {
        const char *descr;
        npy_type type;
        size_t size;
    } known[] = {{"<f4", NPY_F4, 4}, {"<f8", NPY_F8, 8}, {"<i4", NPY_I4, 4}, {"<i8", NPY_I8, 8},
                 {"|u1", NPY_U1, 1}, {"<u1", NPY_U1, 1}, {"<u2", NPY_U2, 2}, {"|i1", NPY_I1, 1},
                 {"<i1", NPY_I1, 1}, {"<i2", NPY_I2, 2}, {"<u4", NPY_U4, 4}, {"<u8", NPY_U8, 8}};
    char descr[16];
    size_t len = 0;
    if (!v || (*v != '\'' && *v != '"'))
        return pcli_fail(err, errsize, "%s: unsupported dtype (structured arrays are not supported)", name);
    char q = *v++;
    while (v[len] && v[len] != q && len < sizeof descr - 1) {
        descr[len] = v[len];
        len++;
    }
    descr[len] = '\0';
    char shown[41]; /* the file's bytes, quoted in a one-line message: control bytes as '?' (found by fuzz_npy) */
    quotable(descr, shown);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(descr, known[i].descr) == 0) {
            a->type = known[i].type;
            a->itemsize = known[i].size;
            return 0;
        }
    }
    if (descr[0] == '>')
        return pcli_fail(err, errsize, "%s: big-endian dtype '%s' is not supported; save as '<%s'", name,
                    shown, shown + 1);
    return pcli_fail(err, errsize,
                "%s: unsupported dtype '%s' (expected <f4, <f8, |u1, <u2, |i1, <i2, <i4, <u4, <i8 or <u8)", name, shown);
}

static int npy_parse_shape(const char *name, const char *v, npy_array *a, char *err, size_t errsize)
{
    int ndim = 0;
    if (!v || *v != '(')
        return pcli_fail(err, errsize, "%s: malformed .npy header (no shape)", name);
    v++;
    for (;;) {
        while (isspace((unsigned char)*v))
            v++;
        if (*v == ')')
            break;
        if (!isdigit((unsigned char)*v))
            return pcli_fail(err, errsize, "%s: malformed .npy header (bad shape)", name);
        char *end;
        errno = 0;
        unsigned long long dim = strtoull(v, &end, 10);
        if (errno || dim > SIZE_MAX)
            return pcli_fail(err, errsize, "%s: shape is too large", name);
        if (ndim < 2)
            a->shape[ndim] = (size_t)dim;
        ndim++;
        v = end;
        if (*v == 'L') /* written by Python 2's numpy */
            v++;
        while (isspace((unsigned char)*v))
            v++;
        if (*v == ',')
            v++;
        else if (*v != ')')
            return pcli_fail(err, errsize, "%s: malformed .npy header (bad shape)", name);
    }
    if (ndim == 0 || ndim > 2)
        return pcli_fail(err, errsize, "%s: array has %d dimensions; expected shape (n, d) or (n,)", name,
                    ndim);
    a->ndim = ndim;
    if (ndim == 1)
        a->shape[1] = 1;
    return 0;
}

static int npy_parse_dict(const char *name, const char *hdr, npy_array *a, char *err, size_t errsize)
{
    if (npy_parse_descr(name, npy_find_key(hdr, "descr"), a, err, errsize))
        return -1;
    const char *fo = npy_find_key(hdr, "fortran_order");
    if (!fo)
        return pcli_fail(err, errsize, "%s: malformed .npy header (no fortran_order)", name);
    if (strncmp(fo, "True", 4) == 0)
        return pcli_fail(err, errsize,
                    "%s: Fortran-order arrays are not supported; save with np.ascontiguousarray()",
                    name);
    if (strncmp(fo, "False", 5) != 0)
        return pcli_fail(err, errsize, "%s: malformed .npy header (bad fortran_order)", name);
    return npy_parse_shape(name, npy_find_key(hdr, "shape"), a, err, errsize);
}

/* Checks the magic, header and size; on success a->data points into buf. */
static int npy_parse(const char *name, const unsigned char *buf, size_t len, npy_array *a,
                     char *err, size_t errsize)
{
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return pcli_fail(err, errsize, "%s: not a NumPy .npy file", name);
    int major = buf[6], minor = buf[7];
    if (major < 1 || major > 3)
        return pcli_fail(err, errsize, "%s: unsupported .npy format version %d.%d", name, major, minor);
    size_t start = major == 1 ? 10 : 12;
    if (len < start)
        return pcli_fail(err, errsize, "%s: truncated .npy header", name);
    size_t hlen = major == 1 ? (size_t)(buf[8] | buf[9] << 8) : (size_t)le32(buf + 8);
    if (hlen > len - start)
        return pcli_fail(err, errsize, "%s: truncated .npy header (%zu bytes announced, %zu present)",
                    name, hlen, len - start);
    char *hdr = malloc(hlen + 1);
    if (!hdr)
        return pcli_fail(err, errsize, "%s: out of memory", name);
    memcpy(hdr, buf + start, hlen);
    hdr[hlen] = '\0';
    int rc = npy_parse_dict(name, hdr, a, err, errsize);
    free(hdr);
    if (rc)
        return -1;
    size_t n = a->shape[0], d = a->shape[1];
    if (d && n > SIZE_MAX / d / a->itemsize)
        return pcli_fail(err, errsize, "%s: shape is too large", name);
    size_t need = n * d * a->itemsize, have = len - start - hlen;
    if (have < need)
        return pcli_fail(err, errsize, "%s: truncated: expected %zu bytes of data, found %zu", name, need,
                    have);
    if (have > need) /* a header that lies about the shape or the dtype */
        return pcli_fail(err, errsize, "%s: the header's shape and dtype describe %zu bytes of data, the file "
                         "holds %zu: the header does not match the data", name, need, have);
    a->data = buf + start + hlen;
    return 0;
}

static int npy_to_labels(const char *name, const npy_array *a, int32_t **labels, size_t *count,
                         char *err, size_t errsize)
{
    size_t n = a->shape[0];
    if (a->shape[1] != 1)
        return pcli_fail(err, errsize, "%s: labels must have shape (n,) or (n, 1), got (%zu, %zu)", name,
                    n, a->shape[1]);
    if (n == 0)
        return pcli_fail(err, errsize, "%s: no data rows", name);
    int32_t *out = malloc(n * sizeof *out);
    if (!out)
        return pcli_fail(err, errsize, "%s: out of memory for %zu labels", name, n);
    for (size_t i = 0; i < n; i++) {
        double v = npy_get(a, i);
        if (!isfinite(v) || v != floor(v) || v < INT32_MIN || v > INT32_MAX) {
            free(out);
            return pcli_fail(err, errsize, "%s: value at [%zu] is not an int32 label", name, i);
        }
        out[i] = (int32_t)v;
    }
    *labels = out;
    *count = n;
    return 0;
}

/* ---------------------------------------------------------------- public readers */

int pcli_header_parse(const char *s, pcli_header *out)
{
    static const struct {
        const char *word;
        pcli_header header;
    } words[] = {{"auto", PCLI_HEADER_AUTO}, {"yes", PCLI_HEADER_YES}, {"true", PCLI_HEADER_YES},
                 {"1", PCLI_HEADER_YES},     {"no", PCLI_HEADER_NO},   {"false", PCLI_HEADER_NO},
                 {"0", PCLI_HEADER_NO}};
    for (size_t i = 0; s && i < sizeof words / sizeof words[0]; i++)
        if (same_word(s, words[i].word)) {
            *out = words[i].header;
            return 0;
        }
    return -1;
}

static void set_info(pcli_read_info *info, size_t rows, size_t header_line)
{
    if (info) {
        memset(info, 0, sizeof *info);
        info->rows = rows;
        info->header_line = header_line;
    }
}

int pcli_read_points(const char *path, pcli_matrix *out, char *err, size_t errsize)
{
    return pcli_read_points_ex(path, PCLI_HEADER_AUTO, out, NULL, err, errsize);
}

int pcli_read_labels(const char *path, int32_t **labels, size_t *n, char *err, size_t errsize)
{
    return pcli_read_labels_ex(path, PCLI_HEADER_AUTO, labels, n, NULL, err, errsize);
}

/* Whether the host stores numbers as .npy's '<' types do (every machine parclust runs on does). */
static int host_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* A .npy of points: mapped and seen in its own type where the library reads it, else converted once. */
static int read_npy_points(const char *path, pcli_matrix *out, char *err, size_t errsize)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK); /* a FIFO is refused below, not waited on for a writer */
    if (fd < 0)
        return pcli_fail(err, errsize, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return pcli_fail(err, errsize, "%s: cannot read: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return pcli_fail(err, errsize, "%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) {
        close(fd);
        return pcli_fail(err, errsize, "%s: empty file (0 bytes)", path);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return pcli_fail(err, errsize, "%s: cannot map: %s", path, strerror(map_errno));
    posix_madvise(map, len, POSIX_MADV_SEQUENTIAL);
    out->map = map;
    out->map_len = len;
    npy_array a;
    if (npy_parse(path, map, len, &a, err, errsize))
        goto fail;
    size_t n = a.shape[0], d = a.shape[1];
    if (n == 0) {
        pcli_fail(err, errsize, "%s: no data rows", path);
        goto fail;
    }
    if (d == 0) {
        pcli_fail(err, errsize, "%s: rows have no values (shape (%zu, 0))", path, n);
        goto fail;
    }
    static const struct {
        npy_type npy;
        pcli_dtype as;
        int in_place; /* the library reads it as it is */
    } kinds[] = {{NPY_F4, PCLI_F32, 1}, {NPY_F8, PCLI_F64, 1}, {NPY_U1, PCLI_U8, 1}, {NPY_U2, PCLI_U16, 1},
                 {NPY_I1, PCLI_F32, 0}, {NPY_I2, PCLI_F32, 0}, {NPY_I4, PCLI_F64, 0}, {NPY_U4, PCLI_F64, 0},
                 {NPY_I8, PCLI_F64, 0}, {NPY_U8, PCLI_F64, 0}};
    size_t k = 0;
    while (kinds[k].npy != a.type)
        k++;
    out->type = kinds[k].as;
    out->n = n;
    out->dim = d;
    if (kinds[k].in_place && host_little_endian() && (uintptr_t)a.data % a.itemsize == 0) {
        out->values = a.data;
    } else { /* converted once; also a hand-written header whose data are not aligned to their type */
        size_t size = kinds[k].as == PCLI_F64 ? 8 : kinds[k].as == PCLI_F32 ? 4 : kinds[k].as == PCLI_U16 ? 2 : 1;
        if (!(out->owned = malloc(n * d * size))) {
            pcli_fail(err, errsize, "%s: out of memory for %zu x %zu points", path, n, d);
            goto fail;
        }
        for (size_t i = 0; i < n * d; i++) {
            double v = npy_get(&a, i);
            switch (kinds[k].as) {
            case PCLI_F32: ((float *)out->owned)[i] = (float)v; break;
            case PCLI_F64: ((double *)out->owned)[i] = v; break;
            case PCLI_U8: ((uint8_t *)out->owned)[i] = (uint8_t)v; break;
            case PCLI_U16: ((uint16_t *)out->owned)[i] = (uint16_t)v; break;
            }
        }
        out->values = out->owned;
        munmap(map, len);
        out->map = NULL;
    }
    return 0;
fail:
    pcli_matrix_free(out);
    return -1;
}

int pcli_read_points_ex(const char *path, pcli_header header, pcli_matrix *out, pcli_read_info *info,
                        char *err, size_t errsize)
{
    memset(out, 0, sizeof *out);
    set_info(info, 0, 0);
    if (pcli_has_extension(path, ".npy")) {
        int rc = read_npy_points(path, out, err, errsize);
        set_info(info, out->n, 0);
        if (rc == 0 && info) {
            static const char *const names[] = {"float32", "float64", "uint8", "uint16"};
            info->type = names[out->type];
            info->mapped = out->map != NULL;
        }
        return rc;
    }
    void *vals;
    size_t header_line;
    if (read_text(path, WANT_POINTS, header, &vals, &out->n, &out->dim, &header_line, err, errsize))
        return -1;
    out->values = out->owned = vals;
    out->type = PCLI_F32;
    set_info(info, out->n, header_line);
    return 0;
}

int pcli_read_labels_ex(const char *path, pcli_header header, int32_t **labels, size_t *n,
                        pcli_read_info *info, char *err, size_t errsize)
{
    *labels = NULL;
    *n = 0;
    set_info(info, 0, 0);
    if (pcli_has_extension(path, ".npy")) {
        unsigned char *buf = NULL;
        size_t len = 0;
        npy_array a;
        if (read_whole_file(path, "\x93NUMPY", "not a NumPy .npy file", &buf, &len, err, errsize))
            return -1;
        int rc = npy_parse(path, buf, len, &a, err, errsize);
        if (rc == 0)
            rc = npy_to_labels(path, &a, labels, n, err, errsize);
        free(buf);
        set_info(info, *n, 0);
        return rc;
    }
    void *vals;
    size_t dim, header_line;
    if (read_text(path, WANT_LABELS, header, &vals, n, &dim, &header_line, err, errsize))
        return -1;
    *labels = vals;
    set_info(info, *n, header_line);
    return 0;
}

/* ---------------------------------------------------------------- atomic output */

/* mkstemp creates 0600; outputs should get the usual permissions. umask can only be read by setting
 * it, which is fine in the single-threaded CLI. */
static mode_t default_file_mode(void)
{
    mode_t mask = umask(022);
    umask(mask);
    return (mode_t)(0666 & ~mask);
}

int pcli_outfile_open(pcli_outfile *f, const char *path, char *err, size_t errsize)
{
    static const char suffix[] = ".tmp.XXXXXX";
    f->fp = NULL;
    f->path = path;
    f->tmp_path = NULL;
    if (!path || !*path)
        return pcli_fail(err, errsize, "empty output file name");
    f->tmp_path = malloc(strlen(path) + sizeof suffix);
    if (!f->tmp_path)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    strcpy(f->tmp_path, path);
    strcat(f->tmp_path, suffix);
    int fd = mkstemp(f->tmp_path);
    if (fd < 0) {
        int e = errno;
        free(f->tmp_path);
        f->tmp_path = NULL;
        return pcli_fail(err, errsize, "%s: cannot create file: %s", path, strerror(e));
    }
    (void)fchmod(fd, default_file_mode()); /* best effort: the data matter more than the mode */
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        pcli_outfile_discard(f);
        return pcli_fail(err, errsize, "%s: cannot open file: %s", path, strerror(e));
    }
    return 0;
}

void pcli_outfile_discard(pcli_outfile *f)
{
    if (f->fp)
        fclose(f->fp);
    f->fp = NULL;
    if (f->tmp_path) {
        remove(f->tmp_path);
        free(f->tmp_path);
    }
    f->tmp_path = NULL;
}

int pcli_outfile_commit(pcli_outfile *f, char *err, size_t errsize)
{
    if (!f->fp || !f->tmp_path)
        return pcli_fail(err, errsize, "%s: output file is not open", f->path ? f->path : "?");
    /* The flush first: stdio keeps what a failed write could not put out and tries it again here,
     * so a writer that did not check each fprintf still gets the real cause (ENOSPC, EIO, ...). */
    errno = 0;
    int flush_failed = fflush(f->fp) != 0, e = errno;
    if (flush_failed || ferror(f->fp)) {
        pcli_fail(err, errsize, "%s: write failed: %s", f->path, e ? strerror(e) : "I/O error");
        goto fail;
    }
    /* On disk before the rename: else a power cut could leave path naming a file without its data. */
    if (fsync(fileno(f->fp)) != 0) {
        pcli_fail(err, errsize, "%s: cannot write the file out to disk: %s", f->path, strerror(errno));
        goto fail;
    }
    FILE *fp = f->fp;
    f->fp = NULL;
    if (fclose(fp) != 0) {
        pcli_fail(err, errsize, "%s: write failed: %s", f->path, strerror(errno));
        goto fail;
    }
    /* ext4 (mounted with its default auto_da_alloc) writes a file out to disk inside a rename that
     * replaces another file: 0.1 s in the rename for 400 MB of labels. An empty regular file, as the
     * staging name of output_files.c is, is no loss: it is removed first and the rename replaces
     * nothing (a reader sees the empty file, no file, then the whole one). */
    struct stat st;
    if (lstat(f->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        (void)unlink(f->path);
    if (rename(f->tmp_path, f->path) != 0) {
        pcli_fail(err, errsize, "%s: cannot replace file: %s", f->path, strerror(errno));
        goto fail;
    }
    free(f->tmp_path);
    f->tmp_path = NULL;
    return 0;
fail:
    pcli_outfile_discard(f);
    return -1;
}

/* ---------------------------------------------------------------- writers */

/* Every writer fills a block of OUT_BLOCK bytes by hand (no stdio call per value) and hands each full
 * block to one fwrite, which stdio passes to write(2) as it is; a .npy of a little-endian host is its
 * header and then the caller's array in one fwrite. */
#define OUT_BLOCK ((size_t)1 << 20)
#define OUT_SLACK 512 /* room past OUT_BLOCK for the longest row element or header line */

typedef struct {
    FILE *fp;
    char *buf;
    size_t len;
    int failed; /* 1: a write failed, errno says why; 2: the filler refused the data, its message is in err */
    uint64_t written, started; /* bytes handed to write(2); bytes whose writeback was started */
} out_block;

/* The fsync before the commit's renames waits for every byte to reach the disk: the kernel is asked to
 * start writing each OUT_WRITEBACK bytes as soon as they are written, so that the disk works while the
 * rest is formatted and the fsync finds little left to do. Only a hint (Linux): errors are the fsync's. */
#define OUT_WRITEBACK ((uint64_t)8 << 20)

static void out_wrote(out_block *o, size_t bytes)
{
    o->written += bytes;
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    if (o->written - o->started >= OUT_WRITEBACK && fflush(o->fp) == 0) {
        (void)sync_file_range(fileno(o->fp), (off_t)o->started, (off_t)(o->written - o->started),
                              SYNC_FILE_RANGE_WRITE);
        o->started = o->written;
    }
#endif
}

static int out_flush(out_block *o)
{
    if (!o->failed && o->len && fwrite(o->buf, 1, o->len, o->fp) != o->len)
        o->failed = 1;
    if (!o->failed)
        out_wrote(o, o->len);
    o->len = 0;
    return o->failed ? -1 : 0;
}

/* Space for at least OUT_SLACK more bytes at o->buf + o->len; NULL once a write has failed. */
static char *out_room(out_block *o)
{
    if (o->len >= OUT_BLOCK && out_flush(o))
        return NULL;
    return o->failed ? NULL : o->buf + o->len;
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* count values of `size` bytes (4 or 8) in little-endian order whatever the host. */
static int out_le(out_block *o, const void *src, size_t size, size_t count)
{
    if (out_flush(o))
        return -1;
    if (host_is_little_endian()) { /* in pieces, so that their writeback starts as they are written */
        const unsigned char *s = src;
        size_t step = (size_t)OUT_WRITEBACK / size;
        for (size_t at = 0; at < count && !o->failed; at += step) {
            size_t m = count - at < step ? count - at : step;
            if (fwrite(s + at * size, size, m, o->fp) != m)
                o->failed = 1;
            else
                out_wrote(o, m * size);
        }
        return o->failed ? -1 : 0;
    }
    const unsigned char *s = src;
    for (size_t i = 0; i < count; i++) {
        unsigned char *d = (unsigned char *)out_room(o);
        if (!d)
            return -1;
        for (size_t b = 0; b < size; b++)
            d[b] = s[i * size + size - 1 - b];
        o->len += size;
    }
    return out_flush(o);
}

/* The header first in the (empty) block; shape (n,) when ndim is 1, else (n, dim). */
static void npy_header(out_block *o, const char *descr, size_t n, size_t dim, int ndim)
{
    const size_t shape[2] = {n, dim};
    o->len += pcli_npy_header((unsigned char *)o->buf + o->len, descr, shape, ndim);
}

/* ---- numbers as text, into a buffer with room (at most 32 bytes each) */

static char *put_u64(char *p, uint64_t u)
{
    if (u < 10) {
        *p++ = (char)('0' + u);
        return p;
    }
    char tmp[20];
    int n = 0;
    while (u) {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    }
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* As printf's "%" PRId64. */
static char *put_i64(char *p, int64_t v)
{
    if (v < 0) {
        *p++ = '-';
        return put_u64(p, 0 - (uint64_t)v);
    }
    return put_u64(p, (uint64_t)v);
}

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 pcli_u128;

static pcli_u128 pow10_u128(int p) /* 0 <= p <= 38 */
{
    static const uint64_t t[20] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u,
                                   1000000000u, 10000000000u, 100000000000u, 1000000000000u,
                                   10000000000000u, 100000000000000u, 1000000000000000u,
                                   10000000000000000u, 100000000000000000u, 1000000000000000000u,
                                   10000000000000000000u};
    return p <= 19 ? (pcli_u128)t[p] : (pcli_u128)t[p - 19] * t[19];
}
#endif

/* Exactly what printf's "%.9g" prints for (double)f: the float's exact value rounded to nine
 * significant digits, ties to even, as glibc does; nine digits make every float round-trip. For
 * |f| >= 2^-76 in 128-bit integers (about 15 times faster than snprintf); zero, infinities, NaN and
 * tinier values by snprintf itself. */
static char *put_g9(char *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    int bexp = (int)(bits >> 23 & 0xff);
    if ((bits & 0x7fffffffu) == 0) {
        if (bits)
            *p++ = '-';
        *p++ = '0';
        return p;
    }
#if defined(__SIZEOF_INT128__)
    if (bexp >= 51 && bexp < 255) {
        uint64_t m = (bits & 0x7fffffu) | 0x800000u;
        int e = bexp - 150, b = bexp - 127; /* |f| = m 2^e, 2^b <= |f| < 2^(b+1), -99 <= e <= 104 */
        /* k = floor(b log10 2) (78913 / 2^18 is close enough for |b| < 1650): floor(log10 |f|) is k or
         * k + 1, so q = floor(|f| 10^(8-k)) has 9 or 10 digits. */
        int k = b >= 0 ? (b * 78913) >> 18 : -((-b * 78913 + (1 << 18) - 1) >> 18), s = 8 - k;
        uint64_t q;
        int below; /* what |f| 10^s has below the point: 0 nothing, 1 less than half, 2 half, 3 more */
        if (s >= 0) { /* m 10^s < 2^24 10^31 < 2^128: exact; then a shift by -e splits off the fraction */
            pcli_u128 num = (pcli_u128)m * pow10_u128(s);
            if (e >= 0) {
                q = (uint64_t)(num << e);
                below = 0;
            } else {
                pcli_u128 rem = num & (((pcli_u128)1 << -e) - 1), half = (pcli_u128)1 << (-e - 1);
                q = (uint64_t)(num >> -e);
                below = rem == 0 ? 0 : rem < half ? 1 : rem == half ? 2 : 3;
            }
        } else { /* |f| >= 10^9: m 2^e < 2^128 divided by 10^-s <= 10^30 */
            pcli_u128 num = (pcli_u128)m << e, den = pow10_u128(-s), rem = num % den;
            q = (uint64_t)(num / den);
            below = rem == 0 ? 0 : 2 * rem < den ? 1 : 2 * rem == den ? 2 : 3;
        }
        if (q >= 1000000000u) { /* ten digits: the last joins the fraction */
            unsigned d = (unsigned)(q % 10);
            q /= 10;
            k++;
            below = d == 0 ? (below ? 1 : 0) : d < 5 ? 1 : d == 5 ? (below ? 3 : 2) : 3;
        }
        if (below == 3 || (below == 2 && (q & 1)))
            q++;
        if (q == 1000000000u) {
            q = 100000000u;
            k++;
        }
        char d[9];
        for (int i = 8; i >= 0; i--, q /= 10)
            d[i] = (char)('0' + q % 10);
        int nd = 9; /* %g drops trailing zeros of the fraction */
        while (nd > 1 && d[nd - 1] == '0')
            nd--;
        if (bits >> 31)
            *p++ = '-';
        if (k >= 0 && k < 9) { /* %f style, k + 1 digits before the point */
            memcpy(p, d, (size_t)k + 1);
            p += k + 1;
            if (nd > k + 1) {
                *p++ = '.';
                memcpy(p, d + k + 1, (size_t)(nd - k - 1));
                p += nd - k - 1;
            }
        } else if (k < 0 && k >= -4) { /* 0.000ddd */
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -k - 1; i++)
                *p++ = '0';
            memcpy(p, d, (size_t)nd);
            p += nd;
        } else { /* d.ddde+XX */
            *p++ = d[0];
            if (nd > 1) {
                *p++ = '.';
                memcpy(p, d + 1, (size_t)nd - 1);
                p += nd - 1;
            }
            *p++ = 'e';
            *p++ = k < 0 ? '-' : '+';
            int a = k < 0 ? -k : k; /* |k| <= 45 for a float */
            *p++ = (char)('0' + a / 10);
            *p++ = (char)('0' + a % 10);
        }
        return p;
    }
#else
    (void)bexp;
#endif
    return p + snprintf(p, 32, "%.9g", (double)f);
}

/* printf's "%.17g" (which makes every double round-trip): integers below 2^53, such as the
 * dendrogram's cluster numbers and sizes, by hand (they print as integers under %.17g), the rest by
 * snprintf. */
static char *put_g17(char *p, double v)
{
    if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v &&
        (v != 0 || !signbit(v)))
        return put_i64(p, (int64_t)v);
    return p + snprintf(p, 32, "%.17g", v);
}

/* The separator of text output: a tab in .tsv, a comma in .csv, .txt and any other text. */
static char text_separator(const char *path)
{
    return pcli_has_extension(path, ".tsv") ? '\t' : ',';
}

/* A header row of column names joined by the separator (a text table's first line; the block is
 * empty and the names are short). */
static void put_header(out_block *o, const char *const *names, size_t cols, char sep)
{
    for (size_t j = 0; j < cols; j++) {
        size_t len = strlen(names[j]);
        if (o->len + len + 2 > OUT_BLOCK && out_flush(o))
            return;
        if (j)
            o->buf[o->len++] = sep;
        memcpy(o->buf + o->len, names[j], len);
        o->len += len;
    }
    o->buf[o->len++] = '\n';
}

/* Opens path's temporary file with a block buffer, runs fill, then commits or discards. */
typedef int (*fill_fn)(out_block *o, const void *ctx);

static int write_output(const char *path, fill_fn fill, const void *ctx, char *err, size_t errsize)
{
    pcli_outfile f;
    out_block o = {0};
    if (!(o.buf = malloc(OUT_BLOCK + OUT_SLACK)))
        return pcli_fail(err, errsize, "%s: out of memory for the output buffer", path);
    if (pcli_outfile_open(&f, path, err, errsize)) {
        free(o.buf);
        return -1;
    }
    o.fp = f.fp;
    errno = 0;
    int rc = fill(&o, ctx) || out_flush(&o), e = errno;
    free(o.buf);
    if (rc) {
        pcli_outfile_discard(&f);
        if (o.failed == 2) /* the filler's own message is in err */
            return -1;
        return pcli_fail(err, errsize, "%s: write failed: %s", path, e ? strerror(e) : "I/O error");
    }
    return pcli_outfile_commit(&f, err, errsize);
}

/* ---- labels */

typedef struct {
    const int32_t *labels;
    size_t n, clusters;
    int npy;
    const char *path;
    char *err;
    size_t errsize;
} labels_job;

/* .npy: packed into the smallest type that holds the clusters (npy_format.h), a block at a time. */
static int fill_npy_labels(out_block *o, const labels_job *j)
{
    pcli_npy_label_type t = pcli_npy_label_type_for(j->clusters);
    npy_header(o, t.descr, j->n, 1, 1);
    for (size_t at = 0; at < j->n;) {
        char *p = out_room(o);
        if (!p)
            return -1;
        size_t room = (OUT_BLOCK + OUT_SLACK - o->len) / t.size, m = j->n - at < room ? j->n - at : room;
        size_t fit = pcli_npy_labels_pack(j->labels + at, m, t.size, p);
        if (fit < m) {
            o->failed = 2; /* not an I/O error: the message is ours */
            pcli_fail(j->err, j->errsize, "%s: label %d at [%zu] is neither -1 nor one of the %zu clusters (0..%zu)",
                      j->path, j->labels[at + fit], at + fit, j->clusters, j->clusters ? j->clusters - 1 : 0);
            return -1;
        }
        o->len += m * t.size;
        at += m;
    }
    return 0;
}

static int fill_labels(out_block *o, const void *ctx)
{
    const labels_job *j = ctx;
    if (j->npy)
        return fill_npy_labels(o, j);
    for (size_t i = 0; i < j->n; i++) {
        char *p = out_room(o);
        if (!p)
            return -1;
        char *end = put_i64(p, j->labels[i]);
        *end++ = '\n';
        o->len += (size_t)(end - p);
    }
    return 0;
}

int pcli_write_labels(const char *path, const int32_t *labels, size_t n, size_t clusters, char *err, size_t errsize)
{
    if (n && !labels)
        return pcli_fail(err, errsize, "%s: no labels to write", path);
    labels_job j = {labels, n, clusters, pcli_has_extension(path, ".npy"), path, err, errsize};
    return write_output(path, fill_labels, &j, err, errsize);
}

/* ---- matrices: float32, float64, int64 columns */

typedef enum { MAT_F32, MAT_F64, MAT_I64_COLUMNS } mat_kind;

typedef struct {
    mat_kind kind;
    const void *data;              /* MAT_F32, MAT_F64: row-major rows x cols */
    const int64_t *const *columns; /* MAT_I64_COLUMNS: cols arrays of rows values (NULL: 0, 1, 2, ...) */
    size_t rows, cols;
    const char *const *names; /* a header row for text, or NULL */
    int npy;
    char sep;
} matrix_job;

static int fill_matrix(out_block *o, const void *ctx)
{
    const matrix_job *j = ctx;
    if (j->npy) {
        static const char *const descr[] = {"<f4", "<f8", "<i8"};
        npy_header(o, descr[j->kind], j->rows, j->cols, 2);
        if (j->kind == MAT_F32)
            return out_le(o, j->data, 4, j->rows * j->cols);
        if (j->kind == MAT_F64)
            return out_le(o, j->data, 8, j->rows * j->cols);
        for (size_t i = 0; i < j->rows; i++) /* interleaved from the columns, little-endian */
            for (size_t c = 0; c < j->cols; c++) {
                uint64_t u = j->columns[c] ? (uint64_t)j->columns[c][i] : (uint64_t)i;
                unsigned char *d = (unsigned char *)out_room(o);
                if (!d)
                    return -1;
                for (int b = 0; b < 8; b++)
                    d[b] = (unsigned char)(u >> (8 * b));
                o->len += 8;
            }
        return out_flush(o);
    }
    if (j->names)
        put_header(o, j->names, j->cols, j->sep);
    const float *f32 = j->data;
    const double *f64 = j->data;
    for (size_t i = 0; i < j->rows; i++) {
        for (size_t c = 0; c < j->cols; c++) {
            char *p = out_room(o), *end = p;
            if (!p)
                return -1;
            if (c)
                *end++ = j->sep;
            if (j->kind == MAT_F32)
                end = put_g9(end, f32[i * j->cols + c]);
            else if (j->kind == MAT_F64)
                end = put_g17(end, f64[i * j->cols + c]);
            else
                end = put_i64(end, j->columns[c] ? j->columns[c][i] : (int64_t)i);
            o->len += (size_t)(end - p);
        }
        char *p = out_room(o);
        if (!p)
            return -1;
        *p = '\n';
        o->len++;
    }
    return 0;
}

static int write_matrix_job(const char *path, matrix_job *j, int have_data, char *err, size_t errsize)
{
    if (j->rows && j->cols && !have_data)
        return pcli_fail(err, errsize, "%s: no data to write", path);
    if (j->cols && j->rows > SIZE_MAX / 8 / j->cols)
        return pcli_fail(err, errsize, "%s: matrix is too large", path);
    j->npy = pcli_has_extension(path, ".npy");
    j->sep = text_separator(path);
    return write_output(path, fill_matrix, j, err, errsize);
}

int pcli_write_matrix(const char *path, const float *data, size_t n, size_t dim, char *err,
                      size_t errsize)
{
    matrix_job j = {MAT_F32, data, NULL, n, dim, NULL, 0, ','};
    return write_matrix_job(path, &j, data != NULL, err, errsize);
}

int pcli_write_matrix_f64(const char *path, const double *data, size_t rows, size_t cols,
                          const char *const *names, char *err, size_t errsize)
{
    matrix_job j = {MAT_F64, data, NULL, rows, cols, names, 0, ','};
    return write_matrix_job(path, &j, data != NULL, err, errsize);
}

int pcli_write_columns_i64(const char *path, const int64_t *const *columns, size_t rows, size_t cols,
                           const char *const *names, char *err, size_t errsize)
{
    matrix_job j = {MAT_I64_COLUMNS, NULL, columns, rows, cols, names, 0, ','};
    return write_matrix_job(path, &j, columns != NULL, err, errsize);
}
