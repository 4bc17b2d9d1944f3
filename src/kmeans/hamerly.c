/* Lloyd's iterations with Hamerly's bounds on the CPU (G. Hamerly, "Making k-means even faster", SDM
 * 2010): each point keeps an upper bound u on its distance to its own centre and a lower bound l on its
 * distance to every other centre; when the centres move by delta, u grows by its centre's delta and l
 * shrinks by the largest other one. A point whose bounds still separate its centre from the others
 * keeps its label without looking at the centres; the others are scanned by Lloyd's own kernel.
 *
 * Why the labels are Lloyd's, bit for bit: Lloyd's label is the argmin (ties to the lower index) of the
 * float32 value f_j = fl(|c_j|^2 - 2 x.c_j) (assign.c), not of the exact distance. The bounds are on
 * exact distances, and a point keeps its label only when they prove a gap larger than the rounding error
 * of f: with g_j = |c_j|^2 - 2 x.c_j exactly, |f_j - g_j| <= eps W where eps = 1.01 (dim + 2) 2^-24 and
 * W = (|x| + max_j |c_j|)^2 (the recursive sum of dim + 1 products, and |c|^2 from double rounded to
 * float; Cauchy-Schwarz for x.c). If l^2 - u^2 > 2 eps W then for every other centre j,
 * g_j - g_a = d_j^2 - d_a^2 >= l^2 - u^2 > 2 eps W, so f_j > f_a: Lloyd's kernel would choose a too.
 * Every double computation of a bound is rounded towards safety (the factors 1 +- 2^-50 below), so
 * that a point is kept only where that inequality holds in exact arithmetic. Points scanned get their
 * label from pc__km_assign_two, pc__km_assign's arithmetic and ties.
 *
 * The sums are the CPU engine's fixed-point integers (internal_km.h): kept up to date by adding a
 * point that changed cluster to its new cluster and taking it from its old one, which gives the same
 * integers as summing every point again; the empty-cluster rule works on a copy. */
#include "internal_km.h"
#include "../core/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024

#define UP (1.0 + 0x1p-50)
#define DOWN (1.0 - 0x1p-50)

typedef struct {
    const float *x;
    size_t n, dim, k;
    int threads;
    int shift;
    int started;
    double *distances;
    int32_t *labels;
    double *u, *l;      /* n: bounds on |x - c_label| and on min over the other centres */
    double *xnorm;      /* n: |x|, rounded up */
    float *prev;        /* k x dim: the centres of the last pass */
    double *delta, *half; /* k: how far each centre moved; half the distance to its nearest other centre */
    int64_t *fixed, *counts; /* the sums and counts of the clusters of labels[] */
    int64_t *out;       /* k x dim: fixed after the empty-cluster rule */
    pc__km_centres c;
} ham_engine;

/* An upper bound on the distance between two float vectors, computed in double: each difference and
 * square has relative error <= 2^-53, the sum of dim terms <= dim 2^-53, the root 2^-53. */
static double dist_up(const float *a, const float *b, size_t dim)
{
    double s = 0;
    for (size_t d = 0; d < dim; d++) {
        double t = (double)a[d] - b[d];
        s += t * t;
    }
    return sqrt(s) * (1.0 + (double)(dim + 8) * 0x1p-52);
}

static double dist_down(const float *a, const float *b, size_t dim)
{
    double s = 0;
    for (size_t d = 0; d < dim; d++) {
        double t = (double)a[d] - b[d];
        s += t * t;
    }
    return sqrt(s) * (1.0 - (double)(dim + 8) * 0x1p-52);
}

/* The scalars of a sweep: the centres' largest move, its centre, the largest other, the largest |c|
 * (rounded up), and eps2 (the margin's factor, below). */
typedef struct {
    double dmax, dsecond, cmax, eps2;
    size_t jmax;
} sweep_scalars;

typedef double vdouble __attribute__((vector_size(PC__LANES * sizeof(double))));
typedef int64_t vlong __attribute__((vector_size(PC__LANES * sizeof(double))));

/* mask ? yes : no, lane by lane (a macro: a function returning a 64-byte vector changes the ABI where
 * AVX-512 is off). */
#define PICK(mask, yes, no) ((vdouble)(((vlong)(yes) & (mask)) | ((vlong)(no) & ~(mask))))

/* Points b .. end - 1 of a pass after the first: u and l moved by the centres' moves (u up by its
 * centre's, l down by the largest other), and the points whose bounds no longer prove their label
 * listed in tight[] (returns how many). PC__LANES points at a time in vectors: the same operations in
 * the same order as one point at a time (no contraction here: ISO C), so the same bounds; the gathers
 * of delta and half by label stay scalar loads. A third of a pass's time was this loop, one point at a
 * time (perf, 1M x 16, k = 100, on 2 cores). */
PC__MULTIVERSION
static size_t sweep(const int32_t *labels, double *u, double *l, const double *xnorm, const double *delta,
                    const double *half, const sweep_scalars *k, size_t b, size_t end, size_t *tight)
{
    size_t nt = 0, i = b;
    for (; i + PC__LANES <= end; i += PC__LANES) {
        vdouble uu, ll, xn, dl, hf, sub;
        memcpy(&uu, u + i, sizeof uu);
        memcpy(&ll, l + i, sizeof ll);
        memcpy(&xn, xnorm + i, sizeof xn);
        for (int q = 0; q < PC__LANES; q++) {
            int32_t a = labels[i + (size_t)q];
            dl[q] = delta[a];
            hf[q] = half[a];
            sub[q] = (size_t)a == k->jmax ? k->dsecond : k->dmax;
        }
        vdouble ui = (uu + dl) * UP, li = ll - sub, zero = {0};
        li = PICK(li > zero, li * DOWN, zero);
        vdouble xc = xn + k->cmax, w = xc * xc * UP, t = k->eps2 * w + 0x1p-100;
        vdouble h = (2.0 * hf - ui) * DOWN, lb = PICK(h > li, h, li);
        memcpy(u + i, &ui, sizeof ui);
        memcpy(l + i, &li, sizeof li);
        vlong keep = (lb > zero) & (lb * lb * DOWN - ui * ui * UP > t * UP);
        for (int q = 0; q < PC__LANES; q++)
            if (!keep[q])
                tight[nt++] = i + (size_t)q;
    }
    for (; i < end; i++) {
        int32_t a = labels[i];
        double ui = (u[i] + delta[a]) * UP;
        double li = l[i] - ((size_t)a == k->jmax ? k->dsecond : k->dmax);
        li = li > 0 ? li * DOWN : 0;
        double w = (xnorm[i] + k->cmax) * (xnorm[i] + k->cmax) * UP, t = k->eps2 * w + 0x1p-100;
        double h = (2.0 * half[a] - ui) * DOWN, lb = h > li ? h : li;
        u[i] = ui;
        l[i] = li;
        if (!(lb > 0 && lb * lb * DOWN - ui * ui * UP > t * UP))
            tight[nt++] = i;
    }
    return nt;
}

/* One pass: labels, bounds and sums for `centres`; *changed labels moved, *evals distances computed. */
static pc_status ham_pass(ham_engine *e, const float *centres, size_t *changed, double *evals)
{
    size_t n = e->n, dim = e->dim, k = e->k;
    pc__km_centres_set(&e->c, centres);
    int first = !e->started;
    double cmax = 0, dmax = 0, dsecond = 0, centre_evals = 0;
    size_t jmax = 0;
    for (size_t j = 0; j < k; j++) {
        double norm = 0;
        for (size_t d = 0; d < dim; d++)
            norm += (double)centres[j * dim + d] * centres[j * dim + d];
        norm = sqrt(norm) * (1.0 + (double)(dim + 8) * 0x1p-52);
        cmax = norm > cmax ? norm : cmax;
        e->delta[j] = first ? 0 : dist_up(centres + j * dim, e->prev + j * dim, dim);
        if (e->delta[j] > dmax) {
            dsecond = dmax;
            dmax = e->delta[j];
            jmax = j;
        } else if (e->delta[j] > dsecond)
            dsecond = e->delta[j];
    }
    /* half[j]: half the distance from centre j to its nearest other centre, rounded down. Any other
     * centre is then at least 2 half[a] - u from the point (triangle inequality). */
    for (size_t j = 0; j < k; j++)
        e->half[j] = INFINITY;
    if (k <= 4096) {
        for (size_t j = 0; j < k; j++)
            for (size_t q = j + 1; q < k; q++) {
                double h = 0.5 * dist_down(centres + j * dim, centres + q * dim, dim);
                e->half[j] = h < e->half[j] ? h : e->half[j];
                e->half[q] = h < e->half[q] ? h : e->half[q];
            }
        centre_evals = (double)k * (double)(k - 1) / 2;
    } else
        for (size_t j = 0; j < k; j++)
            e->half[j] = 0; /* not worth k^2: l alone */
    if (!first)
        centre_evals += (double)k;
    memcpy(e->prev, centres, k * dim * sizeof *centres);
    const double eps2 = 2.0 * 1.01 * (double)(dim + 2) * 0x1p-24 * UP;
    const sweep_scalars scalars = {dmax, dsecond, cmax, eps2, jmax};
    float scale = ldexpf(1.0f, e->shift);
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
    size_t diff = 0;
    double scanned = 0, tightened = 0;
    int failed = 0;
    const float *x = e->x;
    int32_t *labels = e->labels;
    double *u = e->u, *l = e->l, *xnorm = e->xnorm;
    const double *half = e->half, *delta = e->delta;
    int64_t *fixed = e->fixed, *counts = e->counts;
    int threads = e->threads;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(+ : diff, scanned, tightened) reduction(| : failed)
    {
        int64_t *s = calloc(k * (dim + 1), sizeof *s), *cnt = s ? s + k * dim : NULL;
        float *rows = malloc(CHUNK * dim * sizeof *rows), *f1 = malloc(CHUNK * 2 * sizeof *f1), *f2 = f1 ? f1 + CHUNK : NULL;
        size_t *which = malloc(2 * CHUNK * sizeof *which), *tight = which ? which + CHUNK : NULL;
        int32_t *lab = malloc(CHUNK * sizeof *lab);
        int ok = s && rows && f1 && which && lab;
        failed |= !ok;
#pragma omp for schedule(dynamic, 1)
        for (long ch = 0; ch < chunks; ch++) {
            if (!ok)
                continue;
            size_t b = (size_t)ch * CHUNK, end = b + CHUNK < n ? b + CHUNK : n, m = 0, nt = 0;
            /* Three sweeps: the bounds alone (no point read), then the points whose bound is tightened,
             * then those scanned; the last two read scattered rows, fetched ahead of their use (a
             * row's miss, not the arithmetic, was most of a tightening's cost). */
            if (first)
                for (size_t i = b; i < end; i++)
                    which[m++] = i;
            else
                nt = sweep(labels, u, l, xnorm, delta, half, &scalars, b, end, tight);
            for (size_t q = 0; q < nt; q++) {
                if (q + 8 < nt)
                    __builtin_prefetch(x + tight[q + 8] * dim);
                size_t i = tight[q];
                int32_t a = labels[i];
                double ui = pc__km_dist_up(x + i * dim, centres + (size_t)a * dim, dim); /* tighten u, try again */
                double w = (xnorm[i] + cmax) * (xnorm[i] + cmax) * UP, t = eps2 * w + 0x1p-100;
                double h = (2.0 * half[a] - ui) * DOWN, li = l[i], lb = h > li ? h : li;
                u[i] = ui;
                if (!(lb > 0 && lb * lb * DOWN - ui * ui * UP > t * UP))
                    which[m++] = i;
            }
            tightened += (double)nt;
            for (size_t q = 0; q < m; q++) {
                if (q + 8 < m)
                    __builtin_prefetch(x + which[q + 8] * dim);
                memcpy(rows + q * dim, x + which[q] * dim, dim * sizeof *rows);
            }
            if (m == 0)
                continue;
            scanned += (double)m;
            pc__km_assign_two(rows, m, &e->c, lab, f1, f2);
            for (size_t q = 0; q < m; q++) {
                size_t i = which[q];
                const float *xi = x + i * dim;
                int32_t a = lab[q], old = labels[i];
                /* the bounds from f: d_a^2 <= f_a + eps W + |x|^2 and min d_j^2 >= f_2 - eps W + |x|^2 */
                double w = (xnorm[i] + cmax) * (xnorm[i] + cmax) * UP, xx = xnorm[i] * xnorm[i] * UP;
                double xlo = xnorm[i] * (1.0 - (double)(dim + 8) * 0x1p-52);
                double lo2 = ((double)f2[q] + xlo * xlo * DOWN) - 0.5 * eps2 * w * UP;
                lo2 = lo2 - fabs(lo2) * 0x1p-50 - w * 0x1p-50;
                double up2 = ((double)f1[q] + xx) + 0.5 * eps2 * w * UP;
                up2 = up2 + fabs(up2) * 0x1p-50 + w * 0x1p-50;
                double ud = pc__km_dist_up(rows + q * dim, centres + (size_t)a * dim, dim);
                double uf = up2 > 0 ? sqrt(up2) * UP : 0;
                u[i] = ud < uf ? ud : uf;
                l[i] = isinf(f2[q]) ? INFINITY : lo2 > 0 ? sqrt(lo2) * DOWN : 0;
                if (a == old)
                    continue;
                diff++;
                labels[i] = a;
                int64_t *t = s + (size_t)a * dim;
                for (size_t d = 0; d < dim; d++)
                    t[d] += pc__km_fixed(xi[d], scale);
                cnt[a]++;
                if (old >= 0) {
                    t = s + (size_t)old * dim;
                    for (size_t d = 0; d < dim; d++)
                        t[d] -= pc__km_fixed(xi[d], scale);
                    cnt[old]--;
                }
            }
        }
        if (s) {
#pragma omp critical(pc__km_hamerly_sums)
            for (size_t q = 0; q < k * (dim + 1); q++) { /* integers: any order, the same totals */
                if (q < k * dim)
                    fixed[q] += s[q];
                else
                    counts[q - k * dim] += s[q];
            }
        }
        free(s);
        free(rows);
        free(f1);
        free(which);
        free(lab);
    }
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "k-means: cannot allocate per-thread buffers");
    e->started = 1;
    *changed = diff;
    *evals += scanned * (double)k + scanned + tightened + centre_evals;
    return PC_OK;
}

static pc_status ham_step(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed)
{
    ham_engine *e = ctx;
    pc_status st = ham_pass(e, centres, changed, e->distances);
    if (st != PC_OK)
        return st;
    /* The rule changes the sums the centres come from, not the labels: on a copy. */
    memcpy(e->out, e->fixed, e->k * e->dim * sizeof *e->out);
    memcpy(counts, e->counts, e->k * sizeof *counts);
    if ((st = pc__km_empty_rule_cpu(e->x, e->n, e->dim, e->k, centres, e->labels, ldexpf(1.0f, e->shift), e->out,
                                    counts)) != PC_OK)
        return st;
    pc__km_fixed_to_double(e->out, e->k * e->dim, e->shift, sums);
    return PC_OK;
}

static pc_status ham_labels(void *ctx, int32_t *labels)
{
    ham_engine *e = ctx;
    if (labels != e->labels)
        memcpy(labels, e->labels, e->n * sizeof *labels);
    return PC_OK;
}

static pc_status ham_finish(void *ctx, const float *centres, int relabel, double *inertia)
{
    ham_engine *e = ctx;
    size_t changed;
    pc_status st = relabel ? ham_pass(e, centres, &changed, e->distances) : PC_OK;
    if (st == PC_OK)
        *inertia = pc__km_inertia_cpu(e->x, e->n, e->dim, centres, e->labels, e->threads);
    return st;
}

pc_status pc__km_hamerly_cpu(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o, float *centres,
                             int32_t *labels, int *iterations, double *inertia)
{
    ham_engine e;
    memset(&e, 0, sizeof e);
    e.x = x;
    e.n = n;
    e.dim = dim;
    e.k = k;
    e.threads = o->threads;
    e.shift = o->fixed_shift;
    e.distances = &o->distances;
    e.labels = labels;
    e.u = pc__alloc(n, 3 * sizeof(double), "k-means bounds");
    e.l = e.u ? e.u + n : NULL;
    e.xnorm = e.u ? e.u + 2 * n : NULL;
    e.prev = pc__alloc(k, dim * sizeof(float), "centres");
    e.delta = pc__alloc(k, 2 * sizeof(double), "centre moves");
    e.half = e.delta ? e.delta + k : NULL;
    e.fixed = pc__calloc(k * (dim + 1), sizeof(int64_t), "centre sums");
    e.counts = e.fixed ? e.fixed + k * dim : NULL;
    e.out = pc__alloc(k, dim * sizeof(int64_t), "centre sums");
    pc_status st = PC_OUT_OF_MEMORY;
    if (e.u && e.prev && e.delta && e.fixed && e.out && pc__km_centres_init(&e.c, k, dim) == PC_OK) {
        pc__km_huge_pages(e.u, n * 3 * sizeof(double));
        long chunks = (long)((n + CHUNK - 1) / CHUNK);
        double *xnorm = e.xnorm;
        (void)chunks;
#pragma omp parallel for num_threads(e.threads) if (e.threads > 1) schedule(static)
        for (long ch = 0; ch < chunks; ch++)
            for (size_t i = (size_t)ch * CHUNK; i < n && i < ((size_t)ch + 1) * CHUNK; i++) {
                labels[i] = -1;
                double s = 0;
                for (size_t d = 0; d < dim; d++)
                    s += (double)x[i * dim + d] * x[i * dim + d];
                xnorm[i] = sqrt(s) * (1.0 + (double)(dim + 8) * 0x1p-52);
            }
        pc__km_engine engine = {&e, ham_step, ham_labels, ham_finish, 1};
        st = pc__km_lloyd(&engine, x, n, dim, k, o, centres, iterations, inertia);
    }
    pc__km_centres_free(&e.c);
    free(e.u);
    free(e.prev);
    free(e.delta);
    free(e.fixed);
    free(e.out);
    return st;
}
