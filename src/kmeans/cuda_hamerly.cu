// Hamerly's bounds on the GPU (the CPU's are hamerly.c, whose comment gives the algorithm and why a kept
// label is Lloyd's): each point keeps an upper bound u on its distance to its own centre and a lower
// bound l on its distance to every other; a pass moves them by the centres' moves and rescans only the
// points they no longer settle. Lloyd's label on the GPU is the direct kernels' argmin of the float32
// f_j = fl(|c_j|^2 - 2 x.c_j) (cuda_direct.cuh), whose error against g_j = |c_j|^2 - 2 x.c_j exactly
// is at most e = 1.02 (2 dim + 2) 2^-24 (C^2 + 2 X C) (C = max |c|, X = |x|: the fmaf chains of |c|^2
// and of -2 x_j c_j; radius_kernel in cuda.cu derives it), so a point keeps its label only when
// lb^2 - u^2 > 2 e, lb = max(l, 2 half_a - u): then every other f_j > f_a. The bounds are floats
// computed with directed rounding (__fadd_ru, __fsub_rd, ...), so each inequality holds exactly.
// Rescanned points get their label from the direct kernels' arithmetic (the same staged centres, the
// same fmaf order, ties to the lower index) and their bounds from the two lowest f and the exact
// distance to their centre. The fixed-point sums follow the points whose label moved (added to their
// new cluster, taken from the old): integers, the same totals as Lloyd's sums over every point; the
// first pass, where every point moves, leaves them to Lloyd's own sum kernels (cuda.cu) unless the
// fused kernel below summed them itself. Two ways, by size: one fused kernel a pass for few centres,
// else a sweep that lists the unsettled points and a scan over candidate lists.
#include "cuda_direct.cuh"
#include "cuda_km.cuh"

#include <algorithm>
#include <math.h>
#include <stdlib.h>
#include <string.h>

using namespace pc__km_direct;

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr int HALF_MAX_K = 4096; // beyond, no centre-to-centre distances (k^2): l alone
constexpr size_t MOVE_SHARED_BYTES = 16384; // moved points' sums aggregated per block up to this
constexpr int SWEEP_POINTS = 4;             // points a thread takes in one round of the sweep
constexpr int FUSED_MAX = 1024;             // k (dim + 1) up to which one kernel sweeps and scans

// What the centres' pass leaves for the sweep: the largest move and its centre, the largest other
// move, and the largest |c| (all rounded up).
struct centre_scalars {
    float dmax, dsecond, cmax;
    int jmax;
};

// |a - b|^2 and |a|^2 in double; |a - b| rounded up (the margin covers the double roundings).
__device__ __forceinline__ double sq_dist(const float *a, const float *b, int dim)
{
    double s = 0;
    for (int j = 0; j < dim; j++) {
        double t = (double)a[j] - b[j];
        s = fma(t, t, s);
    }
    return s;
}
__device__ __forceinline__ double sq_norm(const float *a, int dim)
{
    double s = 0;
    for (int j = 0; j < dim; j++)
        s = fma((double)a[j], (double)a[j], s);
    return s;
}
__device__ __forceinline__ float dist_up(const float *a, const float *b, int dim)
{
    return __double2float_ru(sqrt(sq_dist(a, b, dim)) * (1.0 + (dim + 8) * 0x1p-52));
}

// 2 e above, rounded up, with a term for underflow (each of the 2 dim + 2 roundings of a subnormal
// result errs by at most 2^-150).
__device__ __forceinline__ float margin(float eps2, float xnorm, float cmax)
{
    return __fadd_ru(__fmul_ru(eps2, __fmaf_ru(cmax, cmax, __fmul_ru(__fmul_ru(2.0f, xnorm), cmax))), 0x1p-100f);
}

// Whether lower bound lb on every other centre's distance and upper bound u on the own centre's prove
// the own centre Lloyd's label.
__device__ __forceinline__ bool settles(float lb, float u, float t)
{
    return lb > 0.0f && __fsub_rd(__fmul_rd(lb, lb), __fmul_ru(u, u)) > t;
}

// Appends the thread's `count` items (mine[0 ..), and extra[] to extra_list where given) to
// list[*total ...) with one atomic a block: one a warp, on a single counter, cost about a fifth of a
// 10M-point pass. Every thread of the block (of BLOCK threads) calls it.
template <int N>
__device__ __forceinline__ void append_n(int count, const int32_t *mine, int32_t *list, unsigned *total_count,
                                         const int32_t *extra, int32_t *extra_list)
{
    __shared__ unsigned warp_base[BLOCK / 32 + 1];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned before = count; // inclusive scan over the warp's lanes
    for (int off = 1; off < 32; off <<= 1) {
        const unsigned t = __shfl_up_sync(FULL, before, off);
        if ((int)lane >= off)
            before += t;
    }
    if (lane == 31)
        warp_base[warp] = before;
    before -= count;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned total = 0;
        for (int w = 0; w < BLOCK / 32; w++) {
            const unsigned c = warp_base[w];
            warp_base[w] = total;
            total += c;
        }
        warp_base[BLOCK / 32] = total ? atomicAdd(total_count, total) : 0;
    }
    __syncthreads();
    const unsigned at = warp_base[BLOCK / 32] + warp_base[warp] + before;
#pragma unroll
    for (int p = 0; p < N; p++)
        if (p < count) {
            list[at + p] = mine[p];
            if (extra_list)
                extra_list[at + p] = extra[p];
        }
    __syncthreads(); // warp_base is read before the next call writes it
}

__device__ __forceinline__ void append(bool take, int32_t mine, int32_t *list, unsigned *count, int32_t extra,
                                       int32_t *extra_list)
{
    append_n<1>(take ? 1 : 0, &mine, list, count, &extra, extra_list);
}

// One block a centre j: how far it moved (delta, up), |c_j| (up), and half the distance to its nearest
// other centre (down; infinite with one centre, 0 where k^2 is not worth it).
__global__ void __launch_bounds__(128) centres_kernel(const float *centres, float *prev, int k, int dim,
                                                       int first, float *delta, float *half, float *cnorm,
                                                       unsigned *radius)
{
    __shared__ double part[4];
    const int j = blockIdx.x;
    const float *c = centres + (size_t)j * dim;
    double nearest = INFINITY;
    if (k <= HALF_MAX_K)
        for (int q = threadIdx.x; q < k; q += blockDim.x)
            if (q != j)
                nearest = fmin(nearest, sq_dist(c, centres + (size_t)q * dim, dim));
    for (int off = 16; off > 0; off >>= 1)
        nearest = fmin(nearest, __shfl_down_sync(FULL, nearest, off));
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = nearest;
    __syncthreads();
    if (threadIdx.x == 0) {
        nearest = fmin(fmin(part[0], part[1]), fmin(part[2], part[3]));
        const double norm = sq_norm(c, dim), up = 1.0 + (dim + 8) * 0x1p-52, down = 1.0 - (dim + 8) * 0x1p-52;
        delta[j] = first ? 0.0f : dist_up(c, prev + (size_t)j * dim, dim);
        cnorm[j] = __double2float_ru(sqrt(norm) * up);
        half[j] = k > HALF_MAX_K ? 0.0f : __double2float_rd(0.5 * sqrt(nearest) * down);
        for (int d = 0; d < dim; d++) // the next pass's previous centres (only block j reads row j)
            prev[(size_t)j * dim + d] = c[d];
        if (radius)
            radius[j] = 0;
    }
}

// One warp: the largest move, its centre and the largest of the others; the largest |c|.
// Also zeroes the pass's counters (no memset launches between the kernels of a pass).
__global__ void __launch_bounds__(32) scalars_kernel(const float *delta, const float *cnorm, int k,
                                                      centre_scalars *out, unsigned *counts,
                                                      unsigned long long *evals)
{
    if (threadIdx.x < 3)
        counts[threadIdx.x] = 0;
    if (threadIdx.x == 3)
        *evals = 0;
    float m1 = -1.0f, m2 = 0.0f, cmax = 0.0f;
    int i1 = 0;
    for (int q = threadIdx.x; q < k; q += 32) {
        const float d = delta[q];
        if (d > m1) {
            m2 = fmaxf(m2, m1);
            m1 = d;
            i1 = q;
        } else
            m2 = fmaxf(m2, d);
        cmax = fmaxf(cmax, cnorm[q]);
    }
    for (int off = 16; off > 0; off >>= 1) {
        const float o1 = __shfl_down_sync(FULL, m1, off), o2 = __shfl_down_sync(FULL, m2, off);
        const int oi = __shfl_down_sync(FULL, i1, off);
        cmax = fmaxf(cmax, __shfl_down_sync(FULL, cmax, off));
        if (o1 > m1 || (o1 == m1 && oi < i1)) {
            m2 = fmaxf(o2, m1);
            m1 = o1;
            i1 = oi;
        } else
            m2 = fmaxf(m2, o1);
    }
    if (threadIdx.x == 0)
        *out = centre_scalars{fmaxf(m1, 0.0f), fmaxf(m2, 0.0f), cmax, i1};
}

// A point's bounds moved by the centres' moves (u up by its centre's move, l down by the largest
// other); where they no longer settle its label a, u is tightened to the exact distance and they are
// tried again. Returns whether the point is to be scanned; ui, li: its bounds; t: the margin 2 e.
__device__ __forceinline__ bool sweep_bounds(const float *x, int dim, const float *centres, long i, int a,
                                             const float *u, const float *l, const float *xnorm,
                                             const float *delta, const float *half, const centre_scalars &s,
                                             float eps2, float &ui, float &li, float &t, unsigned &tightened)
{
    ui = __fadd_ru(u[i], delta[a]);
    li = fmaxf(__fsub_rd(l[i], a == s.jmax ? s.dsecond : s.dmax), 0.0f);
    t = margin(eps2, xnorm[i], s.cmax);
    const float twice = __fmul_rd(2.0f, half[a]);
    if (settles(fmaxf(__fsub_rd(twice, ui), li), ui, t))
        return false;
    ui = dist_up(x + i * dim, centres + (size_t)a * dim, dim);
    tightened++;
    return !settles(fmaxf(__fsub_rd(twice, ui), li), ui, t);
}

// Every point: its bounds moved by the centres' moves; where they no longer settle it, u is tightened
// to the exact distance and tried again; the rest are listed for the scan. The first pass lists all.
// Candidates for the scan (radius non-null): a centre c with |c - a| > 2 u + sqrt(2 e) is farther from
// x than u + sqrt(2 e), so d_c^2 - d_a^2 > 2 e and its f is above f_a: neither the argmin nor tied.
// radius[a] takes the largest 2 u + sqrt(2 e) of a's listed points (as float bits: non-negative floats
// order as integers), and the scan looks only at the centres within it of a.
__global__ void __launch_bounds__(BLOCK) sweep_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                      const float *__restrict__ centres, const int32_t *labels,
                                                      float *u, float *l, const float *xnorm, const float *delta,
                                                      const float *half, const centre_scalars *cs, float eps2,
                                                      int first, int32_t *list, unsigned *counts, unsigned *radius)
{
    extern __shared__ unsigned block_radius[]; // k, with radius: maxed here, then once a block in radius
    if (radius) {
        for (int c = threadIdx.x; c < k; c += blockDim.x)
            block_radius[c] = 0;
        __syncthreads();
    }
    const centre_scalars s = *cs;
    unsigned tightened = 0;
    const long step = (long)gridDim.x * blockDim.x * SWEEP_POINTS;
    for (long base = (long)blockIdx.x * blockDim.x * SWEEP_POINTS; base < n; base += step) {
        int32_t mine[SWEEP_POINTS];
        int found = 0;
#pragma unroll
        for (int p = 0; p < SWEEP_POINTS; p++) {
            const long i = base + (long)p * blockDim.x + threadIdx.x;
            if (i >= n)
                continue;
            bool scan = first;
            if (!first) {
                const int a = labels[i];
                float ui, li, t;
                scan = sweep_bounds(x, dim, centres, i, a, u, l, xnorm, delta, half, s, eps2, ui, li, t, tightened);
                if (scan && radius)
                    atomicMax(block_radius + a, __float_as_uint(__fadd_ru(__fmul_ru(2.0f, ui), __fsqrt_ru(t))));
                u[i] = ui;
                l[i] = li;
            }
            if (scan)
                mine[found++] = (int32_t)i;
        }
        append_n<SWEEP_POINTS>(found, mine, list, counts, nullptr, nullptr);
    }
    for (int off = 16; off > 0; off >>= 1)
        tightened += __shfl_down_sync(FULL, tightened, off);
    if ((threadIdx.x & 31) == 0 && tightened)
        atomicAdd(counts + 1, tightened);
    if (radius) {
        __syncthreads();
        for (int c = threadIdx.x; c < k; c += blockDim.x)
            if (block_radius[c])
                atomicMax(radius + c, block_radius[c]);
    }
}

// A scanned point's end: the label a (its lowest f), u = the exact distance to a's centre (up), l =
// the smaller of what the second lowest f proves for the scanned centres, min over them (j != a) of
// d_j^2 >= f_2 - e + |x|^2 (down), and `beyond` for those not scanned. Returns the old label.
__device__ __forceinline__ int settle_scanned(const float *__restrict__ x, int dim, const float *__restrict__ centres,
                                              const float *xnorm, long i, int a, float second, float beyond,
                                              float eps2, float cmax, int32_t *labels, float *u, float *l)
{
    const float *xi = x + i * dim;
    // xnorm[i] is |x| rounded up by less than 2^-22 (norms_kernel: a float rounding up, a margin for
    // the double ones), so times 1 - 2^-22, rounded down, it is at most |x|.
    const float xup = xnorm[i], xlo = __fmul_rd(xup, 1.0f - 0x1p-22f);
    const float e = __fmul_ru(0.5f, margin(eps2, xup, cmax));
    float lo = INFINITY;
    if (second < INFINITY) {
        const float lo2 = __fsub_rd(__fadd_rd(second, __fmul_rd(xlo, xlo)), e);
        lo = lo2 > 0.0f ? __fsqrt_rd(lo2) : 0.0f;
    }
    u[i] = dist_up(xi, centres + (size_t)a * dim, dim);
    l[i] = fminf(lo, beyond);
    const int old = labels[i];
    if (old != a)
        labels[i] = a;
    return old;
}

// f of staged centre c against a point (its -2 x for D > 0, x itself for D = 0): the direct kernels'
// value, bit for bit; kept as the lowest (ties to the lower index: every caller takes the centres in
// increasing index) or the second lowest.
template <int D>
__device__ __forceinline__ void lowest_two(const float4 *smem4, const float *sc, const float *sn, int dim,
                                           const float *m2x, const float *xg, int c, float &best, float &second,
                                           int &arg)
{
    float d;
    if (D > 0) {
        float cv[padded(D > 0 ? D : 1)];
        load_centre<(D > 0 ? D : 1)>(smem4, c, cv);
        d = cv[D > 0 ? D : 0];
#pragma unroll
        for (int j = 0; j < D; j++)
            d = fmaf(m2x[j], cv[j], d);
    } else {
        d = sn[c];
        for (int j = 0; j < dim; j++)
            d = fmaf(-2.0f * xg[j], sc[c * dim + j], d);
    }
    // Without branches (selects where the branches took more, at 10M x 3, k = 100): a lower d passes
    // best down to second; d == best or above can only lower second.
    const bool lower = d < best;
    arg = lower ? c : arg;
    second = lower ? best : fminf(second, d);
    best = lower ? d : best;
}

// The listed points against every centre (the first pass; k beyond the candidate lists), with the
// direct kernels' staging and arithmetic (exact_kernel in cuda.cu: POINTS points a thread for D > 0,
// one shared load of a centre serving them all). Moved points are listed with their old label.
template <int D>
__global__ void __launch_bounds__(BLOCK) scan_kernel(const float *__restrict__ x, int dim, int k,
                                                     const float *__restrict__ centres, const int32_t *list,
                                                     unsigned *counts, int32_t *labels, float *u, float *l,
                                                     const float *xnorm, const centre_scalars *cs, float eps2,
                                                     int32_t *moved, int32_t *moved_old)
{
    constexpr int P = D > 0 ? POINTS : 1;
    const unsigned m = counts[0];
    const size_t per_block = (size_t)blockDim.x * P;
    if ((size_t)blockIdx.x * per_block >= m)
        return; // the whole block has nothing to do
    extern __shared__ float4 smem4[];
    float *sc = reinterpret_cast<float *>(smem4);
    float *sn = sc + (size_t)k * dim; // D = 0 only
    stage_centres<D>(centres, k, dim, sc, sn);
    __syncthreads();
    const float cmax = cs->cmax;
    for (size_t b0 = (size_t)blockIdx.x * per_block; b0 < m; b0 += (size_t)gridDim.x * per_block) {
        long idx[P];
        float best[P], second[P], m2x[P][D > 0 ? D : 1];
        int arg[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const size_t q = b0 + threadIdx.x + (size_t)p * blockDim.x;
            idx[p] = list[q < m ? q : m - 1]; // past the end: a repeat of the last, not written
            best[p] = second[p] = INFINITY;
            arg[p] = 0;
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[p][j] = -2.0f * x[idx[p] * D + j];
        }
#pragma unroll 2
        for (int c = 0; c < k; c++)
#pragma unroll
            for (int p = 0; p < P; p++)
                lowest_two<D>(smem4, sc, sn, dim, m2x[p], x + idx[p] * dim, c, best[p], second[p], arg[p]);
#pragma unroll
        for (int p = 0; p < P; p++) {
            const bool live = b0 + threadIdx.x + (size_t)p * blockDim.x < m;
            const int old = live ? settle_scanned(x, dim, centres, xnorm, idx[p], arg[p], second[p], INFINITY, eps2, cmax,
                                                  labels, u, l)
                                 : arg[p];
            append(old != arg[p], (int32_t)idx[p], moved, counts + 2, old, moved_old);
        }
    }
}

// One warp a centre b: the centres c (in index order) with |c - b| (down) not above radius[b].
__global__ void __launch_bounds__(BLOCK) neighbour_kernel(const float *__restrict__ centres, int dim, int k,
                                                          const unsigned *radius, int32_t *nb, int *nb_count,
                                                          unsigned long long *evals)
{
    const int lane = threadIdx.x & 31;
    for (long b = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5; b < k; b += (gridDim.x * (long)blockDim.x) >> 5) {
        const unsigned bits = radius[b]; // 0: no listed point is b's (a NaN radius keeps every centre)
        const float R = __uint_as_float(bits);
        int found = 0;
        if (bits != 0u)
            for (int c0 = 0; c0 < k; c0 += 32) {
                const int c = c0 + lane;
                const bool keep = c < k && !(__double2float_rd(sqrt(sq_dist(centres + b * dim, centres + (size_t)c * dim,
                                                                            dim)) * (1.0 - (dim + 8) * 0x1p-52)) > R);
                const unsigned ballot = __ballot_sync(FULL, keep);
                if (keep)
                    nb[b * k + found + __popc(ballot & ((1u << lane) - 1))] = c;
                found += __popc(ballot);
            }
        if (lane == 0) {
            nb_count[b] = found;
            if (bits != 0u)
                atomicAdd(evals, (unsigned long long)k);
        }
    }
}

// The listed points against their candidates (neighbour_kernel's list of their label's centre b), a
// point a thread, the direct kernels' arithmetic. A centre not scanned is more than radius[b] from b,
// so more than radius[b] - u from x: that bounds l beside the second lowest f. (Stopping each point at
// its own radius, candidates sorted by |c - b|, halved the distances and slowed the pass: its weaker
// l left a third more points to scan the next time, and a scanned point's gathers, not its
// candidates, are what a scan costs.)
template <int D>
__global__ void __launch_bounds__(BLOCK) scan_nb_kernel(const float *__restrict__ x, int dim, int k,
                                                        const float *__restrict__ centres, const int32_t *list,
                                                        unsigned *counts, int32_t *labels, float *u, float *l,
                                                        const float *xnorm, const centre_scalars *cs, float eps2,
                                                        int32_t *moved, int32_t *moved_old, const unsigned *radius,
                                                        const int32_t *nb, const int *nb_count,
                                                        unsigned long long *evals)
{
    const unsigned m = counts[0];
    if ((size_t)blockIdx.x * blockDim.x >= m)
        return;
    extern __shared__ float4 smem4[];
    float *sc = reinterpret_cast<float *>(smem4);
    float *sn = sc + (size_t)k * dim; // D = 0 only
    stage_centres<D>(centres, k, dim, sc, sn);
    __syncthreads();
    const float cmax = cs->cmax;
    unsigned long long scanned = 0;
    for (size_t q0 = (size_t)blockIdx.x * blockDim.x; q0 < m; q0 += (size_t)gridDim.x * blockDim.x) {
        const size_t q = q0 + threadIdx.x;
        const bool live = q < m;
        const long i = list[live ? q : m - 1];
        int arg = 0, old = 0;
        if (live) {
            const int b = labels[i];
            const int32_t *cand = nb + (size_t)b * k;
            const int total = nb_count[b];
            scanned += total;
            float best = INFINITY, second = INFINITY, m2x[D > 0 ? D : 1];
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[j] = -2.0f * x[i * D + j];
            for (int v = 0; v < total; v++)
                lowest_two<D>(smem4, sc, sn, dim, m2x, x + i * dim, cand[v], best, second, arg);
            const float beyond = total == k ? INFINITY : __fsub_rd(__uint_as_float(radius[b]), u[i]);
            old = settle_scanned(x, dim, centres, xnorm, i, arg, second, fmaxf(beyond, 0.0f), eps2, cmax, labels, u,
                                 l);
        }
        append(live && old != arg, (int32_t)i, moved, counts + 2, old, moved_old);
    }
    for (int off = 16; off > 0; off >>= 1)
        scanned += __shfl_down_sync(FULL, scanned, off);
    if ((threadIdx.x & 31) == 0 && scanned)
        atomicAdd(evals, scanned);
}

typedef void (*scan_fn)(const float *, int, int, const float *, const int32_t *, unsigned *, int32_t *, float *,
                        float *, const float *, const centre_scalars *, float, int32_t *, int32_t *);
typedef void (*scan_nb_fn)(const float *, int, int, const float *, const int32_t *, unsigned *, int32_t *, float *,
                           float *, const float *, const centre_scalars *, float, int32_t *, int32_t *, const unsigned *,
                           const int32_t *, const int *, unsigned long long *);

scan_fn pick_scan(int dim) { PC__PICK_BY_DIM(scan_kernel) }
scan_nb_fn pick_scan_nb(int dim) { PC__PICK_BY_DIM(scan_nb_kernel) }

// Few centres (k (dim + 1) <= FUSED_MAX): one kernel a pass. A block takes BLOCK x SWEEP_POINTS points
// at a time: it sweeps their bounds, queues in shared memory those they do not settle, then its
// threads scan the queue, a point a thread against every centre staged in shared memory, and move the
// sums of the points that changed cluster in the block's shared copy, added to the totals at its end.
// Measured on an H100 at 10M x 3, k = 100 (an iteration): the lists' way, a global list scanned by
// another kernel, 0.347 ms (the list's gathers took as long as the sweep); scanning in place, a warp
// whenever one of its lanes needed it, 1.07 ms (a full Lloyd pass); this, 0.32 ms; with two queues,
// one swept while the other is scanned (one barrier a round), 0.36 ms; with 4 lanes a queued point,
// each over every 4th centre, merged by shuffles, 0.37 ms; held to 32 registers for 8 blocks an SM,
// 0.37 ms.
template <int D>
__global__ void __launch_bounds__(BLOCK) sweep_scan_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                           const float *__restrict__ centres, int32_t *labels,
                                                           float *u, float *l, const float *xnorm, const float *delta,
                                                           const float *half, const centre_scalars *cs, float eps2,
                                                           int first, float scale, fixed *totals, unsigned *counts)
{
    extern __shared__ float4 smem4[];
    __shared__ short queue[BLOCK * SWEEP_POINTS];
    __shared__ int queued;
    float *sc = reinterpret_cast<float *>(smem4);
    float *sn = sc + (size_t)k * dim; // D = 0 only
    const size_t centre_floats = D > 0 ? (size_t)k * padded(D) : any_centres_floats(k, dim);
    fixed *acc = reinterpret_cast<fixed *>(sc + centre_floats);
    const int entries = k * (dim + 1);
    stage_centres<D>(centres, k, dim, sc, sn);
    for (int q = threadIdx.x; q < entries; q += blockDim.x)
        acc[q] = 0;
    if (threadIdx.x == 0)
        queued = 0;
    __syncthreads();
    const centre_scalars s = *cs;
    unsigned scanned = 0, tightened = 0, moved = 0;
    const long step = (long)gridDim.x * blockDim.x * SWEEP_POINTS;
    for (long base = (long)blockIdx.x * blockDim.x * SWEEP_POINTS; base < n; base += step) {
#pragma unroll
        for (int p = 0; p < SWEEP_POINTS; p++) {
            const long i = base + (long)p * blockDim.x + threadIdx.x;
            if (i >= n)
                continue;
            bool scan = first;
            if (!first) {
                float ui, li, t;
                scan = sweep_bounds(x, dim, centres, i, labels[i], u, l, xnorm, delta, half, s, eps2, ui, li, t,
                                    tightened);
                if (!scan) {
                    u[i] = ui;
                    l[i] = li;
                }
            }
            if (scan)
                queue[atomicAdd(&queued, 1)] = (short)(i - base);
        }
        __syncthreads();
        const int m = queued;
        for (int q = threadIdx.x; q < m; q += blockDim.x) {
            const long i = base + queue[q];
            const float *xi = x + i * dim;
            float best = INFINITY, second = INFINITY, m2x[D > 0 ? D : 1];
            int arg = 0;
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[j] = -2.0f * xi[j];
#pragma unroll 4
            for (int c = 0; c < k; c++)
                lowest_two<D>(smem4, sc, sn, dim, m2x, xi, c, best, second, arg);
            const int old = settle_scanned(x, dim, centres, xnorm, i, arg, second, INFINITY, eps2, s.cmax, labels, u,
                                           l);
            if (old == arg)
                continue;
            moved++;
            for (int j = 0; j < dim; j++) {
                const fixed v = to_fixed(xi[j], scale);
                atomicAdd(acc + (size_t)arg * (dim + 1) + j, v);
                if (old >= 0)
                    atomicAdd(acc + (size_t)old * (dim + 1) + j, (fixed)0 - v);
            }
            atomicAdd(acc + (size_t)arg * (dim + 1) + dim, 1ull);
            if (old >= 0)
                atomicAdd(acc + (size_t)old * (dim + 1) + dim, ~0ull); // - 1
        }
        scanned += threadIdx.x == 0 ? m : 0;
        __syncthreads();
        if (threadIdx.x == 0)
            queued = 0;
        __syncthreads();
    }
    for (int q = threadIdx.x; q < entries; q += blockDim.x)
        if (acc[q])
            atomicAdd(totals + q, acc[q]);
    for (int off = 16; off > 0; off >>= 1) {
        scanned += __shfl_down_sync(FULL, scanned, off);
        tightened += __shfl_down_sync(FULL, tightened, off);
        moved += __shfl_down_sync(FULL, moved, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(counts, scanned);
        atomicAdd(counts + 1, tightened);
        atomicAdd(counts + 2, moved);
    }
}

typedef void (*sweep_scan_fn)(const float *, int, int, int, const float *, int32_t *, float *, float *, const float *,
                              const float *, const float *, const centre_scalars *, float, int, float, fixed *,
                              unsigned *);

sweep_scan_fn pick_sweep_scan(int dim) { PC__PICK_BY_DIM(sweep_scan_kernel) }

// The moved points into the fixed-point totals: + to the new cluster, - from the old (none at -1).
// SHARED: the block adds into its own copy in shared memory first (few clusters: every block's atomics
// would otherwise meet on the same few global addresses), then its non-zero entries into the totals.
template <bool SHARED>
__global__ void __launch_bounds__(BLOCK) move_sums_kernel(const float *__restrict__ x, int dim, int k,
                                                          const int32_t *labels, const int32_t *moved,
                                                          const int32_t *moved_old, const unsigned *moved_count,
                                                          float scale, fixed *totals)
{
    const unsigned count = *moved_count;
    if (count == 0)
        return;
    extern __shared__ __align__(8) unsigned char move_smem[];
    fixed *acc = SHARED ? reinterpret_cast<fixed *>(move_smem) : totals;
    const int entries = k * (dim + 1);
    if (SHARED) {
        for (int q = threadIdx.x; q < entries; q += blockDim.x)
            acc[q] = 0;
        __syncthreads();
    }
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x) {
        const long i = moved[q];
        const int a = labels[i], old = moved_old[q];
        fixed *to = acc + (size_t)a * (dim + 1), *from = old >= 0 ? acc + (size_t)old * (dim + 1) : nullptr;
        for (int j = 0; j < dim; j++) {
            const fixed v = to_fixed(x[i * dim + j], scale);
            atomicAdd(to + j, v);
            if (from)
                atomicAdd(from + j, (fixed)0 - v);
        }
        atomicAdd(to + dim, 1ull);
        if (from)
            atomicAdd(from + dim, ~0ull); // - 1
    }
    if (SHARED) {
        __syncthreads();
        for (int q = threadIdx.x; q < entries; q += blockDim.x)
            if (acc[q])
                atomicAdd(totals + q, acc[q]);
    }
}

// |x| of every point, rounded up.
__global__ void norms_kernel(const float *x, int n, int dim, float *xnorm)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        xnorm[i] = __double2float_ru(sqrt(sq_norm(x + i * dim, dim)) * (1.0 + (dim + 8) * 0x1p-52));
    }
}

} // namespace

struct pc__km_ham {
    const float *x = nullptr;
    size_t n = 0, dim = 0, k = 0;
    int sweep_blocks = 0, scan_blocks = 0, scan_nb_blocks = 0, move_blocks = 0;
    size_t smem = 0;
    float eps2 = 0;
    bool started = false, use_nb = false, fused = false;
    int fused_blocks = 0;
    size_t fused_smem = 0;
    bool counted_nb = false, counted_first = false; // how the last pass ran, for its counts
    pc__device_buffer<float> u, l, xnorm, prev, delta, half, cnorm;
    pc__device_buffer<centre_scalars> scalars;
    pc__device_buffer<int32_t> list, moved, moved_old;
    pc__device_buffer<unsigned> counts; // listed for the scan, tightened, moved
    // The scan's candidates (k <= HALF_MAX_K): radii, neighbour lists (k x k), and the distances the
    // lists and the scan over them evaluated.
    pc__device_buffer<unsigned> radius;
    pc__device_buffer<int32_t> nb;
    pc__device_buffer<int> nb_count;
    pc__device_buffer<unsigned long long> evals;
    // The counters, copied into pinned memory at the end of every pass, so that collect finds them
    // there once the caller's own download of the sums has waited for the pass: two fewer host waits
    // an iteration (each 10-15 us, against 0.3 ms an iteration at 10M x 3, k = 100).
    struct host_counters {
        unsigned counts[3];
        unsigned long long evals;
    } *host = nullptr;
    cudaEvent_t counted = nullptr;
    ~pc__km_ham()
    {
        if (host)
            cudaFreeHost(host);
        if (counted)
            cudaEventDestroy(counted);
    }
};

pc_status pc__km_ham_create(size_t n, size_t dim, size_t k, pc__km_ham **out)
{
    *out = nullptr;
    int device = 0, sms = 0, max_smem = 0, per_sm = 1;
    PC_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "device query");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "device query");
    const size_t smem = (specialised(dim) ? k * (size_t)padded((int)dim) : k * (dim + 1)) * sizeof(float);
    if (smem > (size_t)max_smem)
        return pc__fail(PC_UNSUPPORTED, "k-means with Hamerly's bounds on the GPU keeps the centres in shared "
                                        "memory: %zu KiB exceed the %d KiB a block may use", smem >> 10,
                        max_smem >> 10);
    pc__km_ham *h = new (std::nothrow) pc__km_ham;
    if (!h)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot allocate the k-means bounds' state");
    h->n = n;
    h->dim = dim;
    h->k = k;
    h->smem = smem;
    // Lloyd's f errs by at most 1.02 (2 dim + 2) 2^-24 (C^2 + 2 X C); the test needs twice that.
    h->eps2 = (float)(2.0 * 1.02 * (2.0 * (double)dim + 2.0) * 0x1p-24) * (1.0f + 0x1p-20f);
    pc_status st;
    if ((st = h->u.alloc(n, "k-means bounds")) != PC_OK || (st = h->l.alloc(n, "k-means bounds")) != PC_OK ||
        (st = h->xnorm.alloc(n, "point norms")) != PC_OK || (st = h->prev.alloc(k * dim, "centres")) != PC_OK ||
        (st = h->delta.alloc(k, "centre moves")) != PC_OK || (st = h->half.alloc(k, "centre moves")) != PC_OK ||
        (st = h->cnorm.alloc(k, "centre norms")) != PC_OK || (st = h->scalars.alloc(1, "centre moves")) != PC_OK ||
        (st = h->list.alloc(n, "point list")) != PC_OK || (st = h->moved.alloc(n, "moved points")) != PC_OK ||
        (st = h->moved_old.alloc(n, "moved points")) != PC_OK || (st = h->counts.alloc(3, "counters")) != PC_OK ||
        (st = h->evals.alloc(1, "counters")) != PC_OK) {
        delete h;
        return st;
    }
    const size_t entries = k * (dim + 1);
    /* PC_KMEANS_CUDA_HAMERLY=lists: the lists' kernels at any size (for testing them on small data). */
    const char *way = getenv("PC_KMEANS_CUDA_HAMERLY");
    h->fused = entries <= FUSED_MAX && entries * sizeof(fixed) <= MOVE_SHARED_BYTES && !(way && strcmp(way, "lists") == 0);
    h->use_nb = k <= HALF_MAX_K && !h->fused;
    if (h->use_nb && ((st = h->radius.alloc(k, "candidate radii")) != PC_OK ||
                      (st = h->nb.alloc(k * k, "candidate lists")) != PC_OK ||
                      (st = h->nb_count.alloc(k, "candidate lists")) != PC_OK)) {
        delete h;
        return st;
    }
    const size_t point_blocks = (n + BLOCK - 1) / BLOCK;
    int per_sm_nb = 1;
    scan_fn scan = pick_scan((int)dim);
    scan_nb_fn scan_nb = pick_scan_nb((int)dim);
    cudaError_t err = cudaFuncSetAttribute(scan, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scan, BLOCK, smem);
    if (err == cudaSuccess)
        err = cudaFuncSetAttribute(scan_nb, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_nb, scan_nb, BLOCK, smem);
    if (h->fused) {
        h->fused_smem = (specialised(dim) ? k * (size_t)padded((int)dim) : any_centres_floats(k, dim)) * sizeof(float) +
                        entries * sizeof(fixed);
        int per_sm_fused = 1;
        if (err == cudaSuccess)
            err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_fused, pick_sweep_scan((int)dim), BLOCK,
                                                                h->fused_smem);
        // Up to 8 blocks an SM (6 fit: registers; 4 measured 0.38 ms an iteration at 10M x 3, k = 100,
        // 6 0.32): each adds its sums to the same k (dim + 1) totals at its end.
        h->fused_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * std::max(1, std::min(8, per_sm_fused)),
                                                            (n + BLOCK * SWEEP_POINTS - 1) / (BLOCK * SWEEP_POINTS)));
    }
    if ((st = pc__cuda_status(err, "k-means bounds' scan kernel")) != PC_OK) {
        delete h;
        return st;
    }
    h->scan_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * std::max(1, std::min(8, per_sm)), point_blocks));
    h->scan_nb_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * std::max(1, std::min(8, per_sm_nb)), point_blocks));
    h->sweep_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * 8, (n + BLOCK * SWEEP_POINTS - 1) / (BLOCK * SWEEP_POINTS)));
    h->move_blocks = sms * 4;
    if ((st = pc__cuda_status(cudaMallocHost((void **)&h->host, sizeof *h->host), "k-means bounds' counters")) !=
            PC_OK ||
        (st = pc__cuda_status(cudaEventCreateWithFlags(&h->counted, cudaEventDisableTiming), "k-means bounds' "
                              "counters")) != PC_OK) {
        delete h;
        return st;
    }
    *out = h;
    return PC_OK;
}

pc_status pc__km_ham_points(pc__km_ham *h, const float *x)
{
    h->x = x;
    norms_kernel<<<h->sweep_blocks, BLOCK>>>(x, (int)h->n, (int)h->dim, h->xnorm.ptr);
    return pc__cuda_status(cudaGetLastError(), "k-means point norms kernel");
}

void pc__km_ham_free(pc__km_ham *h) { delete h; }

// The last pass's moved points into the fixed-point sums (k x (dim + 1), count last, x * scale).
static pc_status move_sums(pc__km_ham *h, const int32_t *labels, float scale, unsigned long long *totals)
{
    const int blocks = h->move_blocks;
    const size_t smem = h->k * (h->dim + 1) * sizeof(fixed);
    if (smem <= MOVE_SHARED_BYTES)
        move_sums_kernel<true><<<blocks, BLOCK, smem>>>(h->x, (int)h->dim, (int)h->k, labels, h->moved.ptr,
                                                        h->moved_old.ptr, h->counts.ptr + 2, scale, totals);
    else
        move_sums_kernel<false><<<blocks, BLOCK>>>(h->x, (int)h->dim, (int)h->k, labels, h->moved.ptr,
                                                   h->moved_old.ptr, h->counts.ptr + 2, scale, totals);
    PC_CUDA_LAUNCHED("k-means moved sums kernel");
    return PC_OK;
}

static pc_status queue_pass(pc__km_ham *h, const float *centres, int32_t *labels, float scale,
                            unsigned long long *totals, bool *resum)
{
    const int n = (int)h->n, dim = (int)h->dim, k = (int)h->k;
    const bool candidates = h->use_nb && h->started; // the first pass scans every centre
    *resum = !h->started && !h->fused;
    centres_kernel<<<k, 128>>>(centres, h->prev.ptr, k, dim, !h->started, h->delta.ptr, h->half.ptr, h->cnorm.ptr,
                               candidates ? h->radius.ptr : nullptr);
    PC_CUDA_LAUNCHED("k-means centre moves kernel");
    scalars_kernel<<<1, 32>>>(h->delta.ptr, h->cnorm.ptr, k, h->scalars.ptr, h->counts.ptr, h->evals.ptr);
    PC_CUDA_LAUNCHED("k-means centre moves kernel");
    if (h->fused) {
        if (!h->started)
            PC_CUDA_TRY(cudaMemsetAsync(totals, 0, h->k * (h->dim + 1) * sizeof(fixed)), "cudaMemset");
        pick_sweep_scan(dim)<<<h->fused_blocks, BLOCK, h->fused_smem>>>(
            h->x, n, dim, k, centres, labels, h->u.ptr, h->l.ptr, h->xnorm.ptr, h->delta.ptr, h->half.ptr,
            h->scalars.ptr, h->eps2, !h->started, scale, totals, h->counts.ptr);
        PC_CUDA_LAUNCHED("k-means bounds kernel");
        h->counted_nb = false;
        h->counted_first = !h->started;
        h->started = true;
        return PC_OK;
    }
    sweep_kernel<<<h->sweep_blocks, BLOCK, candidates ? h->k * sizeof(unsigned) : 0>>>(
        h->x, n, dim, k, centres, labels, h->u.ptr, h->l.ptr, h->xnorm.ptr, h->delta.ptr, h->half.ptr, h->scalars.ptr,
        h->eps2, !h->started, h->list.ptr, h->counts.ptr, candidates ? h->radius.ptr : nullptr);
    PC_CUDA_LAUNCHED("k-means bounds kernel");
    if (candidates) {
        neighbour_kernel<<<(int)((h->k * 32 + BLOCK - 1) / BLOCK), BLOCK>>>(centres, dim, k, h->radius.ptr, h->nb.ptr,
                                                                          h->nb_count.ptr, h->evals.ptr);
        PC_CUDA_LAUNCHED("k-means candidate list kernel");
        pick_scan_nb(dim)<<<h->scan_nb_blocks, BLOCK, h->smem>>>(
            h->x, dim, k, centres, h->list.ptr, h->counts.ptr, labels, h->u.ptr, h->l.ptr, h->xnorm.ptr, h->scalars.ptr,
            h->eps2, h->moved.ptr, h->moved_old.ptr, h->radius.ptr, h->nb.ptr, h->nb_count.ptr, h->evals.ptr);
    } else
        pick_scan(dim)<<<h->scan_blocks, BLOCK, h->smem>>>(h->x, dim, k, centres, h->list.ptr, h->counts.ptr, labels,
                                                            h->u.ptr, h->l.ptr, h->xnorm.ptr, h->scalars.ptr, h->eps2,
                                                            h->moved.ptr, h->moved_old.ptr);
    PC_CUDA_LAUNCHED("k-means bounds' scan kernel");
    pc_status st = h->started ? move_sums(h, labels, scale, totals) : PC_OK;
    h->counted_nb = candidates;
    h->counted_first = !h->started;
    h->started = true;
    return st;
}

pc_status pc__km_ham_pass(pc__km_ham *h, const float *centres, int32_t *labels, float scale,
                          unsigned long long *totals, bool *resum)
{
    pc_status st = queue_pass(h, centres, labels, scale, totals, resum);
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemcpyAsync(h->host->counts, h->counts.ptr, sizeof h->host->counts, cudaMemcpyDeviceToHost),
                "k-means bounds' counts");
    PC_CUDA_TRY(cudaMemcpyAsync(&h->host->evals, h->evals.ptr, sizeof h->host->evals, cudaMemcpyDeviceToHost),
                "k-means bounds' counts");
    PC_CUDA_TRY(cudaEventRecord(h->counted), "k-means bounds' counts");
    return PC_OK;
}

pc_status pc__km_ham_collect(pc__km_ham *h, pc__km_ham_counts *out)
{
    PC_CUDA_TRY(cudaEventSynchronize(h->counted), "k-means bounds' counts");
    const unsigned *c = h->host->counts;
    const unsigned long long evals = h->host->evals;
    out->scanned = c[0];
    out->tightened = c[1];
    out->moved = c[2];
    /* Distances evaluated, as hamerly.c counts them (a scan's centres, its u, a tightening, the centre
     * pairs and moves), the candidates in place of every centre where the lists were used. */
    out->distances = (h->counted_nb ? (double)evals : (double)c[0] * (double)h->k) + c[0] + c[1] +
                     (h->k <= HALF_MAX_K ? (double)h->k * (double)(h->k - 1) / 2 : 0) + (h->counted_first ? 0 : (double)h->k);
    return PC_OK;
}

