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
    pcli_matrix m = {NULL, 0, 0};
    char err[256] = "";
    int rc = pcli_read_points(path, &m, err, sizeof err);
    CHECK_MSG(rc == 0, "%s: %s", path, err);
    CHECK(m.n == n);
    CHECK(m.dim == dim);
    if (rc == 0 && m.n == n && m.dim == dim)
        for (size_t i = 0; i < n * dim; i++)
            CHECK_NEAR(m.data[i], want[i], 0);
    pcli_matrix_free(&m);
    CHECK(m.data == NULL);
}

static void expect_points_error(const char *path, const char *text)
{
    pcli_matrix m = {NULL, 0, 0};
    char err[256] = "";
    CHECK(pcli_read_points(path, &m, err, sizeof err) == -1);
    CHECK(m.data == NULL);
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
        CHECK_MSG(pcli_write_labels(path_of(exts[e]), want, 6, err, sizeof err) == 0, "%s", err);
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

    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }");
    len += put_f8(buf + len, 1e300);
    expect_points_error(put_file("huge.npy", buf, len), "value at [0, 0] is not finite");

    len = npy_header(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }");
    expect_points_error(put_file("zero.npy", buf, len), "zero.npy: no data rows");

    len = npy_header(buf, 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }");
    expect_points_error(put_file("complex.npy", buf, len + 8), "unsupported dtype '<c8'");

    len = npy_header(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 3), }");
    memcpy(buf + len, "\x00\x7f\xff", 3);
    const float bytes[] = {0, 127, 255};
    expect_points(put_file("u1.npy", buf, len + 3), 1, 3, bytes);

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
    test_labels();
    test_npy_roundtrip();
    test_npy_read();
    test_failed_writes();
    test_plots();
    CHECK(temp_files_left() == 0);
    return check_report("points_io");
}
