/* Deterministic synthetic data sets: the seeds' workloads and shapes to test clustering on. The same
 * parameters give the same points on every machine. */
#include "internal.h"
#include "rng.h"

#include <math.h>
#include <string.h>

static const char *const dataset_names[] = {"blobs", "rings", "agnolucci", "bindi", "grid"};
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
                    "unknown data set '%s' (expected blobs, rings, agnolucci, bindi or grid)",
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

pc_status pc_generate(const pc_generate_params *p, float *points, int32_t *labels)
{
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
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown data set %d", (int)p->dataset);
}
