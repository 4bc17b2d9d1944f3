/* Deterministic synthetic data sets: the seeds' workloads and shapes to test clustering on. The same
 * parameters give the same points on every machine. */
#include "internal.h"
#include "rng.h"

#include <math.h>
#include <string.h>

static const char *const dataset_names[] = {"blobs", "rings", "agnolucci", "bindi", "grid", "hca8", "hca5"};
#define DATASET_COUNT (sizeof dataset_names / sizeof dataset_names[0])

const char *pc_dataset_name(pc_dataset d)
{
    return (size_t)d < DATASET_COUNT ? dataset_names[d] : "unknown";
}

pc_status pc_dataset_parse(const char *name, pc_dataset *out)
{
    for (size_t i = 0; name && i < DATASET_COUNT; i++) {
        if (strcmp(name, dataset_names[i]) == 0) {
            *out = (pc_dataset)i;
            return PC_OK;
        }
    }
    return pc__fail(PC_INVALID_ARGUMENT,
                    "unknown data set '%s' (expected blobs, rings, agnolucci, bindi, grid, hca8 or hca5)",
                    name ? name : "(null)");
}

void pc_generate_params_init(pc_generate_params *p)
{
    memset(p, 0, sizeof *p);
    p->dataset = PC_DATASET_BLOBS;
    p->n = 1000;
    p->dim = 2;
    p->clusters = 3;
    p->spread = 1.0;
    p->box = 10.0;
    p->seed = 42;
}

/* Point i belongs to cluster i mod k: every cluster gets its share, interleaved through the file. */
static void blobs(const pc_generate_params *p, pc__rng *rng, float *pts, int32_t *labels)
{
    double centers[64 * 64];
    size_t k = p->clusters, dim = p->dim;
    for (size_t c = 0; c < k; c++)
        for (size_t j = 0; j < dim; j++)
            centers[c * dim + j] = p->box * (2.0 * pc__rng_uniform(rng) - 1.0);
    for (size_t i = 0; i < p->n; i++) {
        size_t c = i % k;
        for (size_t j = 0; j < dim; j++)
            pts[i * dim + j] = (float)(centers[c * dim + j] + p->spread * pc__rng_normal(rng));
        if (labels)
            labels[i] = (int32_t)c;
    }
}

/* Ring c has radius (c + 1) * box / k in the first two dimensions, radial noise `spread`. */
static void rings(const pc_generate_params *p, pc__rng *rng, float *pts, int32_t *labels)
{
    size_t k = p->clusters, dim = p->dim;
    for (size_t i = 0; i < p->n; i++) {
        size_t c = i % k;
        double radius = (double)(c + 1) * p->box / (double)k + p->spread * pc__rng_normal(rng);
        double angle = 6.283185307179586 * pc__rng_uniform(rng);
        pts[i * dim] = (float)(radius * cos(angle));
        pts[i * dim + 1] = (float)(radius * sin(angle));
        for (size_t j = 2; j < dim; j++)
            pts[i * dim + j] = (float)(p->spread * pc__rng_normal(rng));
        if (labels)
            labels[i] = (int32_t)c;
    }
}

/* Cluster c sits on a lattice site `box` apart from its neighbours, the sites numbered with the last
 * dimension fastest: many small, tight clusters for the neighbour-grid benchmark. */
static void lattice(const pc_generate_params *p, pc__rng *rng, float *pts, int32_t *labels)
{
    size_t k = p->clusters, dim = p->dim;
    size_t side = (size_t)ceil(pow((double)k, 1.0 / (double)dim) - 1e-9);
    for (size_t i = 0; i < p->n; i++) {
        size_t c = i % k, rest = c;
        for (size_t j = dim; j-- > 0;) {
            double site = (double)(rest % side) * p->box;
            rest /= side;
            pts[i * dim + j] = (float)(site + p->spread * pc__rng_normal(rng));
        }
        if (labels)
            labels[i] = (int32_t)c;
    }
}

/* A class of the HCA paper's model sets: a Gaussian (sx, sy, rotated by angle degrees) or, with
 * radius > 0, a ring of that radius with Gaussian radial width sx. */
typedef struct {
    double weight, cx, cy, sx, sy, angle, radius;
} model_class;

/* The paper (seed 003, section 4) describes its model sets only in words; these layouts follow the
 * words (see docs/hca-model-data.md): 8 classes in three isolated groups, one of three classes
 * overlapping at 4 sigma; and 5 classes of different shape, size and density, two of them rings. */
static const model_class hca8_classes[] = {
    {2500, 70.0, 76.93, 3, 3, 0, 0}, {3000, 64.0, 66.54, 3, 3, 0, 0}, {2000, 76.0, 66.54, 3, 3, 0, 0},
    {3500, 15.0, 65.0, 2.5, 2.5, 0, 0}, {1500, 35.0, 65.0, 2.5, 2.5, 0, 0}, {2500, 25.0, 82.0, 2.5, 2.5, 0, 0},
    {2000, 40.0, 20.0, 3, 3, 0, 0}, {3000, 64.0, 20.0, 3, 3, 0, 0},
};
static const model_class hca5_classes[] = {
    {3000, 30.0, 50.0, 1.5, 0, 0, 20}, {3000, 30.0, 50.0, 3, 3, 0, 0}, {1500, 75.0, 70.0, 1.0, 0, 0, 10},
    {3000, 75.0, 30.0, 8, 1.5, 30, 0}, {1500, 78.0, 50.0, 5, 5, 0, 0},
};

/* Class sizes in proportion to the weights, the remainder to the first classes; points grouped by
 * class. */
static void model_set(const model_class *cls, size_t count, const pc_generate_params *p, pc__rng *rng, float *pts,
                      int32_t *labels)
{
    double total = 0;
    for (size_t c = 0; c < count; c++)
        total += cls[c].weight;
    size_t start = 0;
    for (size_t c = 0; c < count; c++) {
        size_t share = (size_t)floor((double)p->n * cls[c].weight / total);
        if (c == count - 1)
            share = p->n - start;
        const model_class *m = cls + c;
        double ca = cos(m->angle * 3.141592653589793 / 180), sa = sin(m->angle * 3.141592653589793 / 180);
        for (size_t i = start; i < start + share; i++) {
            double x, y;
            if (m->radius > 0) {
                double r = m->radius + m->sx * pc__rng_normal(rng), t = 6.283185307179586 * pc__rng_uniform(rng);
                x = m->cx + r * cos(t);
                y = m->cy + r * sin(t);
            } else {
                double u = m->sx * pc__rng_normal(rng), v = m->sy * pc__rng_normal(rng);
                x = m->cx + ca * u - sa * v;
                y = m->cy + sa * u + ca * v;
            }
            pts[2 * i] = (float)x;
            pts[2 * i + 1] = (float)y;
            if (labels)
                labels[i] = (int32_t)c;
        }
        start += share;
    }
}

pc_status pc_generate(const pc_generate_params *p, float *points, int32_t *labels)
{
    pc__clear_error();
    if (!p || !points)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters or output array are NULL");
    if (p->n == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "n must be >= 1");
    if (p->dim == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "dim must be >= 1");
    if (p->clusters == 0 || p->clusters > p->n)
        return pc__fail(PC_INVALID_ARGUMENT, "clusters must be between 1 and n (%zu), got %zu", p->n,
                        p->clusters);
    if (!(p->spread >= 0) || !isfinite(p->spread) || !(p->box >= 0) || !isfinite(p->box))
        return pc__fail(PC_INVALID_ARGUMENT, "spread and box must be finite and >= 0");
    pc__rng rng;
    pc__rng_seed(&rng, p->seed);
    switch (p->dataset) {
    case PC_DATASET_AGNOLUCCI:
    case PC_DATASET_BINDI:
    case PC_DATASET_BLOBS:
        if (p->dataset == PC_DATASET_AGNOLUCCI && p->dim != 3)
            return pc__fail(PC_INVALID_ARGUMENT, "the agnolucci data set is 3-dimensional, got dim %zu", p->dim);
        if (p->dataset == PC_DATASET_BINDI && p->dim != 2 && p->dim != 3)
            return pc__fail(PC_INVALID_ARGUMENT, "the bindi data set has dim 2 or 3, got %zu", p->dim);
        if (p->clusters * p->dim > 64 * 64)
            return pc__fail(PC_INVALID_ARGUMENT, "blobs: clusters x dim must be <= 4096");
        blobs(p, &rng, points, labels);
        return PC_OK;
    case PC_DATASET_RINGS:
        if (p->dim < 2)
            return pc__fail(PC_INVALID_ARGUMENT, "rings need dim >= 2, got %zu", p->dim);
        rings(p, &rng, points, labels);
        return PC_OK;
    case PC_DATASET_GRID:
        lattice(p, &rng, points, labels);
        return PC_OK;
    case PC_DATASET_HCA8:
    case PC_DATASET_HCA5:
        if (p->dim != 2)
            return pc__fail(PC_INVALID_ARGUMENT, "the HCA model sets are 2-dimensional, got dim %zu", p->dim);
        if (p->dataset == PC_DATASET_HCA8)
            model_set(hca8_classes, 8, p, &rng, points, labels);
        else
            model_set(hca5_classes, 5, p, &rng, points, labels);
        return PC_OK;
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown data set %d", (int)p->dataset);
}
