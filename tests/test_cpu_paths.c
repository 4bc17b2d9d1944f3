/* The CPU kernels' instruction-set paths (src/core/cpu_path.h), each forced in turn where the processor
 * has it: mean shift's modes against the double-precision definition (one shift) and against the
 * baseline path (ten shifts, all pairs and the neighbour grid), OpenMP against sequential within a path;
 * HCA's grid cell of every pixel, the cell counts and the cells' sums of values against a direct count
 * with pc__hca_cell_coordinate, and its labels identical to the baseline path's; k-means' nearest centres
 * (labels, lowest and second-lowest values) against the definition, fmaf by fmaf, ties to the lower
 * index, and pc_kmeans's labels and centres identical to the baseline path's; HCA's host copies
 * (streaming stores) against their definitions; the AVX-512 gaussian's expanded form (mean shift over
 * all pairs, src/meanshift/shift.c): where it is laid out, one shift against the definition, and a
 * query beyond its reach. A path the processor lacks
 * is reported as not run (the test passes on what it could run; on an AVX-512 machine it runs all). */
#include "check.h"
#include "test_util.h"

#include "../src/core/cpu_path.h"
#include "../src/hca/internal_hca.h"
#include "../src/kmeans/internal_km.h"
#include "../src/meanshift/refs.h"

#include <math.h>
#include <string.h>

static double kernel_weight(pc_kernel kern, double d2, double h)
{
    return kern == PC_KERNEL_GAUSSIAN ? exp(-d2 / (2 * h * h))
         : d2 > h * h               ? 0
         : kern == PC_KERNEL_FLAT   ? 1
                                    : 1 - d2 / (h * h);
}

static float *modes_of(const float *pts, size_t n, size_t dim, const pc_meanshift_params *p)
{
    pc_points v = pc_points_f32(pts, n, dim);
    pc_result *r = NULL;
    pc_status st = pc_meanshift(&v, p, &r);
    CHECK_MSG(st == PC_OK, "pc_meanshift: %s", pc_last_error());
    if (st != PC_OK)
        return NULL;
    float *m = malloc(n * dim * sizeof *m);
    memcpy(m, pc_result_modes(r), n * dim * sizeof *m);
    pc_result_free(r);
    return m;
}

static void params(pc_meanshift_params *p, pc_kernel kern, double h, int iterations, pc_backend backend)
{
    pc_meanshift_params_init(p);
    p->kernel = kern;
    p->bandwidth = h;
    p->max_iter = iterations;
    p->eps = 0;
    p->backend = backend;
}

/* n = 405: ranges end inside a 16-lane (and an 8-lane) step, so the masked tails run. */
static void test_meanshift_path(pc__cpu_path_id path, uint64_t seed)
{
    const size_t n = 405, dims[] = {1, 2, 3, 4, 5, 8, 9};
    for (size_t c = 0; c < sizeof dims / sizeof dims[0]; c++) {
        size_t dim = dims[c];
        float *pts = test_blobs(n, dim, 4, 1.5, 6, seed + dim, NULL);
        for (int kern = PC_KERNEL_GAUSSIAN; kern <= PC_KERNEL_EPANECHNIKOV; kern++) {
            double h = 1.7;
            pc_meanshift_params p;
            /* One shift against the definition in double. */
            params(&p, (pc_kernel)kern, h, 1, PC_BACKEND_SEQUENTIAL);
            pc__cpu_path_force(path);
            float *one = modes_of(pts, n, dim, &p);
            double worst = 0;
            size_t compared = 0;
            for (size_t i = 0; one && i < n; i++) {
                double num[16] = {0}, den = 0;
                int ambiguous = 0;
                for (size_t j = 0; j < n; j++) {
                    double d2 = 0;
                    for (size_t k = 0; k < dim; k++) {
                        double d = (double)pts[i * dim + k] - pts[j * dim + k];
                        d2 += d * d;
                    }
                    if (kern == PC_KERNEL_FLAT && fabs(d2 - h * h) < 1e-4 * h * h)
                        ambiguous = 1; /* float may put this reference on either side of h */
                    double w = kernel_weight((pc_kernel)kern, d2, h);
                    den += w;
                    for (size_t k = 0; k < dim; k++)
                        num[k] += w * pts[j * dim + k];
                }
                if (ambiguous)
                    continue;
                compared++;
                for (size_t k = 0; k < dim; k++)
                    worst = fmax(worst, fabs(num[k] / den - one[i * dim + k]) / h);
            }
            CHECK(compared > n * 9 / 10);
            CHECK_MSG(worst <= 2e-5, "path %s dim %zu kernel %s: one shift off the definition by %.3g h",
                      pc__cpu_path_name(path), dim, pc_kernel_name((pc_kernel)kern), worst);
            free(one);
            /* Ten shifts, all pairs and with the neighbour grid (finite radius: ranges of cells),
             * against the baseline path; OpenMP against sequential on this path, bit for bit. */
            size_t few = 301; /* the first points (19 16-lane steps less 3) */
            for (int grid = 0; grid <= 1; grid++) {
                params(&p, (pc_kernel)kern, h, 10, PC_BACKEND_SEQUENTIAL);
                if (grid)
                    p.radius = 3 * h;
                pc__cpu_path_force(PC__CPU_BASELINE);
                float *ref = modes_of(pts, few, dim, &p);
                pc__cpu_path_force(path);
                float *seq = modes_of(pts, few, dim, &p);
                /* Without OpenMP built, the sequential backend again. */
                p.backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
                p.threads = 2;
                float *omp = modes_of(pts, few, dim, &p);
                if (ref && seq && omp) {
                    /* The flat kernel's edge, and the radius that cuts the others off for the grid
                     * (a gaussian weight of 0.011 there), can flip a reference in or out once paths
                     * round differently; Epanechnikov's weight is continuous at h but its slope is not,
                     * and ten shifts carried a reference's crossing to 1.16e-4 h (seed 1795732849);
                     * without an edge the modes stay within float rounding, but for a point between
                     * blobs, whose way is the small difference of two pulls: ten shifts carried one
                     * to 1.78e-4 h (seed 1795734532). So 99% of the points within tol, all within
                     * 2e-2 h; with the flat kernel 5e-2 h: a reference flipped at its edge moves the
                     * mean by its offset over the window's count, and 1-D windows of few references
                     * carried two modes to 0.0264 h (seed 1795910965). */
                    double tol = kern == PC_KERNEL_FLAT                ? 1e-2
                               : grid || kern == PC_KERNEL_EPANECHNIKOV ? 2e-3
                                                                        : 1e-4;
                    double diff = 0;
                    size_t beyond = 0;
                    for (size_t i = 0; i < few; i++) {
                        double d = 0;
                        for (size_t k = 0; k < dim; k++)
                            d = fmax(d, fabs((double)seq[i * dim + k] - ref[i * dim + k]) / h);
                        beyond += d > tol;
                        diff = fmax(diff, d);
                    }
                    CHECK_MSG(beyond <= few / 100 && diff <= (kern == PC_KERNEL_FLAT ? 5e-2 : 2e-2),
                              "path %s dim %zu kernel %s grid %d: %zu modes beyond %.0e h from the baseline's, the "
                              "farthest %.3g h", pc__cpu_path_name(path), dim, pc_kernel_name((pc_kernel)kern), grid,
                              beyond, tol, diff);
                    CHECK_MSG(memcmp(seq, omp, few * dim * sizeof *seq) == 0,
                              "path %s dim %zu kernel %s grid %d: OpenMP differs from sequential",
                              pc__cpu_path_name(path), dim, pc_kernel_name((pc_kernel)kern), grid);
                }
                free(ref);
                free(seq);
                free(omp);
            }
        }
        free(pts);
    }
}

/* One shift of every point of pts against the definition in double: the largest difference in h. */
static double one_shift_off(const pc__ms_refs *refs, const float *pts, size_t n, size_t dim, double h)
{
    size_t begin = 0, end = n;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        float got[8];
        CHECK(pc__shift_point(&refs->shift, pts + i * dim, &begin, &end, 1, NULL, got) == 1);
        double num[8] = {0}, den = 0;
        for (size_t j = 0; j < n; j++) {
            double d2 = 0;
            for (size_t k = 0; k < dim; k++) {
                double d = (double)pts[i * dim + k] - pts[j * dim + k];
                d2 += d * d;
            }
            double w = exp(-d2 / (2 * h * h));
            den += w;
            for (size_t k = 0; k < dim; k++)
                num[k] += w * pts[j * dim + k];
        }
        for (size_t k = 0; k < dim; k++)
            worst = fmax(worst, fabs(num[k] / den - got[k]) / h);
    }
    return worst;
}

static void expanded_refs(pc__ms_refs *refs, const float *pts, size_t n, size_t dim, pc_kernel kern, double h,
                          double radius)
{
    memset(refs, 0, sizeof *refs);
    refs->shift.kernel = kern;
    refs->shift.h2 = (float)(h * h);
    refs->shift.r2 = isfinite(radius) ? (float)(radius * radius) : INFINITY;
    refs->shift.scale = (float)(kern == PC_KERNEL_GAUSSIAN ? 1.4426950408889634 / (2 * h * h) : 1 / (h * h));
    CHECK(pc__ms_refs_build(refs, pts, n, dim, 0, radius, 1) == PC_OK);
}

/* The expanded form is laid out for a gaussian over all pairs of compact data only (scale |y - c|^2 <=
 * 64 for every point, c the box's centre); then one shift matches the definition, data far from 0 included, and a
 * query beyond that reach takes the direct form (bit for bit). */
static void test_meanshift_expanded(uint64_t seed)
{
    const size_t n = 405;
    const size_t dims[] = {1, 3, 8};
    for (size_t c = 0; c < sizeof dims / sizeof dims[0]; c++) {
        size_t dim = dims[c];
        float *pts = test_blobs(n, dim, 4, 1.5, 6, seed + 100 + dim, NULL);
        for (size_t i = 0; i < n * dim; i++)
            pts[i] += 100.0f; /* far from 0: the form must work about the data's centre */
        /* reach^2: the farthest point from the centre of the box, squared. */
        float lo[8], hi[8];
        for (size_t k = 0; k < dim; k++) {
            lo[k] = hi[k] = pts[k];
            for (size_t i = 0; i < n; i++) {
                lo[k] = fminf(lo[k], pts[i * dim + k]);
                hi[k] = fmaxf(hi[k], pts[i * dim + k]);
            }
        }
        double reach2 = 0;
        for (size_t i = 0; i < n; i++) {
            double r2 = 0;
            for (size_t k = 0; k < dim; k++) {
                double d = pts[i * dim + k] - 0.5 * ((double)lo[k] + hi[k]);
                r2 += d * d;
            }
            reach2 = fmax(reach2, r2);
        }
        /* h for a given scale * reach^2, scale = log2(e) / (2 h^2). */
        double h_in = sqrt(1.4426950408889634 * reach2 / (2 * 60.0)), h_out = sqrt(1.4426950408889634 * reach2 / (2 * 70.0));
        pc__ms_refs refs;
        expanded_refs(&refs, pts, n, dim, PC_KERNEL_GAUSSIAN, h_out, INFINITY);
        CHECK_MSG(!refs.shift.expanded, "dim %zu: expanded beyond its reach", dim);
        pc__ms_refs_free(&refs);
        /* (scale 1 / h^2 there: a wider h keeps the references within the reach's number.) */
        expanded_refs(&refs, pts, n, dim, PC_KERNEL_EPANECHNIKOV, 3 * h_in, INFINITY);
        CHECK_MSG(!refs.shift.expanded, "dim %zu: expanded for epanechnikov", dim);
        pc__ms_refs_free(&refs);
        expanded_refs(&refs, pts, n, dim, PC_KERNEL_GAUSSIAN, h_in, 3 * h_in);
        CHECK_MSG(!refs.shift.expanded, "dim %zu: expanded with a cut-off radius", dim);
        pc__ms_refs_free(&refs);

        expanded_refs(&refs, pts, n, dim, PC_KERNEL_GAUSSIAN, h_in, INFINITY);
        CHECK_MSG(refs.shift.expanded != NULL, "dim %zu: not expanded within its reach", dim);
        if (refs.shift.expanded) {
            /* The bound test_meanshift_path sets every path on data near 0 (the direct form, which
             * weighs differences of coordinates near 100 here, is 2-3x farther off). */
            double off = one_shift_off(&refs, pts, n, dim, h_in);
            CHECK_MSG(off <= 2e-5, "dim %zu: expanded shift off the definition by %.3g h", dim, off);
            /* ... and it is the expanded form that ran: its sums round differently from the direct
             * form's (2e-5 h above does not tell them apart at every seed). */
            size_t begin = 0, end = n, same = 0;
            for (size_t i = 0; i < n; i++) {
                float got[8], direct[8];
                pc__shift_point(&refs.shift, pts + i * dim, &begin, &end, 1, NULL, got);
                const float *expanded = refs.shift.expanded;
                refs.shift.expanded = NULL;
                pc__shift_point(&refs.shift, pts + i * dim, &begin, &end, 1, NULL, direct);
                refs.shift.expanded = expanded;
                same += memcmp(got, direct, dim * sizeof *got) == 0;
            }
            CHECK_MSG(same <= n * 9 / 10, "dim %zu: %zu of %zu shifts bit for bit the direct form's", dim, same, n);
            /* A query beyond the reach (never a climbing point, which stays in the references' hull). */
            float far[8], got[8], direct[8];
            memcpy(far, pts, dim * sizeof *far);
            for (size_t i = 0; i < n; i++)
                far[0] = fmaxf(far[0], pts[i * dim]);
            far[0] += (float)(12 * h_in); /* scale |q - c|^2 >= 104 */
            int moved = pc__shift_point(&refs.shift, far, &begin, &end, 1, NULL, got);
            const float *expanded = refs.shift.expanded;
            refs.shift.expanded = NULL;
            CHECK(pc__shift_point(&refs.shift, far, &begin, &end, 1, NULL, direct) == moved);
            refs.shift.expanded = expanded;
            CHECK_MSG(memcmp(got, direct, dim * sizeof *got) == 0, "dim %zu: a query beyond the reach", dim);
        }
        pc__ms_refs_free(&refs);
        free(pts);
    }
}

/* A 4-band uint8 image: blocks of a few spectra plus noise, every value 0..255 somewhere (the top bit's
 * half of the byte tables is used). */
static uint8_t *image(size_t n, uint64_t seed)
{
    uint8_t *img = malloc(n * 4);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        int cls = (int)((i / 37) % 5);
        for (size_t b = 0; b < 4; b++) {
            int v = 20 + cls * 45 + (int)b * 7 + (int)((s >> (8 * b)) & 31) - 16;
            img[i * 4 + b] = (uint8_t)(i % 997 == 0 ? (int)((s >> 40) & 255) : v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    return img;
}

/* An HCA result's cluster sizes and centres (pixels of dim bands) against its labels: integer sums,
 * then the mean as pc_hca's definition takes it (the double quotient, then float). */
static void check_hca_means(const pc_result *r, const uint8_t *img, size_t n, size_t dim, const char *path)
{
    size_t k = pc_result_cluster_count(r);
    const int32_t *labels = pc_result_labels(r);
    uint64_t *sum = calloc(k * (dim + 1), sizeof *sum);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        if (labels[i] < 0)
            continue;
        if ((size_t)labels[i] >= k) {
            wrong++;
            continue;
        }
        for (size_t j = 0; j < dim; j++)
            sum[(size_t)labels[i] * (dim + 1) + j] += img[i * dim + j];
        sum[(size_t)labels[i] * (dim + 1) + dim]++;
    }
    for (size_t c = 0; c < k; c++) {
        double count = (double)sum[c * (dim + 1) + dim];
        wrong += pc_result_sizes(r)[c] != (int64_t)sum[c * (dim + 1) + dim];
        for (size_t j = 0; j < dim; j++)
            wrong += count > 0 &&
                     pc_result_centers(r)[c * dim + j] != (float)((double)sum[c * (dim + 1) + j] / count);
    }
    CHECK_MSG(wrong == 0, "path %s n %zu bands %zu: %zu cluster sizes or centres differ from the labels' means", path,
              n, dim, wrong);
    free(sum);
}

static uint64_t cells_total(int m, size_t bands)
{
    uint64_t total = 1;
    for (size_t j = 0; j < bands; j++)
        total *= (uint64_t)m;
    return total;
}

/* How many of the total counts by the linear index that pc__hca_count_u8_coords gives (the counting
 * pass alone: HECA's members, the labels as bytes) differ from want, or all of them where it fails. */
static size_t counts_alone_differ(const pc_points *v, const uint8_t *coord, int m, int threads, size_t budget,
                                  const int32_t *want, uint64_t total)
{
    int32_t *got = calloc(total, sizeof *got);
    size_t differ = 0;
    if (pc__hca_count_u8_coords(v, coord, m, threads, NULL, got, total, budget) != PC_OK)
        differ = (size_t)total;
    else
        for (uint64_t c = 0; c < total; c++)
            differ += got[c] != want[c];
    free(got);
    return differ;
}

/* The grid's cell of every pixel (into scratch + offset: an offset of one int32 takes the unaligned
 * store path) and the counts, against pc__hca_cell_coordinate directly. */
static void check_grid_cells(pc__cpu_path_id path, const pc_points *v, int m, int threads, int32_t *scratch,
                             int offset)
{
    scratch += offset;
    const uint8_t *img = v->data;
    size_t bands = v->dim;
    pc__cpu_path_force(path);
    pc__hca_grid g;
    pc_status st = pc__hca_grid_build(&g, v, m, (size_t)1 << 30, threads, scratch);
    CHECK_MSG(st == PC_OK, "grid: %s", pc_last_error());
    if (st != PC_OK)
        return;
    CHECK(g.dense);
    int64_t *count = calloc(g.cells, sizeof *count), *sum = calloc(g.cells * bands, sizeof *sum),
            *got = malloc(g.cells * bands * sizeof *got);
    size_t wrong = 0;
    for (size_t i = 0; i < v->n; i++) {
        uint64_t key = 0;
        for (size_t j = 0; j < bands; j++)
            key += (uint64_t)pc__hca_cell_coordinate(img[i * bands + j], g.lo[j], g.hi[j], m) * g.stride[j];
        wrong += (uint32_t)scratch[i] != key;
        long c = pc__hca_find(&g, key);
        if (c < 0) {
            wrong++;
            continue;
        }
        count[c]++;
        for (size_t j = 0; j < bands; j++)
            sum[(size_t)c * bands + j] += img[i * bands + j];
    }
    for (size_t c = 0; c < g.cells; c++)
        wrong += count[c] != g.density[c];
    CHECK_MSG(wrong == 0, "path %s n %zu bands %zu m %d threads %d offset %d: %zu cells or counts wrong",
              pc__cpu_path_name(path), v->n, bands, m, threads, offset, wrong);
    /* The counts alone (HECA's members, the labels as bytes), by the linear index, with each budget
     * count_u8_coords tells apart: none (atomic increments, or one thread's straight into the counts),
     * the threads' copies by the linear index, and room for copies by block (where the image is at
     * least as large as they are: m = 2 and 7 here; test_blocked_counts has larger m). */
    if (offset == 0 && pc__hca_grid_vector_path(v, m)) {
        uint8_t coord[4 * 256] = {0};
        for (size_t j = 0; j < bands; j++)
            pc__hca_band_coordinates(&g, j, coord + (4 - bands + j) * 256);
        uint64_t total = cells_total(m, bands);
        int32_t *want = calloc(total, sizeof *want);
        for (size_t c = 0; c < g.cells; c++)
            want[g.key[c]] = (int32_t)count[c];
        const size_t budgets[] = {0, total * sizeof(int32_t) * (size_t)threads, (size_t)1 << 30};
        for (int b = 0; b < 3; b++) {
            size_t differ = counts_alone_differ(v, coord, m, threads, budgets[b], want, total);
            CHECK_MSG(differ == 0, "path %s n %zu bands %zu m %d threads %d budget %zu: %zu counts wrong",
                      pc__cpu_path_name(path), v->n, bands, m, threads, budgets[b], differ);
        }
        free(want);
    }
    /* The cells' sums of values (HCA-MS's cell means, HECA's prototypes) from the same cells. */
    CHECK(pc__hca_cell_sums_u8(&g, v, scratch, threads, got, NULL) == PC_OK &&
          memcmp(got, sum, g.cells * bands * sizeof *got) == 0);
    /* The same with the cells found again from the pixels (HECA's reference member), where they can be. */
    if (pc__hca_cells_found_again(v, m, (size_t)1 << 30)) {
        memset(got, 0xAA, g.cells * bands * sizeof *got);
        CHECK_MSG(pc__hca_cell_sums_u8(&g, v, NULL, threads, got, NULL) == PC_OK &&
                      memcmp(got, sum, g.cells * bands * sizeof *got) == 0,
                  "path %s n %zu bands %zu m %d threads %d: the cells' sums from the pixels differ",
                  pc__cpu_path_name(path), v->n, bands, m, threads);
    }
    free(count);
    free(sum);
    free(got);
    pc__hca_grid_free(&g);
}

/* pc_hca_plan_run_u8 on the path in force (AVX-512 with VBMI: the labels straight to bytes, each
 * pixel's cell found again) against ref, pc_hca's result on the baseline path: the same bytes as its
 * labels (255 for -1), sizes and centres. Bytes not written stay 0xAA and are caught. */
static void check_hca_bytes(const pc_points *v, const pc_hca_params *p, const pc_result *ref, const char *path)
{
    pc_hca_plan *plan = NULL;
    pc_result *r = NULL;
    uint8_t *bytes = malloc(v->n);
    memset(bytes, 0xAA, v->n);
    CHECK(pc_hca_plan_create(p, v->n, v->dim, PC_U8, &plan) == PC_OK);
    CHECK_MSG(plan && pc_hca_plan_run_u8(plan, v, bytes, &r) == PC_OK, "%s", pc_last_error());
    if (r) {
        size_t k = pc_result_cluster_count(r), wrong = 0;
        CHECK(pc_result_labels(r) == NULL && k == pc_result_cluster_count(ref));
        for (size_t i = 0; i < v->n; i++)
            wrong += bytes[i] != (pc_result_labels(ref)[i] < 0 ? 255 : pc_result_labels(ref)[i]);
        if (k == pc_result_cluster_count(ref)) {
            wrong += memcmp(pc_result_sizes(r), pc_result_sizes(ref), k * sizeof(int64_t)) != 0;
            wrong += memcmp(pc_result_centers(r), pc_result_centers(ref), k * v->dim * sizeof(float)) != 0;
        }
        CHECK_MSG(wrong == 0, "path %s n %zu bands %zu m %d threads %d: %zu bytes, sizes or centres differ from "
                  "the baseline path's labels", path, v->n, v->dim, p->m, p->threads, wrong);
        /* the labels went straight to bytes where the kernels apply (the grids here are dense) */
        int straight = 0;
        for (size_t i = 0; i < pc_result_stage_count(r); i++) {
            const char *name = NULL;
            pc_result_stage(r, i, &name, NULL);
            straight |= !strcmp(name, "label to bytes");
        }
        CHECK_MSG(straight == pc__hca_grid_vector_path(v, p->m), "path %s m %d: labels to bytes %s", path, p->m,
                  straight ? "directly where the kernels do not apply" : "through int32 labels");
    }
    pc_result_free(r);
    pc_hca_plan_free(plan);
    free(bytes);
}

/* pc_hca on this path against the baseline path's labels, its sizes and centres against its labels'
 * means; adds the labels of noise to *noise_labels. */
static void check_hca_labels(pc__cpu_path_id path, const pc_points *v, int m, int threads, int noise,
                             size_t *noise_labels)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = m;
    p.noise = noise; /* labels of -1: the label stage's lanes of no cluster */
    p.backend = threads > 1 && pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    p.threads = threads;
    pc_result *ref = NULL, *got = NULL;
    pc__cpu_path_force(PC__CPU_BASELINE);
    CHECK(pc_hca(v, &p, &ref) == PC_OK);
    pc__cpu_path_force(path);
    CHECK(pc_hca(v, &p, &got) == PC_OK);
    if (ref && got) {
        CHECK_MSG(memcmp(pc_result_labels(ref), pc_result_labels(got), v->n * sizeof(int32_t)) == 0,
                  "path %s n %zu bands %zu m %d threads %d noise %d: labels differ from the baseline path's",
                  pc__cpu_path_name(path), v->n, v->dim, m, threads, noise);
        check_hca_means(got, v->data, v->n, v->dim, pc__cpu_path_name(path));
        /* the cases the vector label stage must meet: a byte's worth of clusters, and (over all the
         * cases, test_hca_path) some labels of noise */
        CHECK(pc_result_cluster_count(got) < 255);
        for (size_t i = 0; i < v->n; i++)
            *noise_labels += pc_result_labels(got)[i] < 0;
        check_hca_bytes(v, &p, ref, pc__cpu_path_name(path));
    }
    pc_result_free(ref);
    pc_result_free(got);
}

/* The counting pass's copies by block (grid.c) where m is large: 3 bands at m = 127 (the kernels'
 * largest, whose block index is the largest the 16-bit multiply-adds form) and 4 bands at an odd m,
 * on images at least as large as the copies, against counts by the definition. */
static void test_blocked_counts(uint64_t seed)
{
    const int ms[] = {127, 33};
    for (int a = 0; a < 2; a++) {
        size_t bands = a == 0 ? 3 : 4, n = a == 0 ? 4300000 : 2800000;
        int m = ms[a];
        uint8_t *img = image(n * bands / 4 + 1, seed + (uint64_t)m);
        uint8_t coord[4 * 256] = {0};
        for (size_t j = 0; j < bands; j++)
            for (int x = 0; x < 256; x++) /* cells of uneven widths, the last one's value 255 */
                coord[(4 - bands + j) * 256 + x] = (uint8_t)((x * x / 256 + x) * m / 511);
        uint64_t total = cells_total(m, bands);
        int32_t *want = calloc(total, sizeof *want);
        for (size_t i = 0; i < n; i++) {
            uint64_t key = 0;
            for (size_t j = 0; j < bands; j++)
                key = key * (uint64_t)m + coord[(4 - bands + j) * 256 + img[i * bands + j]];
            want[key]++;
        }
        pc_points v = pc_points_u8(img, n, bands);
        for (int threads = 1; threads <= 2; threads++)
            CHECK_MSG(counts_alone_differ(&v, coord, m, threads, (size_t)1 << 30, want, total) == 0,
                      "blocked counts: %zu bands, m %d, %d threads: counts differ", bands, m, threads);
        free(want);
        free(img);
    }
}

/* The counting pass's cell sums (HCA-MS) over more pixels than its 32-bit lanes hold before they move
 * into the int64 sums (2^24 a thread): 2^25 + 12345 pixels of values 250-255 in 64 cells, 7 in 8 of
 * them (255, 255, 255) so that one cell's lanes pass 2^32 on one thread, on one thread and two,
 * against sums by the definition. A move left out, or one that keeps a lane's old total, shows. */
static void test_long_sums(uint64_t seed)
{
    size_t n = ((size_t)1 << 25) + 12345, bands = 3;
    int m = 4;
    uint8_t *img = malloc(n * bands);
    int32_t *scratch = malloc(n * sizeof *scratch);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        for (size_t j = 0; j < bands; j++)
            img[i * bands + j] = (uint8_t)(s % 8 ? 255 : 250 + (s >> (8 + 4 * j)) % 6);
    }
    double lo[3] = {250, 250, 250}, hi[3] = {255, 255, 255};
    uint64_t total = cells_total(m, bands);
    int64_t *want = calloc(total * bands, sizeof *want);
    for (size_t i = 0; i < n; i++) {
        uint64_t key = 0;
        for (size_t j = 0; j < bands; j++)
            key = key * (uint64_t)m + (uint64_t)pc__hca_cell_coordinate(img[i * bands + j], lo[j], hi[j], m);
        for (size_t j = 0; j < bands; j++)
            want[key * bands + j] += img[i * bands + j];
    }
    pc_points v = pc_points_u8(img, n, bands);
    for (int threads = 1; threads <= 2; threads++) {
        pc__hca_grid g;
        size_t wrong = 0;
        pc_status st = pc__hca_grid_build_box(&g, &v, m, lo, hi, (size_t)1 << 30, threads, scratch, 1);
        CHECK_MSG(st == PC_OK && g.cell_sums, "grid with sums, %d threads: %s", threads,
                  st == PC_OK ? "no sums" : pc_last_error());
        for (size_t c = 0; st == PC_OK && g.cell_sums && c < g.cells; c++)
            for (size_t j = 0; j < bands; j++)
                wrong += g.cell_sums[c * bands + j] != want[g.key[c] * bands + j];
        CHECK_MSG(wrong == 0, "sums of 2^25 + 12345 pixels, %d threads: %zu differ", threads, wrong);
        if (st == PC_OK)
            pc__hca_grid_free(&g);
    }
    free(want);
    free(scratch);
    free(img);
}

/* The grid's cells and counts, and the labels of the whole clustering, sequential and with 2 threads,
 * of 4-band pixels and of the same bytes read as n * 4 / 3 RGB pixels. */
static void test_hca_path(pc__cpu_path_id path, uint64_t seed)
{
    /* 140001: several blocks of 65536 a thread in the label stage (its sums flushed at each) */
    const size_t sizes[] = {5, 16, 4099, 40001, 140001};
    size_t noise_labels = 0;
    /* Dense grids of m^4 cells (m = 127, the AVX-512 kernel's largest, would take a 1 GiB array). */
    const int ms[] = {2, 7, 32};
    for (size_t a = 0; a < sizeof sizes / sizeof sizes[0]; a++) {
        size_t n = sizes[a];
        uint8_t *img = image(n, seed + n);
        const pc_points views[2] = {pc_points_u8(img, n, 4), pc_points_u8(img, n * 4 / 3, 3)};
        int32_t *scratch = malloc((n * 4 / 3 + 1) * sizeof *scratch);
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
            for (int threads = 1; threads <= 2; threads++)
                for (int k = 0; k < 2; k++) {
                    for (int offset = 0; offset <= 1; offset++)
                        check_grid_cells(path, &views[k], ms[b], threads, scratch, offset);
                    for (int noise = 0; noise <= 1; noise++)
                        check_hca_labels(path, &views[k], ms[b], threads, noise, &noise_labels);
                }
        free(scratch);
        free(img);
    }
    CHECK_MSG(noise_labels > 0, "path %s: no case had labels of noise", pc__cpu_path_name(path));
    /* RGB pixels over 101..255 at m = 77, whose cells no affine form gives (test_u8_affine): the
     * kernels look them up in the tables; and m = 127, the kernels' largest (3 bands: 127^3 cells). A
     * band of 2 values may come out with an affine form's shift of 0; 4 such bands with 2 values
     * each at m = 32 take a shift of 8 (test_u8_affine). */
    size_t n = 40001;
    uint8_t *img = image(n * 4 / 3 + 1, seed);
    for (size_t i = 0; i < n * 3; i++)
        img[i] = (uint8_t)(101 + img[i] % 155);
    img[0] = img[1] = img[2] = 101;
    img[3] = img[4] = img[5] = 255;
    int32_t *scratch = malloc(n * sizeof *scratch);
    pc_points v = pc_points_u8(img, n, 3);
    for (int threads = 1; threads <= 2; threads++)
        for (int m = 77; m <= 127; m += 50) {
            check_grid_cells(path, &v, m, threads, scratch, 0);
            check_hca_labels(path, &v, m, threads, 0, &noise_labels);
        }
    free(scratch);
    free(img);
    /* Bands of two values each at m = 32: cells narrower than a value, the affine form's shift of 8. */
    n = 4099;
    img = image(n, seed);
    for (size_t i = 0; i < n * 4; i++)
        img[i] = (uint8_t)(100 + (img[i] & 1));
    scratch = malloc(n * sizeof *scratch);
    v = pc_points_u8(img, n, 4);
    for (int threads = 1; threads <= 2; threads++) {
        check_grid_cells(path, &v, 32, threads, scratch, 0);
        check_hca_labels(path, &v, 32, threads, 0, &noise_labels);
    }
    free(scratch);
    free(img);
}

/* The blocks a climb's step walks on the CPU (pc__climb_walk) against the same blocks taken by number
 * (pc__climb_block_at and pc__climb_block_range, the GPU's, whose threads each find some blocks'
 * ranges), the empty ones left out: the ranges that differ (their references or x's frame), or are in
 * one and not the other. The GPU's lanes add in the CPU's order only if this is 0. */
static size_t walks_differ(const pc__hca_climb *c, const double *x)
{
    int dim = c->dim;
    pc__climb_walk walk;
    pc__climb_walk_begin(c, dim, x, &walk);
    pc__climb_blocks numbered;
    pc__climb_blocks_begin(c, dim, x, &numbered);
    int count = pc__climb_block_count(&numbered, dim);
    size_t differ = 0, lo, end, by_lo, by_end;
    float xr[PC__CLIMB_MAX_DIM] = {0}, by_xr[PC__CLIMB_MAX_DIM] = {0};
    for (int i = 0; i < count; i++) {
        int at[PC__CLIMB_MAX_DIM];
        pc__climb_block_at(&numbered, dim, i, at);
        pc__climb_block_range(c, dim, x, at, &by_lo, &by_end, by_xr);
        if (by_lo == by_end)
            continue;
        if (!pc__climb_walk_next(c, dim, &walk, &lo, &end, xr))
            return differ + 1;
        differ += lo != by_lo || end != by_end || memcmp(xr, by_xr, (size_t)dim * sizeof *xr) != 0;
    }
    return differ + (size_t)pc__climb_walk_next(c, dim, &walk, &lo, &end, xr);
}

/* HCA-MS's climbs (refine_climb.h) from starts (count x dim) over a grid's cell means, on this path
 * and with the lanes one after another (the baseline's way, and the GPU's order): the same end
 * positions bit for bit; and the blocks the GPU takes by number in the walk's order. search: without
 * the table of block starts (the binary search's way). */
static void compare_climbs(const pc__hca_grid *g, const double *mean, const double *starts, size_t count, int search,
                           pc__cpu_path_id path, const char *what)
{
    size_t dim = g->dim;
    int32_t *cluster = calloc(g->cells, sizeof *cluster);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = g->m;
    p.refine_borders = 1;
    pc__hca_reach r;
    CHECK(pc__hca_reach_setup(&r, g, mean, cluster, &p) == PC_OK);
    pc__climb_dimensions(&r.climb);
    CHECK(path != PC__CPU_AVX512 || r.climb.ref_dim); /* the AVX-512 lanes in force */
    if (search) {
        free((void *)r.climb.block_start);
        r.climb.block_start = NULL;
    }
    const float *by_dim = r.climb.ref_dim;
    size_t differ = 0, steps = 0, out_of_order = 0;
    for (size_t i = 0; i < count; i++) {
        double a[PC__HCA_MAX_DIM], b[PC__HCA_MAX_DIM];
        float next[PC__HCA_MAX_DIM];
        memcpy(a, starts + i * dim, dim * sizeof *a);
        memcpy(b, a, dim * sizeof *b);
        out_of_order += walks_differ(&r.climb, a);
        r.climb.ref_dim = by_dim;
        pc__climb_run(&r.climb, r.climb.dim, a);
        steps += (size_t)pc__climb_shift(&r.climb, r.climb.dim, b, next);
        r.climb.ref_dim = NULL;
        pc__climb_run(&r.climb, r.climb.dim, b);
        differ += memcmp(a, b, dim * sizeof *a) != 0;
        /* and the baseline's lanes, whose multiply-adds are libm's fmaf rather than an instruction */
        memcpy(b, starts + i * dim, dim * sizeof *b);
        pc__cpu_path_force(PC__CPU_BASELINE);
        pc__climb_run(&r.climb, r.climb.dim, b);
        pc__cpu_path_force(path);
        differ += memcmp(a, b, dim * sizeof *a) != 0;
    }
    r.climb.ref_dim = by_dim;
    CHECK(steps > 0);
    CHECK_MSG(out_of_order == 0, "%s: %zu walks whose ranges by number (the GPU's) differ from the CPU walk's", what,
              out_of_order);
    CHECK_MSG(differ == 0, "path %s, %s, search %d: %zu climbs end elsewhere than the lanes one by one's (this "
              "path's or the baseline's)",
              pc__cpu_path_name(path), what, search, differ);
    pc__hca_reach_free(&r);
    free(cluster);
}

/* The climbs over uint8 images of 3 and 4 bands and float points of 2 and 5 dimensions, with and
 * without the table of block starts; and pc_hca with border refinement the same labels and counts as
 * on the baseline path. */
static void test_climb_path(pc__cpu_path_id path, uint64_t seed)
{
    size_t n = 20011;
    uint8_t *img = image(n, seed ^ 0x5eed);
    int64_t moved = 0, listed = 0; /* listed: uint8 pixels moved in the listing's check */
    pc__cpu_path_force(path);
    for (size_t bands = 2; bands <= 5; bands++) {
        int integer = bands == 3 || bands == 4;
        size_t count = n * 4 / (bands + 1);
        float *f = malloc(count * bands * sizeof *f);
        for (size_t q = 0; q < count * bands; q++)
            f[q] = img[q % (n * 4)] / 7.0f;
        pc_points v = integer ? pc_points_u8(img, n * 4 / bands, bands) : pc_points_f32(f, count, bands);
        pc__hca_grid g;
        int32_t *scratch = malloc(v.n * sizeof *scratch);
        CHECK(pc__hca_grid_build(&g, &v, 12, (size_t)1 << 30, 1, scratch) == PC_OK);
        double *mean = calloc(g.cells * bands, sizeof *mean), *weight = calloc(g.cells, sizeof *weight);
        for (size_t i = 0; i < v.n; i++) {
            int32_t c = pc__hca_cell_of(&g, scratch, i);
            weight[c]++;
            for (size_t j = 0; j < bands; j++)
                mean[(size_t)c * bands + j] += integer ? img[i * bands + j] : f[i * bands + j];
        }
        for (size_t c = 0; c < g.cells; c++)
            for (size_t j = 0; j < bands; j++)
                mean[c * bands + j] /= weight[c];
        size_t starts = 0;
        double *start = malloc((v.n / 97 + 1) * bands * sizeof *start);
        for (size_t i = 0; i < v.n; i += 97, starts++)
            for (size_t j = 0; j < bands; j++)
                start[starts * bands + j] = (integer ? img[i * bands + j] : f[i * bands + j]) + 0.25 * (double)(i % 3);
        for (int search = 0; search <= 1; search++)
            compare_climbs(&g, mean, start, starts, search, path, integer ? "uint8" : "float32");
        pc__hca_grid_free(&g);
        free(scratch);
        free(mean);
        free(weight);
        free(start);
        /* The whole of HCA-MS against the baseline path. */
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = 12;
        p.refine_borders = 1;
        p.clusters = 5;
        pc_result *ref = NULL, *got = NULL;
        pc__cpu_path_force(PC__CPU_BASELINE);
        CHECK(pc_hca(&v, &p, &ref) == PC_OK);
        pc__cpu_path_force(path);
        CHECK(pc_hca(&v, &p, &got) == PC_OK);
        if (ref && got) {
            CHECK(memcmp(pc_result_labels(ref), pc_result_labels(got), v.n * sizeof(int32_t)) == 0);
            CHECK(pc_result_border_points(ref) == pc_result_border_points(got) &&
                  pc_result_changed_points(ref) == pc_result_changed_points(got));
            moved += pc_result_changed_points(got);
        }
        {
            /* uint8 pixels of every band count against the same pixels as uint16: packed uint8 rows list
             * their border points in the pass that sums the cells (cell_sums.c: 4-lane sums up to 4
             * bands, one add a band beyond), uint16 rows in a pass of their own (refine.c). A bandwidth
             * of 3 cells: many border points change cluster, so that one listed wrongly shows. */
            size_t rows = n * 4 / bands;
            uint16_t *wide = malloc(rows * bands * sizeof *wide);
            CHECK(wide != NULL);
            for (size_t q = 0; wide && q < rows * bands; q++)
                wide[q] = img[q];
            pc_points narrow = pc_points_u8(img, rows, bands), w = pc_points_u16(wide, rows, bands);
            p.refine_bandwidth = 60;
            for (int threads = 1; wide && threads <= 2; threads++) {
                p.threads = threads;
                pc_result *r8 = NULL, *r16 = NULL;
                CHECK(pc_hca(&narrow, &p, &r8) == PC_OK);
                CHECK(pc_hca(&w, &p, &r16) == PC_OK);
                if (r8 && r16) {
                    CHECK_MSG(memcmp(pc_result_labels(r16), pc_result_labels(r8), rows * sizeof(int32_t)) == 0,
                              "path %s, %zu bands, %d threads: HCA-MS's labels of uint16 pixels differ from uint8's",
                              pc__cpu_path_name(path), bands, threads);
                    CHECK(pc_result_border_points(r16) == pc_result_border_points(r8) &&
                          pc_result_changed_points(r16) == pc_result_changed_points(r8));
                    listed += pc_result_changed_points(r8);
                }
                if (bands == 3 && r16) {
                    /* 3 bands: each value's first pixel settled after the label pass, as where another
                     * thread was climbing it (hca.c: settle_deferred), with the clusters' sums moved. */
                    pc_result *late = NULL;
                    pc__hca_defer_first = 1;
                    CHECK(pc_hca(&narrow, &p, &late) == PC_OK);
                    pc__hca_defer_first = 0;
                    size_t k = pc_result_cluster_count(r16);
                    CHECK_MSG(late && pc_result_cluster_count(late) == k &&
                                  memcmp(pc_result_labels(r16), pc_result_labels(late), rows * sizeof(int32_t)) == 0 &&
                                  pc_result_changed_points(r16) == pc_result_changed_points(late) &&
                                  memcmp(pc_result_sizes(r16), pc_result_sizes(late), k * sizeof(int64_t)) == 0 &&
                                  memcmp(pc_result_centers(r16), pc_result_centers(late), k * bands * sizeof(float)) == 0,
                              "path %s, %d threads: HCA-MS with every value's first pixel settled late differs",
                              pc__cpu_path_name(path), threads);
                    pc_result_free(late);
                }
                pc_result_free(r8);
                pc_result_free(r16);
            }
            /* A zero bandwidth moves nothing (uint8 rows whose cells the counting pass summed take the
             * listing pass then, not the label pass's): HCA's labels, no point changed. */
            p.refine_bandwidth = 0;
            pc_result *still = NULL, *plain = NULL;
            CHECK(pc_hca(&narrow, &p, &still) == PC_OK);
            p.refine_borders = 0;
            CHECK(pc_hca(&narrow, &p, &plain) == PC_OK);
            p.refine_borders = 1;
            if (still && plain) {
                CHECK(memcmp(pc_result_labels(still), pc_result_labels(plain), rows * sizeof(int32_t)) == 0);
                CHECK(pc_result_changed_points(still) == 0 && pc_result_border_points(still) > 0);
            }
            pc_result_free(still);
            pc_result_free(plain);
            p.threads = 0;
            p.refine_bandwidth = -1;
            free(wide);
        }
        pc_result_free(ref);
        pc_result_free(got);
        free(f);
    }
    CHECK_MSG(moved > 0, "path %s: HCA-MS moved no point", pc__cpu_path_name(path));
    CHECK_MSG(listed > 0, "path %s: HCA-MS moved no uint8 pixel", pc__cpu_path_name(path));
    free(img);
}

/* Whether pc__hca_u8_affine finds an affine form for the byte tables of a box lo..hi of m cells (byte
 * 0 all 0, as for 3 bands; the others over the box); where it does, the form against every value's
 * coordinate by the definition, the differences added to *wrong. */
static int affine_of_box(double lo, double hi, int m, int *wrong)
{
    uint8_t coord[4 * 256];
    for (int j = 0; j < 4; j++)
        for (int v = 0; v < 256; v++)
            coord[j * 256 + v] = j == 0 ? 0 : (uint8_t)pc__hca_cell_coordinate(v, lo, hi, m);
    uint8_t off[4], shift[4];
    uint16_t mul[4];
    if (!pc__hca_u8_affine(coord, m, off, shift, mul))
        return 0;
    for (int j = 0; j < 4; j++)
        for (int v = 0; v < 256; v++) {
            uint32_t d = v > off[j] ? (uint32_t)(v - off[j]) : 0, c = (d << shift[j]) * mul[j] >> 16;
            *wrong += (c < (uint32_t)m - 1 ? c : (uint32_t)m - 1) != coord[j * 256 + v];
        }
    return 1;
}

/* pc__hca_u8_affine: where it finds a form, the form is right, on boxes named and on random ones (whole
 * and fractional ends, spans wider and narrower than m). It holds for the images' common boxes, cells
 * wider or narrower than a value; it is refused where the doubles' rounding puts a value on a boundary
 * into the cell below in a way no factor reproduces (box 101..255, m = 77: value 111 gives
 * 4.9999999999999991), whose pixels then go through the tables (test_hca_path). */
static void test_u8_affine(uint64_t seed)
{
    int wrong = 0, held = 0, whole = 0;
    CHECK(affine_of_box(0, 255, 32, &wrong) && affine_of_box(30, 225, 32, &wrong) &&
          affine_of_box(3, 250, 127, &wrong) && affine_of_box(0, 255, 2, &wrong));
    CHECK_MSG(affine_of_box(17, 30, 32, &wrong) && affine_of_box(100, 101, 32, &wrong),
              "cells narrower than a value: no affine form");
    CHECK(!affine_of_box(101, 255, 77, &wrong));
    uint64_t s = seed | 1;
    for (int t = 0; t < 400; t++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double lo = (double)(s % 255), hi = lo + 1 + (double)((s >> 8) % (uint64_t)(255 - lo));
        int m = 2 + (int)((s >> 16) % 126), fractional = t % 2;
        if (fractional)
            lo += 0.5 * (double)((s >> 24) % 2), hi -= 0.25 * (double)((s >> 25) % 2);
        int h = affine_of_box(lo, hi, m, &wrong);
        held += h;
        whole += h && !fractional;
    }
    CHECK_MSG(wrong == 0, "%d coordinates differ from the tables", wrong);
    CHECK_MSG(whole > 100, "an affine form for %d of 200 random whole boxes", whole);
    (void)held;
}

/* The integer types' tables by runs (pc__hca_coordinate_table: each coordinate's last value found by
 * bisection) against the rule a value at a time, on boxes inside, across and outside the 65,536 values,
 * empty and fractional ones, and m from 2 to 65,536. */
static void test_coordinate_tables(uint64_t seed)
{
    static uint16_t table[65536];
    const double boxes[][2] = {{0, 255}, {101, 255}, {0, 65535}, {3.25, 250.5}, {-1000, 70000}, {70000, 80000},
                               {-5, -1}, {7, 7}, {9, 2}, {100, 100.001}, {0.1, 0.3}};
    const int ms[] = {2, 3, 7, 32, 77, 255, 256, 1000, 65535, 65536};
    uint64_t s = seed | 1;
    size_t wrong = 0, tables = 0;
    for (size_t b = 0; b < sizeof boxes / sizeof *boxes + 200; b++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double lo, hi;
        int m;
        if (b < sizeof boxes / sizeof *boxes) {
            lo = boxes[b][0];
            hi = boxes[b][1];
            m = ms[b % (sizeof ms / sizeof *ms)];
        } else { /* random boxes over the uint16 range, whole or fractional */
            lo = (double)(s % 65536) - 1000 + (b % 2 ? 0.37 : 0);
            hi = lo + (double)((s >> 20) % 70000) / (b % 3 ? 1 : 97);
            m = 2 + (int)((s >> 40) % (b % 4 ? 126 : 65535));
        }
        for (size_t values = 256; values <= 65536; values *= 256) {
            pc__hca_coordinate_table(lo, hi, m, values, table);
            for (size_t v = 0; v < values; v++)
                wrong += table[v] != pc__hca_cell_coordinate((double)v, lo, hi, m);
            tables++;
        }
    }
    CHECK_MSG(wrong == 0, "%zu table entries of %zu tables differ from the rule", wrong, tables);
}

/* k-means' nearest centre of every point by its definition: f_j = |c_j|^2 (as pc__km_centres holds it)
 * then one fmaf of -2 x_d and c_jd a dimension in order; the lowest, ties to the lower index; and the
 * lowest over the other centres. */
static void nearest_by_definition(const float *x, size_t n, const pc__km_centres *c, int32_t *labels, float *first,
                                  float *second)
{
    for (size_t i = 0; i < n; i++) {
        float b = INFINITY, s = INFINITY;
        int32_t arg = 0;
        for (size_t j = 0; j < c->k; j++) {
            float f = c->cc[j];
            for (size_t d = 0; d < c->dim; d++)
                f = fmaf(-2.0f * x[i * c->dim + d], c->ct[d * c->kpad + j], f);
            if (f < b) {
                s = b;
                b = f;
                arg = (int32_t)j;
            } else if (f < s)
                s = f;
        }
        labels[i] = arg;
        first[i] = b;
        second[i] = s;
    }
}

/* n = 405: the last tile of 4 points is short. Centres: k of the points, the first two the same point
 * (equal values: the lower index wins), k = 33 and 100 leave padding in the last vector of centres. */
static void test_kmeans_path(pc__cpu_path_id path, uint64_t seed)
{
    const size_t n = 405, dims[] = {1, 3, 16, 17, 70}, ks[] = {1, 5, 33, 100};
    for (size_t a = 0; a < sizeof dims / sizeof dims[0]; a++)
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
            size_t dim = dims[a], k = ks[b];
            float *x = test_blobs(n, dim, 6, 1.0, 5, seed + dim * 7 + k, NULL), *centres = malloc(k * dim * 4);
            for (size_t j = 0; j < k; j++)
                memcpy(centres + j * dim, x + (j == 1 ? 0 : j * 3 % n) * dim, dim * sizeof *x);
            pc__km_centres c;
            CHECK(pc__km_centres_init(&c, k, dim) == PC_OK);
            pc__km_centres_set(&c, centres);
            int32_t *want = malloc(n * 4), *got = malloc(n * 4), *got2 = malloc(n * 4);
            float *f1 = malloc(n * 4), *s1 = malloc(n * 4), *f2 = malloc(n * 4), *s2 = malloc(n * 4);
            nearest_by_definition(x, n, &c, want, f1, s1);
            pc__cpu_path_force(path);
            pc__km_assign(x, 0, n, &c, got);
            pc__km_assign_two(x, n, &c, got2, f2, s2);
            size_t bad = 0, bad2 = 0;
            for (size_t i = 0; i < n; i++) {
                bad += got[i] != want[i];
                bad2 += got2[i] != want[i] || f2[i] != f1[i] || !(s2[i] == s1[i] || (isinf(s2[i]) && isinf(s1[i])));
            }
            CHECK_MSG(bad == 0 && bad2 == 0, "k-means %s, dim %zu, k %zu: %zu labels, %zu labels or values differ "
                      "from the definition", pc__cpu_path_name(path), dim, k, bad, bad2);
            /* The whole of pc_kmeans (OpenMP) against the baseline path's. */
            pc_kmeans_params p;
            pc_kmeans_params_init(&p);
            p.k = k;
            p.seed = seed;
            p.max_iter = 20;
            pc_points v = pc_points_f32(x, n, dim);
            pc_result *r[2] = {NULL, NULL};
            for (int q = 0; q < 2; q++) {
                pc__cpu_path_force(q == 0 ? PC__CPU_BASELINE : path);
                CHECK(pc_kmeans(&v, &p, &r[q]) == PC_OK);
            }
            if (r[0] && r[1])
                CHECK_MSG(memcmp(pc_result_labels(r[0]), pc_result_labels(r[1]), n * 4) == 0 &&
                              memcmp(pc_result_centers(r[0]), pc_result_centers(r[1]), k * dim * 4) == 0,
                          "pc_kmeans %s, dim %zu, k %zu: labels or centres differ from the baseline path's",
                          pc__cpu_path_name(path), dim, k);
            pc_result_free(r[0]);
            pc_result_free(r[1]);
            pc__km_centres_free(&c);
            free(x);
            free(centres);
            free(want);
            free(got);
            free(got2);
            free(f1);
            free(s1);
            free(f2);
            free(s2);
        }
}

/* HCA's host copies (src/hca/host_copies.c: streaming stores on x86, plain ones with
 * PC_HCA_STREAMING_STORES=0) against their definitions: every alignment of the destination and the
 * source, lengths around the vectors' and the slices' sizes, and 255 widened to -1. */
static void test_host_copies(uint64_t seed)
{
    const size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 100, 65535, 65536 + 37, 300001};
    size_t most = 300001 + 32;
    uint8_t *src = malloc(most), *dst = malloc(most);
    int32_t *labels = malloc(most * sizeof *labels);
    uint64_t r = seed | 1;
    for (size_t i = 0; i < most; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        src[i] = (uint8_t)((r >> 40) % 7 == 0 ? 255 : (r >> 33) % 200);
    }
    for (int plain = 0; plain <= 1; plain++) {
        if (plain)
            setenv("PC_HCA_STREAMING_STORES", "0", 1);
        size_t bad = 0;
        for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++)
            for (size_t a = 0; a < 17; a += (lengths[li] > 1000 ? 5 : 1)) {
                size_t n = lengths[li], b = (a * 7) % 17;
                memset(dst, 0xa5, most);
                pc__hca_copy_parallel(dst + a, src + b, n);
                bad += memcmp(dst + a, src + b, n) != 0 || (a > 0 && dst[a - 1] != 0xa5) || dst[a + n] != 0xa5;
                for (size_t i = 0; i < most; i++)
                    labels[i] = 77;
                pc__hca_widen_labels(src + b, n, labels + a % 4);
                for (size_t i = 0; i < n; i++)
                    bad += labels[a % 4 + i] != (src[b + i] == 255 ? -1 : (int32_t)src[b + i]);
                bad += labels[a % 4 + n] != 77 || (a % 4 > 0 && labels[a % 4 - 1] != 77);
            }
        CHECK_MSG(bad == 0, "host copies (%s stores): %zu wrong", plain ? "plain" : "streaming", bad);
    }
    unsetenv("PC_HCA_STREAMING_STORES");
    free(src);
    free(dst);
    free(labels);
}

int main(void)
{
    uint64_t seed = test_seed("cpu_paths");
    pc__cpu_path_id best = pc__cpu_path_best();
    printf("cpu_paths: best path here %s, AVX-512 VBMI %s\n", pc__cpu_path_name(best),
           pc__cpu_has_vbmi() ? "yes" : "no");
    for (int path = PC__CPU_BASELINE; path <= PC__CPU_AVX512; path++) {
        pc__cpu_path_id got = pc__cpu_path_force((pc__cpu_path_id)path);
        CHECK(got == ((pc__cpu_path_id)path <= best ? (pc__cpu_path_id)path : best));
        CHECK(strcmp(pc_cpu_path(), pc__cpu_path_name(got)) == 0);
        if (got != (pc__cpu_path_id)path) {
            printf("cpu_paths: %s not run (this processor or build lacks it)\n",
                   pc__cpu_path_name((pc__cpu_path_id)path));
            continue;
        }
        printf("cpu_paths: %s\n", pc__cpu_path_name(got));
        test_meanshift_path(got, seed);
        test_hca_path(got, seed);
        test_climb_path(got, seed);
        test_kmeans_path(got, seed);
    }
    test_u8_affine(seed);
    test_coordinate_tables(seed);
    if (pc__cpu_path_force(PC__CPU_AVX512) == PC__CPU_AVX512) {
        test_meanshift_expanded(seed);
        if (pc__cpu_has_vbmi()) {
            test_blocked_counts(seed);
            test_long_sums(seed);
        }
    } else
        printf("cpu_paths: the expanded form not run (no AVX-512 path here)\n");
    test_host_copies(seed);
    return check_report("cpu_paths");
}
