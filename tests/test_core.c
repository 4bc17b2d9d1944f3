/* The core pieces against simple references: union-find against naive relabelling, the grid's
 * neighbour lists against a scan of all cells, the random generator's moments, views and statuses. */
#include "check.h"
#include "test_util.h"

#include "grid.h"
#include "internal.h"
#include "rng.h"
#include "union_find.h"

#include <math.h>
#include <string.h>

static void test_rng(uint64_t seed)
{
    pc__rng a, b, c;
    pc__rng_seed(&a, seed);
    pc__rng_seed(&b, seed);
    pc__rng_seed(&c, seed + 1);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = pc__rng_next(&a), y = pc__rng_next(&b), z = pc__rng_next(&c);
        same &= x == y;
        differ += x != z;
    }
    CHECK(same);
    CHECK(differ > 990);
    /* Moments of 200k draws: uniform mean 1/2, variance 1/12; normal mean 0, variance 1. */
    double su = 0, su2 = 0, sn = 0, sn2 = 0;
    const int m = 200000;
    int below_ok = 1;
    for (int i = 0; i < m; i++) {
        double u = pc__rng_uniform(&a), g = pc__rng_normal(&a);
        below_ok &= u >= 0 && u < 1 && pc__rng_below(&a, 7) < 7;
        su += u;
        su2 += u * u;
        sn += g;
        sn2 += g * g;
    }
    CHECK(below_ok);
    CHECK_NEAR(su / m, 0.5, 0.005);
    CHECK_NEAR(su2 / m - (su / m) * (su / m), 1.0 / 12, 0.002);
    CHECK_NEAR(sn / m, 0.0, 0.01);
    CHECK_NEAR(sn2 / m, 1.0, 0.02);
}

/* Union-find against repeated relabelling (the slow obvious way). */
static void test_union_find(uint64_t seed)
{
    const size_t n = 300;
    pc__rng rng;
    pc__rng_seed(&rng, seed);
    pc__union_find uf;
    CHECK(pc__uf_init(&uf, n) == 0);
    size_t label[300];
    for (size_t i = 0; i < n; i++)
        label[i] = i;
    for (int e = 0; e < 250; e++) {
        size_t a = pc__rng_below(&rng, n), b = pc__rng_below(&rng, n);
        int joined = pc__uf_union(&uf, a, b);
        CHECK(joined == (label[a] != label[b]));
        size_t from = label[b], to = label[a];
        if (from != to)
            for (size_t i = 0; i < n; i++)
                if (label[i] == from)
                    label[i] = to;
    }
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            ok &= (pc__uf_find(&uf, i) == pc__uf_find(&uf, j)) == (label[i] == label[j]);
    CHECK(ok);
    /* The root is the smallest member. */
    for (size_t i = 0; i < n; i++) {
        size_t smallest = i;
        for (size_t j = 0; j < n; j++)
            if (label[j] == label[i] && j < smallest)
                smallest = j;
        ok &= pc__uf_find(&uf, i) == smallest;
    }
    CHECK(ok);
    pc__uf_free(&uf);
}

/* Every point lands in the cell of its coordinates, and neighbour lists equal a scan of all cells,
 * both when candidates are enumerated (low dim) and when occupied cells are scanned (high dim). */
static void test_grid(uint64_t seed)
{
    for (size_t dim = 1; dim <= 7; dim += 2) {
        size_t n = 2000;
        float *pts = test_blobs(n, dim, 5, 2.0, 6, seed + dim, NULL);
        pc__grid g;
        CHECK(pc__grid_build(&g, pts, n, dim, 0.9, 0) == PC_OK);
        int ok = 1;
        size_t total = 0;
        int32_t c[8];
        for (size_t cell = 0; cell < g.cells; cell++) {
            for (size_t s = g.start[cell]; s < g.start[cell + 1]; s++) {
                CHECK(pc__grid_locate(&g, pts + g.order[s] * dim, c));
                ok &= memcmp(c, g.coords + cell * dim, dim * sizeof *c) == 0;
                total++;
            }
            ok &= pc__grid_find(&g, g.coords + cell * dim) == (long)cell;
        }
        CHECK(ok);
        CHECK(total == n);
        size_t *near = malloc(pc__grid_neighbour_capacity(&g, 1) * sizeof *near);
        int32_t scratch[8];
        for (size_t cell = 0; cell < g.cells; cell += 7) {
            size_t count = pc__grid_neighbours(&g, g.coords + cell * dim, 1, scratch, near);
            size_t expect = 0, pos = 0;
            for (size_t o = 0; o < g.cells; o++) {
                int adjacent = 1;
                for (size_t j = 0; j < dim; j++)
                    adjacent &= abs(g.coords[o * dim + j] - g.coords[cell * dim + j]) <= 1;
                if (adjacent) {
                    expect++;
                    ok &= pos < count && near[pos++] == o;
                }
            }
            ok &= count == expect;
        }
        CHECK_MSG(ok, "dim %zu: neighbour lists differ from a scan", dim);
        free(near);
        pc__grid_free(&g);
        free(pts);
    }
}

static void test_views_and_statuses(void)
{
    float f[4] = {1, 2, 3, 4};
    pc_points v = pc_points_f32(f, 2, 2);
    CHECK_STATUS(pc_points_check(&v), PC_OK);
    v.stride = 4;
    CHECK_STATUS(pc_points_check(&v), PC_INVALID_ARGUMENT);
    uint16_t u[6] = {1, 2, 3, 4, 5, 6};
    pc_points w = pc_points_u16(u, 2, 2);
    w.stride = 6; /* rows 3 values apart: the view skips the third */
    float row[2];
    pc__points_row_f32(&w, 1, row);
    CHECK(row[0] == 4 && row[1] == 5);
    double d[2] = {1e300, 0};
    pc_points big = pc_points_f64(d, 1, 2);
    CHECK_STATUS(pc_points_check(&big), PC_INVALID_ARGUMENT);
    CHECK(strcmp(pc_status_string(PC_OK), "ok") == 0);
    CHECK(strcmp(pc_status_string(PC_OUT_OF_MEMORY), "out of memory") == 0);
    pc_backend b;
    CHECK_STATUS(pc_backend_parse("openmp", &b), PC_OK);
    CHECK(b == PC_BACKEND_OPENMP);
    CHECK_STATUS(pc_backend_parse("gpu", &b), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "gpu") != NULL);
    CHECK(pc_backend_available(PC_BACKEND_SEQUENTIAL));
}

/* The generator: same parameters, same points; the lattice puts cluster c where its index says. */
static void test_generate(void)
{
    pc_generate_params g;
    pc_generate_params_init(&g);
    g.n = 999;
    g.clusters = 3;
    float a[999 * 2], b[999 * 2];
    int32_t la[999];
    CHECK_STATUS(pc_generate(&g, a, la), PC_OK);
    CHECK_STATUS(pc_generate(&g, b, NULL), PC_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    size_t count[3] = {0};
    for (size_t i = 0; i < g.n; i++)
        count[la[i]]++;
    CHECK(count[0] == 333 && count[1] == 333 && count[2] == 333);
    g.dataset = PC_DATASET_GRID;
    g.clusters = 9;
    g.spread = 0;
    g.box = 2;
    CHECK_STATUS(pc_generate(&g, a, la), PC_OK);
    for (size_t i = 0; i < 9; i++)
        CHECK(a[i * 2] == (float)(2 * (la[i] / 3)) && a[i * 2 + 1] == (float)(2 * (la[i] % 3)));
    g.clusters = 0;
    CHECK_STATUS(pc_generate(&g, a, la), PC_INVALID_ARGUMENT);
    g.dataset = PC_DATASET_AGNOLUCCI;
    g.clusters = 3;
    CHECK_STATUS(pc_generate(&g, a, la), PC_INVALID_ARGUMENT); /* dim 2 */
}

int main(void)
{
    uint64_t seed = test_seed("core");
    test_rng(seed);
    test_union_find(seed);
    test_grid(seed);
    test_views_and_statuses();
    test_generate();
    return check_report("core");
}
