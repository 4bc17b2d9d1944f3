/* Tests the CLI's file formats (points_io) and plots (plot): parsing, error messages, round trips,
 * and PNG structure checked against an independent bitwise CRC-32. Usage: test_points_io DIR. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "plot.h"
#include "points_io.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

static const char *dir;

static const char *path_of(const char *name)
{
    static char buf[4][1024];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static const char *put_file(const char *name, const void *data, size_t len)
{
    const char *p = path_of(name);
    FILE *fp = fopen(p, "wb");
    if (!fp) {
        fprintf(stderr, "cannot create %s: %s\n", p, strerror(errno));
        exit(2);
    }
    fwrite(data, 1, len, fp);
    fclose(fp);
    return p;
}

static const char *put_text(const char *name, const char *text)
{
    return put_file(name, text, strlen(text));
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size + 1);
    *len = fread(buf, 1, (size_t)size, fp);
    buf[*len] = 0;
    fclose(fp);
    return buf;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* No ".tmp." file may survive a failed write. */
static int temp_files_left(void)
{
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp."))
            found++;
    if (d)
        closedir(d);
    return found;
}

static int has(const char *err, const char *text)
{
    int ok = strstr(err, text) != NULL;
    if (!ok)
        fprintf(stderr, "  error was: %s\n  expected it to contain: %s\n", err, text);
    return ok;
}

/* ---------------------------------------------------------------- text points */

static void expect_points(const char *path, size_t n, size_t dim, const float *want)
{
    pcli_matrix m = {0};
    char err[256] = "";
    int rc = pcli_read_points(path, &m, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", path, err);
    CHECK(m.n == n);
    CHECK(m.dim == dim);
    const float *v = rc == 0 ? pcli_matrix_f32(&m, err, sizeof err) : NULL;
    if (v && m.n == n && m.dim == dim)
        for (size_t i = 0; i < n * dim; i++)
            CHECK_NEAR(v[i], want[i], 0);
    pcli_matrix_free(&m);
    CHECK(m.values == NULL);
}

static void expect_points_error(const char *path, const char *text)
{
    pcli_matrix m = {0};
    char err[256] = "";
    CHECK(pcli_read_points(path, &m, err, sizeof err) == -1);
    CHECK(m.values == NULL);
    CHECK(has(err, text));
    CHECK(strchr(err, '\n') == NULL);
}

static void test_text_formats(void)
{
    const float csv[] = {1, 2, 3, 4.5f, -2.5f, 1e-3f};
    expect_points(put_text("h.csv", "x, y ,z\n1,2,3\n 4.5 , -2.5,1e-3\n"), 2, 3, csv);
    const float tsv[] = {1, 2, 3, 4};
    expect_points(put_text("t.tsv", "# comment\n\n1\t2\n\n3\t\t4\n"), 2, 2, tsv);
    const float ws[] = {1, 2, 3, 4, 5, 6};
    expect_points(put_text("w.txt", "  1  2   3\n4 5\t6"), 2, 3, ws);
    expect_points(put_text("crlf.csv", "a;b;c\r\n1;2;3\r\n4;5;6\r\n"), 2, 3, ws);
    expect_points(put_text("quoted.csv", "\xEF\xBB\xBF\"x\",\"y\"\r\n\"1\",\"2\"\r\n3,4"), 2, 2, tsv);
    const float one[] = {7};
    expect_points(put_text("one.dat", "value\n7\n"), 1, 1, one);
}

static void test_text_errors(void)
{
    expect_points_error(put_text("ragged.csv", "x,y,z\n1,2,3\n4,5,6\n\n# gap\n7,8\n"),
                        "ragged.csv: line 6 has 2 values, expected 3");
    expect_points_error(put_text("nonnum.csv", "x,y\n1,2\n3,abc\n"),
                        "line 3, column 2: 'abc' is not a number");
    expect_points_error(put_text("second_header.csv", "x,y\n1,2\nx,y\n"), "line 3, column 1");
    expect_points_error(put_text("nan.csv", "1,2\n3,nan\n"), "line 2, column 2: value is not finite");
    expect_points_error(put_text("inf.txt", "1 -inf\n"), "line 1, column 2: value is not finite");
    expect_points_error(put_text("big.csv", "1,1e39\n"), "not finite");
    expect_points_error(put_text("emptyfield.csv", "1,,3\n"), "line 1, column 2 is empty");
    expect_points_error(put_text("empty.csv", ""), "empty.csv: no data rows");
    expect_points_error(put_text("header_only.csv", "x,y\n# nothing\n\n"), "no data rows");
    expect_points_error(put_file("nul.csv", "1,2\n3,\0004\n", 9), "line 2 contains a NUL byte");
    expect_points_error(path_of("missing.csv"), "missing.csv: cannot open: No such file");
}

/* ---------------------------------------------------------------- header rows, numbers, encodings */

/* Reads path with the given header rule and checks rows, dimensions, the header line reported and,
 * when want is given, the values. */
static void expect_read(const char *path, pcli_header h, size_t n, size_t dim, size_t header_line,
                        const float *want)
{
    pcli_matrix m = {0};
    pcli_read_info info = {99, 99, NULL, 0};
    char err[512] = "";
    int rc = pcli_read_points_ex(path, h, &m, &info, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", path, err);
    CHECK_MSG(m.n == n && m.dim == dim, "%s: %zu x %zu, expected %zu x %zu", path, m.n, m.dim, n, dim);
    CHECK_MSG(info.rows == n && info.header_line == header_line, "%s: info rows %zu header line %zu, expected %zu, %zu",
              path, info.rows, info.header_line, n, header_line);
    if (rc == 0 && want && m.n == n && m.dim == dim)
        for (size_t i = 0; i < n * dim; i++)
            CHECK_NEAR(((const float *)m.values)[i], want[i], 0);
    pcli_matrix_free(&m);
}

static void expect_read_error(const char *path, pcli_header h, const char *text, const char *text2)
{
    pcli_matrix m = {0};
    char err[512] = "";
    CHECK(pcli_read_points_ex(path, h, &m, NULL, err, sizeof err) == -1);
    CHECK(m.values == NULL && m.n == 0);
    CHECK(has(err, text));
    if (text2)
        CHECK(has(err, text2));
    CHECK(strchr(err, '\n') == NULL);
}

/* Issue 19 item 4: a first row is a header only when none of its fields is a number; a row of numbers
 * and text is an error with its line and column, never dropped; --header yes / no say it outright. */
static void test_header_rules(void)
{
    const float xy[] = {1, 2, 3, 4};
    const pcli_header A = PCLI_HEADER_AUTO, Y = PCLI_HEADER_YES, N = PCLI_HEADER_NO;
    expect_read(put_text("hd1.csv", "x,y\n1,2\n3,4\n"), A, 2, 2, 1, xy);
    expect_read(put_text("hd2.csv", "1,2\n3,4\n"), A, 2, 2, 0, xy);
    expect_read(put_text("hd3.csv", ",x,y\n0,1,2\n1,3,4\n"), A, 2, 3, 1, NULL); /* pandas' index column */
    expect_read(put_text("hd4.csv", "# made by hand\n\n\"x\";\"y\"\n1,2\n3,4\n"), A, 2, 2, 3, xy);
    expect_read(put_text("hd5.csv", "\xEF\xBB\xBF" "1,2\n3,4\n"), A, 2, 2, 0, xy); /* a BOM is not text */
    expect_read(put_text("hd6.csv", "\xEF\xBB\xBF" "x,y\n1,2\n3,4\n"), A, 2, 2, 1, xy);
    /* The rows, first in the file: each is an error naming the line and column, or (the
     * comment) read as the data it is, as np.loadtxt reads it. */
    expect_read_error(put_text("mx1.csv", "1.0,abc\n3,4\n"), A, "mx1.csv: line 1, column 2: 'abc' is not a number",
                      "not a header");
    expect_read_error(put_text("mx2.csv", "NA,2\n3,4\n"), A, "mx2.csv: line 1, column 1: 'NA' is not a number",
                      "--header yes");
    expect_read_error(put_text("mx3.csv", "1_000,2\n3,4\n"), A, "mx3.csv: line 1, column 1: '1_000' is not a number",
                      "'_'");
    expect_read_error(put_text("mx4.csv", "\n# c\n  7, 8 ,x\n"), A, "mx4.csv: line 3, column 3: 'x'", NULL);
    expect_read(put_text("mx5.csv", "1,2 # note\n3,4\n"), A, 2, 2, 0, xy);
    expect_read(put_text("mx6.csv", "1,2\n3,4 # note, with a comma\n# 5,6\n"), A, 2, 2, 0, xy);
    /* inf and nan are numbers (NumPy reads them), so such a row is data, and refused as not finite. */
    expect_read_error(put_text("mx7.csv", "nan,1\n3,4\n"), A, "mx7.csv: line 1, column 1: value is not finite", NULL);
    /* --header yes: the first row goes whatever it holds, numbers included. */
    const float second[] = {3, 4};
    expect_read(put_text("hy1.csv", "1,2\n3,4\n"), Y, 1, 2, 1, second);
    expect_read(put_text("hy2.csv", "1.0,abc\n3,4\n"), Y, 1, 2, 1, second);
    expect_read(put_text("hy3.csv", "# c\n\nNA,2\n3,4\n"), Y, 1, 2, 3, second);
    expect_read(put_text("hy4.csv", "x y z\n3,4\n"), Y, 1, 2, 1, second); /* its own delimiter */
    expect_read_error(put_text("hy5.csv", "1,2\n"), Y, "hy5.csv: no data rows (only the header, line 1)", NULL);
    /* --header no: the first row is data, so text in it is an error with its place. */
    expect_read(put_text("hn1.csv", "1,2\n3,4\n"), N, 2, 2, 0, xy);
    expect_read_error(put_text("hn2.csv", "x,y\n1,2\n"), N, "hn2.csv: line 1, column 1: 'x' is not a number", NULL);
    expect_read_error(put_text("hn3.csv", "1.0,abc\n3,4\n"), N, "hn3.csv: line 1, column 2: 'abc' is not a number",
                      NULL);
    /* A later row of text is never a header. */
    expect_read_error(put_text("hl.csv", "1,2\nx,y\n"), A, "hl.csv: line 2, column 1: 'x' is not a number", NULL);
    /* .npy: no header row; the rows are reported as read. */
    const float m6[] = {1, 2, 3, 4, 5, 6};
    char err[256] = "";
    CHECK_MSG(pcli_write_matrix(path_of("hnpy.npy"), m6, 3, 2, err, sizeof err) == 0, "%s", err);
    expect_read(path_of("hnpy.npy"), A, 3, 2, 0, m6);
    expect_read(path_of("hnpy.npy"), N, 3, 2, 0, m6);

    pcli_header h = PCLI_HEADER_NO;
    CHECK(pcli_header_parse("auto", &h) == 0 && h == A);
    CHECK(pcli_header_parse("YES", &h) == 0 && h == Y);
    CHECK(pcli_header_parse("no", &h) == 0 && h == N);
    CHECK(pcli_header_parse("True", &h) == 0 && h == Y);
    CHECK(pcli_header_parse("0", &h) == 0 && h == N);
    CHECK(pcli_header_parse("maybe", &h) == -1);
    CHECK(pcli_header_parse("", &h) == -1);
    CHECK(pcli_header_parse("yess", &h) == -1);

    /* Labels read by the same rules. */
    int32_t *lab = NULL;
    size_t n = 0;
    pcli_read_info info;
    CHECK(pcli_read_labels_ex(put_text("hlab1.txt", "label\n4\n5\n"), A, &lab, &n, &info, err, sizeof err) == 0);
    CHECK(n == 2 && info.rows == 2 && info.header_line == 1 && lab && lab[0] == 4);
    free(lab);
    CHECK(pcli_read_labels_ex(put_text("hlab2.txt", "7\n4\n5\n"), Y, &lab, &n, &info, err, sizeof err) == 0);
    CHECK(n == 2 && info.header_line == 1 && lab && lab[0] == 4 && lab[1] == 5);
    free(lab);
    CHECK(pcli_read_labels_ex(put_text("hlab3.txt", "7\n4\n"), A, &lab, &n, &info, err, sizeof err) == 0);
    CHECK(n == 2 && info.header_line == 0 && lab && lab[0] == 7);
    free(lab);
    CHECK(pcli_read_labels_ex(put_text("hlab4.txt", "label\n4\n"), N, &lab, &n, &info, err, sizeof err) == -1);
    CHECK(has(err, "hlab4.txt: line 1, column 1: 'label' is not a number"));
    CHECK(pcli_read_labels_ex(put_text("hlab5.txt", "0x1\n4\n"), A, &lab, &n, &info, err, sizeof err) == 0);
    CHECK(n == 1 && info.header_line == 1); /* text alone on its row: a header, and said so */
    free(lab);
}

/* Numbers as NumPy reads them (np.loadtxt, checked with NumPy 1.24): what strtod takes beyond that
 * (hexadecimal, hex floats, nan(...)) is refused; blanks around a field are not part of it. */
static void test_numpy_numbers(void)
{
    const float ok[] = {1, -0.5f, 1, 100, 0.3f, 4, 12, 0.5f, 5, 1e-5f};
    expect_read(put_text("num_ok.csv", "+1,-.5\n1.,1e+2\n 3E-1 ,\v4\f\n00012,\t+.5\t\n5.,1e-05\n"), PCLI_HEADER_NO,
                5, 2, 0, ok);
    expect_read(put_text("num_tiny.csv", "1e-400,1\n"), PCLI_HEADER_NO, 1, 2, 0, NULL); /* 0, as NumPy */
    static const char *const refused[] = {"0x10", "0X10", "-0x1", "0x1p3", "nan(1)", "1_000", "1d5", "1e", ".",
                                          "-", "e5", "1.5f", "0b1", "infinit", "1e5.0", "--1", "1 e5"};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char text[64], name[32], want[96];
        snprintf(text, sizeof text, "1,2\n3,%s\n", refused[i]);
        snprintf(name, sizeof name, "num_bad%zu.csv", i);
        snprintf(want, sizeof want, "line 2, column 2: '%s' is not a number", refused[i]);
        expect_read_error(put_text(name, text), PCLI_HEADER_AUTO, want, NULL);
    }
    expect_read_error(put_text("num_hex.csv", "1,2\n0x10,2\n"), PCLI_HEADER_AUTO, "line 2, column 1: '0x10'",
                      "hexadecimal is not read");
    /* Spellings of inf and nan that NumPy reads: numbers, so refused as not finite (not as text). */
    static const char *const nonfinite[] = {"inf", "-Inf", "INFINITY", "+infinity", "nan", "NaN", "-nan"};
    for (size_t i = 0; i < sizeof nonfinite / sizeof nonfinite[0]; i++) {
        char text[64], name[32];
        snprintf(text, sizeof text, "1,2\n3,%s\n", nonfinite[i]);
        snprintf(name, sizeof name, "num_nf%zu.csv", i);
        expect_read_error(put_text(name, text), PCLI_HEADER_AUTO, "line 2, column 2: value is not finite", NULL);
    }
}

/* Issue 19 item 8: lines ended by CR alone (classic Mac OS) are lines; UTF-16 and UTF-32 are named as
 * such, with what is expected instead. */
static void test_line_ends_and_encodings(void)
{
    const float xy[] = {1, 2, 3, 4}, four[] = {1, 2, 3, 4, 5, 6, 7, 8};
    expect_read(put_text("cr.csv", "x,y\r1,2\r3,4\r"), PCLI_HEADER_AUTO, 2, 2, 1, xy);
    expect_read(put_text("cr2.csv", "1,2\r3,4"), PCLI_HEADER_AUTO, 2, 2, 0, xy);
    expect_read(put_text("crlf2.csv", "x,y\r\n1,2\r\n3,4\r\n"), PCLI_HEADER_AUTO, 2, 2, 1, xy);
    expect_read(put_text("mixed_ends.csv", "1,2\r\n3,4\r5,6\n\r\n7,8"), PCLI_HEADER_AUTO, 4, 2, 0, four);
    expect_read_error(put_text("cr_bad.csv", "1,2\r3,4\r5,x\r"), PCLI_HEADER_AUTO, "cr_bad.csv: line 3, column 2", NULL);
    expect_read_error(put_text("crlf_bad.csv", "1,2\r\n3,4\r\n5,x\r\n"), PCLI_HEADER_AUTO, "crlf_bad.csv: line 3, column 2",
                      NULL);
    int32_t *lab = NULL;
    size_t n = 0;
    char err[512] = "";
    CHECK(pcli_read_labels(put_text("cr_lab.txt", "label\r0\r1\r1\r"), &lab, &n, err, sizeof err) == 0);
    CHECK(n == 3 && lab && lab[2] == 1);
    free(lab);

    /* "x,y\n1,2\n" in UTF-16 and UTF-32, with and without a byte-order mark. */
    const char *ascii = "x,y\n1,2\n";
    unsigned char buf[64];
    for (int order = 0; order < 4; order++) {
        int big = order & 1, bom = order >> 1;
        size_t len = 0;
        if (bom) {
            buf[len++] = big ? 0xFE : 0xFF;
            buf[len++] = big ? 0xFF : 0xFE;
        }
        for (const char *c = ascii; *c; c++) {
            buf[len++] = big ? 0 : (unsigned char)*c;
            buf[len++] = big ? (unsigned char)*c : 0;
        }
        char name[32], want[64];
        snprintf(name, sizeof name, "utf16_%s%s.csv", big ? "be" : "le", bom ? "_bom" : "");
        snprintf(want, sizeof want, "%s: the file is UTF-16%s text", name, big ? "BE" : "LE");
        expect_read_error(put_file(name, buf, len), PCLI_HEADER_AUTO, want, "UTF-8 (or ASCII) is expected");
        CHECK(pcli_read_labels(path_of(name), &lab, &n, err, sizeof err) == -1 && has(err, "UTF-16"));
    }
    expect_read_error(put_file("utf32.csv", "\xFF\xFE\0\0" "1\0\0\0\n\0\0\0", 12), PCLI_HEADER_AUTO,
                      "the file is UTF-32LE text", "UTF-8");
    /* Binary data is still called that. */
    expect_read_error(put_file("nul2.csv", "1,2\n3,\0004\n", 9), PCLI_HEADER_AUTO, "line 2 contains a NUL byte", NULL);
}

/* ---------------------------------------------------------------- labels */

static void test_labels(void)
{
    int32_t *lab = NULL;
    size_t n = 0;
    char err[256] = "";
    CHECK(pcli_read_labels(put_text("l.txt", "label\n0\n-1\n3.0\n2\n"), &lab, &n, err, sizeof err) == 0);
    CHECK(n == 4);
    if (n == 4)
        CHECK(lab[0] == 0 && lab[1] == -1 && lab[2] == 3 && lab[3] == 2);
    free(lab);
    CHECK(pcli_read_labels(put_text("l2.txt", "1\n2.5\n"), &lab, &n, err, sizeof err) == -1);
    CHECK(has(err, "line 2, column 1: label is not an integer"));
    CHECK(pcli_read_labels(put_text("l3.csv", "1,2\n"), &lab, &n, err, sizeof err) == -1);
    CHECK(has(err, "line 1 has 2 values"));

    const int32_t want[] = {0, 1, -1, 2147483647, -2147483647 - 1, 5};
    const char *exts[] = {"labels.npy", "labels.txt", "LABELS.NPY"};
    for (int e = 0; e < 3; e++) {
        CHECK_MSG(pcli_write_labels(path_of(exts[e]), want, 6, (size_t)1 << 31, err, sizeof err) == 0, "%s", err);
        lab = NULL;
        CHECK_MSG(pcli_read_labels(path_of(exts[e]), &lab, &n, err, sizeof err) == 0, "%s", err);
        CHECK(n == 6);
        if (lab && n == 6)
            CHECK(memcmp(lab, want, sizeof want) == 0);
        free(lab);
    }
    size_t len;
    unsigned char *bytes = slurp(path_of("labels.npy"), &len);
    CHECK(bytes && len == 128 + 24 && strstr((char *)bytes + 10, "'<i4'") && bytes[127] == '\n');
    free(bytes);
}

/* ---------------------------------------------------------------- npy */

static void test_npy_roundtrip(void)
{
    float m[4 * 3];
    char err[256] = "";
    for (int i = 0; i < 12; i++)
        m[i] = (float)(i - 5) / 3.0f * (i % 2 ? 1e-20f : 1e20f);
    const char *names[] = {"m.npy", "m.csv"};
    for (int k = 0; k < 2; k++) {
        CHECK_MSG(pcli_write_matrix(path_of(names[k]), m, 4, 3, err, sizeof err) == 0, "%s", err);
        expect_points(path_of(names[k]), 4, 3, m); /* exact: %.9g round-trips float32 */
    }
    CHECK(temp_files_left() == 0);
}

/* A version 1.0 or 2.0 header for `dict`, padded to 64 bytes as numpy does. */
static size_t npy_header(unsigned char *out, int version, const char *dict)
{
    size_t start = version == 1 ? 10 : 12, len = strlen(dict);
    size_t hlen = len + 1 + (64 - (start + len + 1) % 64) % 64;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)version;
    out[7] = 0;
    for (size_t i = 0; i < start - 8; i++)
        out[8 + i] = (unsigned char)(hlen >> (8 * i));
    memset(out + start, ' ', hlen);
    memcpy(out + start, dict, len);
    out[start + hlen - 1] = '\n';
    return start + hlen;
}

static size_t put_f8(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(u >> (8 * i));
    return 8;
}

static void test_npy_read(void)
{
    unsigned char buf[512];
    const double vals[] = {1.5, -2.25, 1e10, 0.125};
    const float want[] = {1.5f, -2.25f, 1e10f, 0.125f};
    for (int version = 1; version <= 2; version++) {
        size_t len = npy_header(buf, version, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }");
        for (int i = 0; i < 4; i++)
            len += put_f8(buf + len, vals[i]);
        expect_points(put_file("f8.npy", buf, len), 2, 2, want);
        expect_points_error(put_file("trunc.npy", buf, len - 8),
                            "trunc.npy: truncated: expected 32 bytes of data, found 24");
    }
    size_t len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }");
    for (int i = 0; i < 4; i++)
        len += put_f8(buf + len, vals[i]);
    expect_points(put_file("vec.npy", buf, len), 4, 1, want);

    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }");
    len += 32;
    expect_points_error(put_file("fortran.npy", buf, len), "Fortran-order");

    /* float64 is handed to the library as it is (the library refuses values beyond float32's range) */
    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }");
    len += put_f8(buf + len, 1e300);
    pcli_matrix big = {0};
    char e2[256];
    CHECK(pcli_read_points(put_file("huge.npy", buf, len), &big, e2, sizeof e2) == 0);
    CHECK(big.type == PCLI_F64 && big.map && ((const double *)big.values)[0] == 1e300 && big.f32 == NULL);
    pcli_matrix_free(&big);

    /* a header that lies: more data than its shape and dtype describe (e.g. '<f4' over float64 data) */
    len = npy_header(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }");
    for (int i = 0; i < 4; i++)
        len += put_f8(buf + len, vals[i]);
    expect_points_error(put_file("lying.npy", buf, len), "lying.npy: the header's shape and dtype describe 16 "
                        "bytes of data, the file holds 32: the header does not match the data");

    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }");
    expect_points_error(put_file("zero.npy", buf, len), "zero.npy: no data rows");

    len = npy_header(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }");
    expect_points_error(put_file("complex.npy", buf, len + 8), "unsupported dtype '<c8'");

    len = npy_header(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 3), }");
    memcpy(buf + len, "\x00\x7f\xff", 3);
    const float bytes[] = {0, 127, 255};
    expect_points(put_file("u1.npy", buf, len + 3), 1, 3, bytes);
    pcli_matrix u8 = {0};
    CHECK(pcli_read_points(path_of("u1.npy"), &u8, e2, sizeof e2) == 0);
    CHECK(u8.type == PCLI_U8 && u8.map && ((const unsigned char *)u8.values)[2] == 255); /* the file, mapped */
    pcli_matrix_free(&u8);

    /* other integer types: converted once (int8/int16 to float32, wider ones to float64, exact) */
    static const struct {
        const char *dict;
        const char *bytes;
        size_t size, count;
        pcli_dtype as;
        float want[2];
    } ints[] = {
        {"{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "\xff\x7f", 2, 2, PCLI_F32, {-1, 127}},
        {"{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", "\x00\x80\xff\x7f", 4, 2, PCLI_F32, {-32768, 32767}},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", "\xff\xff\xff\xff\x10\x00\x00\x00", 8, 2, PCLI_F64, {-1, 16}},
        {"{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", "\xff\xff\xff\x00\x10\x00\x00\x00", 8, 2, PCLI_F64, {16777215, 16}},
        {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", "\x00\x00\x00\x00\x01\x00\x00\x00", 8, 1, PCLI_F64, {4294967296.0f, 0}},
    };
    for (size_t t = 0; t < sizeof ints / sizeof ints[0]; t++) {
        len = npy_header(buf, 1, ints[t].dict);
        memcpy(buf + len, ints[t].bytes, ints[t].size);
        size_t count = ints[t].count;
        pcli_matrix im = {0};
        CHECK_MSG(pcli_read_points(put_file("int.npy", buf, len + ints[t].size), &im, e2, sizeof e2) == 0, "%s", e2);
        CHECK(im.type == ints[t].as && im.n == count && im.map == NULL);
        const float *f = pcli_matrix_f32(&im, e2, sizeof e2);
        for (size_t i = 0; f && i < count; i++)
            CHECK_NEAR(f[i], ints[t].want[i], 0);
        pcli_matrix_free(&im);
    }

    expect_points_error(put_text("text.npy", "1,2,3\n"), "text.npy: not a NumPy .npy file");

    /* float labels that are whole numbers are labels */
    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1), }");
    len += put_f8(buf + len, 2) + put_f8(buf + len + 8, -1) + put_f8(buf + len + 16, 0);
    int32_t *lab = NULL;
    size_t n = 0;
    char err[256];
    CHECK_MSG(pcli_read_labels(put_file("flab.npy", buf, len), &lab, &n, err, sizeof err) == 0, "%s", err);
    CHECK(n == 3 && lab && lab[0] == 2 && lab[1] == -1 && lab[2] == 0);
    free(lab);
}

/* ---------------------------------------------------------------- atomic writes */

static void test_failed_writes(void)
{
    char err[256] = "";
    const float m[2] = {1, 2};
    const char *p = path_of("no_such_dir/out.csv");
    CHECK(pcli_write_matrix(p, m, 1, 2, err, sizeof err) == -1);
    CHECK(has(err, "no_such_dir/out.csv: cannot create file: No such file or directory"));
    CHECK(!file_exists(p));

    /* renaming onto a directory fails after the data were written: the temporary file must go */
    mkdir(path_of("a_dir.csv"), 0777);
    CHECK(pcli_write_matrix(path_of("a_dir.csv"), m, 1, 2, err, sizeof err) == -1);
    CHECK(has(err, "a_dir.csv: cannot replace file"));
    CHECK(temp_files_left() == 0);
    CHECK(pcli_plot(path_of("a_dir.csv/x/p.png"), m, 1, 2, NULL, NULL, 0, NULL, err, sizeof err) == -1);
    CHECK(pcli_plot(path_of("p.jpg"), m, 1, 2, NULL, NULL, 0, NULL, err, sizeof err) == -1);
    CHECK(has(err, "unknown plot format"));
    CHECK(!file_exists(path_of("p.jpg")));
}

/* ---------------------------------------------------------------- plots */

/* Bit by bit, sharing nothing with the table-driven encoder under test. */
static uint32_t crc32_bitwise(const unsigned char *p, size_t len)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return crc ^ 0xFFFFFFFFu;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks every chunk, checking each CRC; returns the number of IDAT bytes seen, 0 on a bad file. */
static size_t check_png_chunks(const unsigned char *png, size_t len)
{
    size_t pos = 8, idat = 0;
    int seen_iend = 0;
    while (pos + 12 <= len && !seen_iend) {
        uint32_t clen = be32(png + pos);
        if (clen > len - pos - 12)
            return 0;
        CHECK(crc32_bitwise(png + pos + 4, 4 + clen) == be32(png + pos + 8 + clen));
        if (memcmp(png + pos + 4, "IDAT", 4) == 0)
            idat += clen;
        seen_iend = memcmp(png + pos + 4, "IEND", 4) == 0;
        pos += 12 + clen;
    }
    CHECK(seen_iend && pos == len);
    return idat;
}

static void test_png(const float *pts, size_t n, const int32_t *lab, const float *ctr)
{
    char err[256] = "";
    const char *p = path_of("plot.png");
    CHECK_MSG(pcli_plot(p, pts, n, 2, lab, ctr, 3, "three blobs", err, sizeof err) == 0, "%s", err);
    size_t len = 0;
    unsigned char *png = slurp(p, &len);
    CHECK(png != NULL && len > 100);
    if (!png || len <= 100)
        return;
    CHECK(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
    CHECK(be32(png + 8) == 13 && memcmp(png + 12, "IHDR", 4) == 0);
    CHECK(be32(png + 16) == 800 && be32(png + 20) == 800);
    CHECK(png[24] == 8 && png[25] == 2);
    CHECK(crc32_bitwise(png + 12, 17) == be32(png + 29));
    CHECK(memcmp(png + len - 12, "\0\0\0\0IEND\xae\x42\x60\x82", 12) == 0);
    /* stored blocks: the image bytes plus zlib's 2 + 4 and 5 per block of at most 65535 */
    size_t raw = 800 * (1 + 3 * 800);
    CHECK(check_png_chunks(png, len) == 6 + raw + 5 * ((raw + 65534) / 65535));
    free(png);
}

static void test_svg(const float *pts, size_t n, const int32_t *lab, const float *ctr)
{
    char err[256] = "";
    const char *p = path_of("plot.SVG");
    CHECK_MSG(pcli_plot(p, pts, n, 2, lab, ctr, 3, "a <title> & more", err, sizeof err) == 0, "%s", err);
    size_t len = 0;
    char *svg = (char *)slurp(p, &len);
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, "</svg>"));
    CHECK(svg && strstr(svg, "a &lt;title&gt; &amp; more"));
    CHECK(svg && strstr(svg, "evenly strided"));
    size_t circles = 0;
    for (char *s = svg; s && (s = strstr(s, "<circle")); s++)
        circles++;
    CHECK(circles == 20000 + 2 * 3);
    free(svg);
}

/* Degenerate inputs must draw something and not crash. */
static void test_plot_edges(void)
{
    char err[256] = "";
    const float same[] = {2, 2, 2, 2, 2, 2};
    const int32_t lab[] = {-1, 7, 40};
    const char *names[] = {"e.png", "e.svg"};
    for (int i = 0; i < 2; i++) {
        const char *p = path_of(names[i]);
        CHECK_MSG(pcli_plot(p, NULL, 0, 2, NULL, NULL, 0, NULL, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(pcli_plot(p, same, 3, 2, lab, same, 1, "", err, sizeof err) == 0, "%s", err);
        CHECK_MSG(pcli_plot(p, same, 6, 1, NULL, same, 2, "dim 1", err, sizeof err) == 0, "%s", err);
        CHECK_MSG(pcli_plot(p, same, 3, 2, lab, NULL, 0, NULL, err, sizeof err) == 0, "%s", err);
    }
}

static uint32_t rng_state = 12345;

static double uniform(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (rng_state >> 8) / 16777216.0;
}

/* Three Gaussian blobs plus a little uniform noise labelled -1. */
static void test_plots(void)
{
    const size_t n = 30000;
    const float ctr[] = {-5, -2, 4, 1, 0, 7};
    float *pts = malloc(n * 2 * sizeof *pts);
    int32_t *lab = malloc(n * sizeof *lab);
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % 3);
        double r = sqrt(-2 * log(uniform() + 1e-12)), a = 6.283185307 * uniform();
        lab[i] = i % 50 == 0 ? -1 : c;
        pts[2 * i] = lab[i] < 0 ? (float)(uniform() * 20 - 10) : ctr[2 * c] + (float)(1.2 * r * cos(a));
        pts[2 * i + 1] = lab[i] < 0 ? (float)(uniform() * 20 - 6) : ctr[2 * c + 1] + (float)(1.2 * r * sin(a));
    }
    test_png(pts, n, lab, ctr);
    test_svg(pts, n, lab, ctr);
    test_plot_edges();
    free(pts);
    free(lab);
}

/* Text read a block (1 MiB) at a time: rows whose line ends fall on and across the blocks' ends (a
 * CRLF cut in two by one, a lone CR ending one) read as written; a NUL beyond the first block named
 * with its line; the values stopped at the memory limit with the line where they passed it. */
static void test_blocks(void)
{
    static const char *const eols[] = {"\n", "\r\n", "\r"};
    const size_t n = 200000, block = (size_t)1 << 20;
    for (int e = 0; e < 3; e++) {
        size_t le = strlen(eols[e]), w = 17 + le; /* "1234567,1234567.5" and the line end */
        /* A first comment line of the length that puts a row's line end on the first block's last byte. */
        size_t lead = (block - 1 - 17) % w;
        while (lead < 2 + le)
            lead += w;
        char *text = malloc(lead + n * w + 1), *t = text;
        float *want = malloc(2 * n * sizeof *want);
        memset(t, 'c', lead - le);
        t[0] = '#';
        memcpy(t + lead - le, eols[e], le);
        t += lead;
        for (size_t i = 0; i < n; i++) {
            t += sprintf(t, "%zu,%zu.5%s", 1000000 + i, 1000000 + i, eols[e]);
            want[2 * i] = (float)(1000000 + i);
            want[2 * i + 1] = (float)(1000000 + i) + 0.5f;
        }
        CHECK(text[block - 1] == eols[e][0] && (size_t)(t - text) == lead + n * w);
        char name[32];
        snprintf(name, sizeof name, "blocks%d.csv", e);
        const char *path = put_file(name, text, (size_t)(t - text));
        expect_points(path, n, 2, want);
        /* A NUL in the third block: named with its line (the comment is line 1). */
        size_t at = 2 * block + 5, line = 2 + (at - lead) / w;
        text[at] = '\0';
        path = put_file(name, text, (size_t)(t - text));
        char msg[64];
        snprintf(msg, sizeof msg, "line %zu contains a NUL byte", line);
        expect_points_error(path, msg);
        text[at] = '1';
        free(text);
        free(want);
    }
    /* 64 KiB of values: 8192 rows of two float32; the 8193rd (line 8194 after the comment) passes it. */
    pcli_set_memory_limit(64 * 1024);
    const char *path = path_of("blocks1.csv");
    pcli_matrix m = {0};
    char err[512] = "";
    CHECK(pcli_read_points(path, &m, err, sizeof err) == -1);
    CHECK_MSG(has(err, "line 8194: the points read so far exceed the memory limit, 64.0 KiB (set by the program"), "%s",
              err);
    const char *why = NULL;
    CHECK(pcli_memory_limit(&why) == 64 * 1024 && strcmp(why, "set by the program") == 0);
    pcli_set_memory_limit(0);
    CHECK(pcli_memory_limit(&why) > 64 * 1024);
    remove(path_of("blocks0.csv"));
    remove(path_of("blocks1.csv"));
    remove(path_of("blocks2.csv"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR (a directory for temporary files)\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    mkdir(dir, 0777);
    test_text_formats();
    test_text_errors();
    test_header_rules();
    test_numpy_numbers();
    test_line_ends_and_encodings();
    test_blocks();
    test_labels();
    test_npy_roundtrip();
    test_npy_read();
    test_failed_writes();
    test_plots();
    CHECK(temp_files_left() == 0);
    return check_report("points_io");
}
