/* The array writers of points_io (labels, float32, float64 and int64 tables) byte for byte against
 * what stdio prints ("%d", "%.9g", "%.17g", "%lld", the formats of the writers they replaced), on
 * edge values and a million random float32 bit patterns, and their .npy files byte for byte against
 * NumPy's layout. Usage: test_array_writers DIR. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "points_io.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
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

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size + 1);
    if (buf && fread(buf, 1, (size_t)size, fp) != (size_t)size) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    *len = (size_t)size;
    return buf;
}

/* A growing text built with snprintf: what the file must hold. */
typedef struct {
    char *s;
    size_t len, cap;
} text;

static void add(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void add(text *t, const char *fmt, ...)
{
    if (t->cap - t->len < 64) {
        t->cap = t->cap ? 2 * t->cap : 1 << 16;
        t->s = realloc(t->s, t->cap);
        if (!t->s)
            exit(2);
    }
    va_list ap;
    va_start(ap, fmt);
    t->len += (size_t)vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
}

/* The file at path holds exactly want (len bytes); on a difference, the first one is shown. */
static int file_is(const char *path, const void *want, size_t len)
{
    size_t got_len;
    unsigned char *got = slurp(path, &got_len);
    if (!got) {
        fprintf(stderr, "  cannot read %s\n", path);
        return 0;
    }
    int same = got_len == len && memcmp(got, want, len) == 0;
    if (!same) {
        size_t i = 0;
        while (i < got_len && i < len && got[i] == ((const unsigned char *)want)[i])
            i++;
        size_t from = i > 40 ? i - 40 : 0;
        fprintf(stderr, "  %s: %zu bytes, expected %zu; first difference at byte %zu:\n  got  '%.*s'\n  want '%.*s'\n",
                path, got_len, len, i, (int)((got_len - from) < 80 ? got_len - from : 80), (const char *)got + from,
                (int)((len - from) < 80 ? len - from : 80), (const char *)want + from);
    }
    free(got);
    return same;
}

/* NumPy's .npy 1.0 layout: magic, header length, the dict padded with spaces to a 64-byte boundary
 * and a newline; then the values little-endian. */
static size_t npy_prefix(unsigned char *out, const char *descr, const char *shape)
{
    char dict[256];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
    size_t total = 10 + (size_t)len + 1;
    total += (64 - total % 64) % 64;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (unsigned char)((total - 10) & 0xff);
    out[9] = (unsigned char)((total - 10) >> 8);
    memset(out + 10, ' ', total - 10);
    memcpy(out + 10, dict, (size_t)len);
    out[total - 1] = '\n';
    return total;
}

static void put_le(unsigned char *out, uint64_t v, int bytes)
{
    for (int b = 0; b < bytes; b++)
        out[b] = (unsigned char)(v >> (8 * b));
}

static uint64_t rng_state = 0x2545f4914f6cdd1du;
static uint64_t next_u64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static float float_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---------------------------------------------------------------- labels */

/* A cluster count that makes .npy labels int32 (every int32 value is then a label the file holds). */
#define WIDE ((size_t)1 << 31)

static void test_labels(void)
{
    char err[256];
    /* 3 * 10^6 labels: many 1 MiB blocks, and every width from INT32_MIN to INT32_MAX */
    size_t n = 3000000;
    int32_t *lab = malloc(n * sizeof *lab);
    const int32_t edge[] = {0, -1, 1, 9, 10, -9, -10, 99, 100, 12345, -99999, INT32_MAX, INT32_MIN, INT32_MIN + 1,
                            1000000000, -1000000000, 999999999};
    for (size_t i = 0; i < n; i++)
        lab[i] = i < sizeof edge / sizeof edge[0] ? edge[i]
                 : i % 3 ? (int32_t)(next_u64() % 7) - 1
                         : (int32_t)(uint32_t)(next_u64() >> (next_u64() % 32));
    text t = {0};
    for (size_t i = 0; i < n; i++)
        add(&t, "%" PRId32 "\n", lab[i]);
    const char *exts[] = {"l.csv", "l.txt", "l.tsv", "l.TXT"};
    for (size_t e = 0; e < sizeof exts / sizeof exts[0]; e++) {
        CHECK_MSG(pcli_write_labels(path_of(exts[e]), lab, n, WIDE, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(file_is(path_of(exts[e]), t.s, t.len), "labels %s as fprintf %%d wrote them", exts[e]);
    }
    unsigned char *npy = malloc(128 + 4 * n);
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu,)", n);
    size_t h = npy_prefix(npy, "<i4", shape);
    for (size_t i = 0; i < n; i++)
        put_le(npy + h + 4 * i, (uint32_t)lab[i], 4);
    const char *npys[] = {"l.npy", "l.NPY"};
    for (size_t e = 0; e < 2; e++) {
        CHECK_MSG(pcli_write_labels(path_of(npys[e]), lab, n, WIDE, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(file_is(path_of(npys[e]), npy, h + 4 * n), "labels %s", npys[e]);
    }
    /* no labels: an empty text file, a (0,) array */
    CHECK(pcli_write_labels(path_of("l0.csv"), lab, 0, 0, err, sizeof err) == 0 && file_is(path_of("l0.csv"), "", 0));
    h = npy_prefix(npy, "|i1", "(0,)");
    CHECK(pcli_write_labels(path_of("l0.npy"), lab, 0, 0, err, sizeof err) == 0 && file_is(path_of("l0.npy"), npy, h));
    free(npy);
    free(t.s);
    free(lab);
}

/* .npy labels in the smallest signed type that holds -1 and clusters - 1, each byte as a hand-made
 * little-endian array; at the bounds of each type, and a label past the count refused with no file. */
static void test_narrow_labels(void)
{
    char err[256];
    const struct {
        size_t clusters;
        const char *descr;
        size_t size;
    } cases[] = {{1, "|i1", 1},     {128, "|i1", 1},     {129, "<i2", 2},
                 {32768, "<i2", 2}, {32769, "<i4", 4},   {WIDE, "<i4", 4}};
    size_t n = 1500000; /* more than one 1 MiB block in every type */
    int32_t *lab = malloc(n * sizeof *lab);
    unsigned char *npy = malloc(128 + 4 * n);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t k = cases[c].clusters;
        for (size_t i = 0; i < n; i++) /* -1, 0 and k - 1 first, then anything in [-1, k) */
            lab[i] = i == 0 ? -1 : i == 1 ? 0 : i == 2 ? (int32_t)(k - 1) : (int32_t)(next_u64() % (k + 1)) - 1;
        char shape[64];
        snprintf(shape, sizeof shape, "(%zu,)", n);
        size_t h = npy_prefix(npy, cases[c].descr, shape);
        for (size_t i = 0; i < n; i++)
            put_le(npy + h + cases[c].size * i, (uint32_t)lab[i], (int)cases[c].size);
        CHECK_MSG(pcli_write_labels(path_of("n.npy"), lab, n, k, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(file_is(path_of("n.npy"), npy, h + cases[c].size * n), "%zu clusters: %s", k, cases[c].descr);
        int32_t *back = NULL;
        size_t m = 0;
        CHECK_MSG(pcli_read_labels(path_of("n.npy"), &back, &m, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(m == n && back && memcmp(back, lab, n * sizeof *lab) == 0, "%zu clusters: read back", k);
        free(back);
        if (k == WIDE)
            continue;
        lab[n - 7] = (int32_t)k; /* one label past the count, where the type may or may not hold it */
        remove(path_of("bad.npy"));
        int rc = pcli_write_labels(path_of("bad.npy"), lab, n, k, err, sizeof err);
        FILE *left = fopen(path_of("bad.npy"), "rb");
        if (k == 128 || k == 32768) {
            char want[64];
            snprintf(want, sizeof want, "label %zu at [%zu]", k, n - 7);
            CHECK_MSG(rc == -1 && strstr(err, want) && strstr(err, "bad.npy") && !left, "%zu clusters: %s", k, err);
        } else {
            CHECK_MSG(rc == 0 && left, "%zu clusters: a label the type holds is written", k);
        }
        if (left)
            fclose(left);
    }
    free(npy);
    free(lab);
}

/* ---------------------------------------------------------------- float32 matrices */

static void test_float32(void)
{
    char err[256];
    /* edge values first: zeros, each binade's ends, powers of ten and their neighbours (the %e/%f
     * switch at 1e-4 and 1e9, rounding up to a new power of ten), the smallest and largest floats,
     * infinities and NaN; then random bit patterns */
    size_t cap = 1 << 20, n = 0, dim = 4;
    float *v = malloc(cap * sizeof *v);
    const float fixed[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 0.5f, 1.5f, 1e-4f, 9.99999975e-5f, 1e9f, 999999999.0f,
                           999999940.0f, 1e-5f, 123456789.0f, 16777216.0f, 3.40282347e38f, -3.40282347e38f,
                           FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1.17549421e-38f, (float)INFINITY,
                           -(float)INFINITY, (float)NAN, 0.333333343f, 2.5e-23f, 1e-23f, 1.3e-23f};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        v[n++] = fixed[i];
    for (uint32_t be = 0; be < 255; be++)
        for (uint32_t d = 0; d < 3; d++) {
            v[n++] = float_of(be << 23 | d);
            v[n++] = float_of((be << 23 | 0x7fffffu) - d);
        }
    for (int k = -45; k <= 38; k++) {
        uint32_t u = bits_of((float)pow(10.0, k));
        for (int d = -3; d <= 3; d++) {
            v[n++] = float_of(u + (uint32_t)d);
            v[n++] = -float_of(u + (uint32_t)d);
        }
    }
    while (n < cap) {
        uint32_t u = (uint32_t)next_u64();
        /* half the values in the common range 1e-6 .. 1e7, half anywhere */
        v[n] = n % 2 ? float_of(u) : float_of((u & 0x807fffffu) | (uint32_t)(107 + u % 44) << 23);
        n++;
    }
    n -= n % dim;
    size_t rows = n / dim;
    const char *names[] = {"m.csv", "m.txt", "m.tsv"};
    for (size_t e = 0; e < 3; e++) {
        char sep = e == 2 ? '\t' : ',';
        text t = {0};
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < dim; j++)
                add(&t, "%.9g%c", (double)v[i * dim + j], j + 1 < dim ? sep : '\n');
        CHECK_MSG(pcli_write_matrix(path_of(names[e]), v, rows, dim, err, sizeof err) == 0, "%s", err);
        CHECK_MSG(file_is(path_of(names[e]), t.s, t.len), "float32 %s as fprintf %%.9g wrote it", names[e]);
        free(t.s);
    }
    unsigned char *npy = malloc(128 + 4 * n);
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu, %zu)", rows, dim);
    size_t h = npy_prefix(npy, "<f4", shape);
    for (size_t i = 0; i < n; i++)
        put_le(npy + h + 4 * i, bits_of(v[i]), 4);
    CHECK_MSG(pcli_write_matrix(path_of("m.npy"), v, rows, dim, err, sizeof err) == 0, "%s", err);
    CHECK(file_is(path_of("m.npy"), npy, h + 4 * n));
    free(npy);
    free(v);
}

/* ---------------------------------------------------------------- float64 and int64 tables */

static void test_float64(void)
{
    char err[256];
    /* a linkage matrix's values (integers, heights in [0, 1]) and what %.17g prints otherwise */
    const double z[] = {0, 1, 0.045454545454545414, 2,  3, 4, 0.1428571428571429, 2,
                        5, 6, 1, 4,                     -0.0, 9007199254740991.0, 9007199254740992.0, 1e17,
                        1e300, -2.5, 1e-300, 123456789012345678.0, INFINITY, -INFINITY, NAN, 4.9e-324};
    size_t rows = sizeof z / sizeof z[0] / 4;
    const char *names[] = {"left", "right", "height", "leaves"};
    for (int with_names = 0; with_names < 2; with_names++)
        for (int tsv = 0; tsv < 2; tsv++) {
            char sep = tsv ? '\t' : ',';
            text t = {0};
            if (with_names)
                add(&t, "left%cright%cheight%cleaves\n", sep, sep, sep);
            for (size_t i = 0; i < rows; i++)
                for (size_t j = 0; j < 4; j++)
                    add(&t, "%.17g%c", z[4 * i + j], j < 3 ? sep : '\n');
            const char *p = path_of(tsv ? "z.tsv" : "z.csv");
            CHECK_MSG(pcli_write_matrix_f64(p, z, rows, 4, with_names ? names : NULL, err, sizeof err) == 0, "%s", err);
            CHECK_MSG(file_is(p, t.s, t.len), "float64 %s as fprintf %%.17g wrote it", p);
            free(t.s);
        }
    /* the old dendrogram writer's format, "%.0f,%.0f,%.17g,%.0f", for its rows */
    text old = {0};
    for (size_t i = 0; i < 3; i++)
        add(&old, "%.0f,%.0f,%.17g,%.0f\n", z[4 * i], z[4 * i + 1], z[4 * i + 2], z[4 * i + 3]);
    CHECK(pcli_write_matrix_f64(path_of("d.csv"), z, 3, 4, NULL, err, sizeof err) == 0);
    CHECK_MSG(file_is(path_of("d.csv"), old.s, old.len), "a dendrogram as the old writer wrote it");
    free(old.s);

    unsigned char npy[1024];
    size_t h = npy_prefix(npy, "<f8", "(6, 4)");
    for (size_t i = 0; i < 24; i++) {
        uint64_t u;
        memcpy(&u, &z[i], 8);
        put_le(npy + h + 8 * i, u, 8);
    }
    CHECK_MSG(pcli_write_matrix_f64(path_of("z.npy"), z, rows, 4, names, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(file_is(path_of("z.npy"), npy, h + 8 * 24), "float64 .npy (no header row in it)");
    h = npy_prefix(npy, "<f8", "(0, 4)");
    CHECK(pcli_write_matrix_f64(path_of("z0.npy"), z, 0, 4, NULL, err, sizeof err) == 0 &&
          file_is(path_of("z0.npy"), npy, h));
    CHECK(pcli_write_matrix_f64(path_of("z0.csv"), z, 0, 4, NULL, err, sizeof err) == 0 &&
          file_is(path_of("z0.csv"), "", 0));
}

static void test_int64(void)
{
    char err[256];
    size_t rows = 5000; /* more than one block of text */
    int64_t *a = malloc(rows * sizeof *a), *b = malloc(rows * sizeof *b);
    for (size_t i = 0; i < rows; i++) {
        a[i] = (int64_t)next_u64() >> (next_u64() % 64);
        b[i] = -(int64_t)i;
    }
    a[0] = INT64_MIN;
    a[1] = INT64_MAX;
    a[2] = 0;
    const int64_t *columns[] = {NULL, a, b};
    const char *names[] = {"component", "cell", "points"};
    text t = {0};
    add(&t, "component,cell,points\n");
    for (size_t i = 0; i < rows; i++)
        add(&t, "%zu,%lld,%lld\n", i, (long long)a[i], (long long)b[i]);
    CHECK_MSG(pcli_write_columns_i64(path_of("c.csv"), columns, rows, 3, names, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(file_is(path_of("c.csv"), t.s, t.len), "int64 table as fprintf %%lld wrote it");
    free(t.s);
    unsigned char *npy = malloc(128 + 24 * rows);
    char shape[64];
    snprintf(shape, sizeof shape, "(%zu, 3)", rows);
    size_t h = npy_prefix(npy, "<i8", shape);
    for (size_t i = 0; i < rows; i++) {
        put_le(npy + h + 24 * i, i, 8);
        put_le(npy + h + 24 * i + 8, (uint64_t)a[i], 8);
        put_le(npy + h + 24 * i + 16, (uint64_t)b[i], 8);
    }
    CHECK_MSG(pcli_write_columns_i64(path_of("c.npy"), columns, rows, 3, names, err, sizeof err) == 0, "%s", err);
    CHECK_MSG(file_is(path_of("c.npy"), npy, h + 24 * rows), "int64 .npy, row-major from the columns");
    free(npy);
    free(a);
    free(b);
}

static void test_replace_and_failures(void)
{
    char err[256] = "";
    const int32_t lab[2] = {1, 2};
    /* an empty file (as a staging name is, removed before the rename) and a full one are replaced */
    FILE *fp = fopen(path_of("e.csv"), "wb");
    if (fp)
        fclose(fp);
    CHECK(pcli_write_labels(path_of("e.csv"), lab, 2, 3, err, sizeof err) == 0 && file_is(path_of("e.csv"), "1\n2\n", 4));
    const int32_t lab2[1] = {-7};
    CHECK(pcli_write_labels(path_of("e.csv"), lab2, 1, 1, err, sizeof err) == 0 && file_is(path_of("e.csv"), "-7\n", 3));
    CHECK(pcli_write_labels(path_of("no_such_dir/l.npy"), lab, 2, 3, err, sizeof err) == -1);
    CHECK(strstr(err, "no_such_dir/l.npy: cannot create file") != NULL);
    CHECK(pcli_write_matrix_f64(path_of("x.npy"), NULL, 2, 4, NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "no data") != NULL);
    mkdir(path_of("a_dir.npy"), 0777); /* written, then the rename fails: an error, no file left */
    CHECK(pcli_write_labels(path_of("a_dir.npy"), lab, 2, 3, err, sizeof err) == -1);
    CHECK(strstr(err, "a_dir.npy: cannot replace file") != NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR (a directory for temporary files)\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    mkdir(dir, 0777);
    test_labels();
    test_narrow_labels();
    test_float32();
    test_float64();
    test_int64();
    test_replace_and_failures();
    return check_report("array_writers");
}
