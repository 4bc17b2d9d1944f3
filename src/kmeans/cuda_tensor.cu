// The nearest centre of every point, screened on the tensor cores and settled in exact FP32.
//
// Screening: d~(c) = |x|^2 + |c|^2 - 2 x.c with x.c from three tensor-core products of split operands
// (x = xh + xl, -2c = ch + cl; xh ch + xh cl + xl ch; TF32 m16n8k8 or BF16 m16n8k16), |x|^2 + |c|^2
// (one FP32 addition, error <= 2^-24 (|x|^2 + |c|^2)) in the accumulator's initial value. |x|^2 is
// the same for every centre of a point, so it does not move the argmin; it makes d~ about |x - c|^2. A warp takes 16 x MT points against all centres, 8 at a time; each
// thread keeps, per point row, the lowest two keys: d~ with its low P mantissa bits replaced by the
// centre's index (so one float min carries the argmin; P = the bits of the padded k).
//
// Settling: with E a rigorous bound on |key_c - d(c)| (d: the FP32 value the direct kernels compute,
// |c|^2 by fmaf from 0 then fmaf(-2 x_j, c_j, d) in dimension order), a point whose second-lowest key
// exceeds the lowest by more than 2E has the lowest key's centre as its exact FP32 argmin (every
// other centre's d is strictly larger). Any other point goes to a list (with its lowest key's centre)
// that cuda.cu's exact kernels scan in plain FP32 against every centre the triangle inequality cannot
// rule out. So the labels are those of the direct kernels bit for bit.
//
// The bound, per point (X = |x|, C = max |c|, N = max |c|^2 as computed, S = N + X^2 + 2 X C, which
// bounds |x|^2 + |c|^2 + sum_j |x_j 2 c_j| and the magnitudes in the accumulator):
//  - the split: x c - (xh ch + xh cl + xl ch) = xh rc + xl cl + xl rc + rx c with |rx| <= u^2 |x|,
//    |xl| <= u |x| (1 + u) (u = 2^-11 TF32, 2^-8 BF16): <= 3.03 u^2 |x_j| |2 c_j| a term, so
//    6.1 u^2 X C in all (Cauchy-Schwarz);
//  - the accumulation (FP32 in the tensor cores, products exact, alignment and truncation: taken as
//    at most 2^-22 of the terms' magnitudes per term and per instruction, twice the truncation ulp):
//    (3 dp + mmas + 2) 2^-22 S 1.02;
//  - the reference's own rounding (D fmaf from |c|^2) and the initial addition: (D + 3) 2^-24 S;
//  - the index bits: |key - d~| < 2^(P - 23) |d~| (counted on both keys as 2^(P-23) 1.01 (|s1| + |s2|));
//  - subnormal inputs flushed (or rounded) in TF32/BF16: 2^-117 (X + C), and 2^-99 absolute.
// Points with S >= 1e37 (nothing may overflow), non-finite values, or a tie of keys go to the list.
#include "cuda_km.cuh"

#include <cuda_bf16.h>
#include <math.h>

namespace {

constexpr int T = PC__KM_TENSOR_THREADS;

__device__ __forceinline__ uint32_t to_tf32(float v)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

__device__ __forceinline__ void mma_tf32(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void mma_bf16(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The K order inside a 16-dimension group is chosen so that thread (g, t) of a warp (g = lane / 4,
// t = lane % 4) needs dimensions 4t..4t+3 of its points (rows g and g + 8) and of its centre (column
// g): one float4 each. A dot product does not care about the order of its terms.
struct tf32_format {
    static constexpr int AREG = 8, BREG = 8, MMAS = 6;
    __device__ static void split(float v, uint32_t &hi, uint32_t &lo)
    {
        hi = to_tf32(v);
        lo = to_tf32(v - __uint_as_float(hi)); // v - hi is exact in FP32
    }
    // Two m16n8k8 steps: the first takes dims 4t, 4t+1 (k slots t, t+4), the second 4t+2, 4t+3.
    __device__ static void pack_a(const float *v0, const float *v1, uint32_t *ah, uint32_t *al)
    {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            split(v0[i], ah[2 * i], al[2 * i]);
            split(v1[i], ah[2 * i + 1], al[2 * i + 1]);
        }
    }
    __device__ static void pack_b(const float *c, uint32_t *b)
    {
#pragma unroll
        for (int i = 0; i < 4; i++)
            split(c[i], b[i], b[4 + i]);
    }
    // Product s of the six (the rows of a warp's tile take them in turn: independent products in
    // flight together instead of one row's chain of dependent ones).
    __device__ static void mma(int s, float *acc, const uint32_t *ah, const uint32_t *al, const uint32_t *b)
    {
        switch (s) {
        case 0: mma_tf32(acc, al, b[0], b[1]); break;
        case 1: mma_tf32(acc, al + 4, b[2], b[3]); break;
        case 2: mma_tf32(acc, ah, b[4], b[5]); break;
        case 3: mma_tf32(acc, ah + 4, b[6], b[7]); break;
        case 4: mma_tf32(acc, ah, b[0], b[1]); break;
        default: mma_tf32(acc, ah + 4, b[2], b[3]); break;
        }
    }
};

__device__ __forceinline__ uint32_t pack_bf16(float lo_index, float hi_index)
{
    __nv_bfloat162 p = __floats2bfloat162_rn(lo_index, hi_index);
    return *reinterpret_cast<uint32_t *>(&p);
}

struct bf16_format {
    static constexpr int AREG = 4, BREG = 4, MMAS = 3;
    __device__ static float hi(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
    // One m16n8k16 step: k slots 2t, 2t+1, 2t+8, 2t+9 are dims 4t..4t+3.
    __device__ static void pack_a(const float *v0, const float *v1, uint32_t *ah, uint32_t *al)
    {
        float h0[4], h1[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            h0[i] = hi(v0[i]);
            h1[i] = hi(v1[i]);
        }
        ah[0] = pack_bf16(h0[0], h0[1]);
        ah[1] = pack_bf16(h1[0], h1[1]);
        ah[2] = pack_bf16(h0[2], h0[3]);
        ah[3] = pack_bf16(h1[2], h1[3]);
        al[0] = pack_bf16(v0[0] - h0[0], v0[1] - h0[1]);
        al[1] = pack_bf16(v1[0] - h1[0], v1[1] - h1[1]);
        al[2] = pack_bf16(v0[2] - h0[2], v0[3] - h0[3]);
        al[3] = pack_bf16(v1[2] - h1[2], v1[3] - h1[3]);
    }
    __device__ static void pack_b(const float *c, uint32_t *b)
    {
        float h[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            h[i] = hi(c[i]);
        b[0] = pack_bf16(h[0], h[1]);
        b[1] = pack_bf16(h[2], h[3]);
        b[2] = pack_bf16(c[0] - h[0], c[1] - h[1]);
        b[3] = pack_bf16(c[2] - h[2], c[3] - h[3]);
    }
    __device__ static void mma(int s, float *acc, const uint32_t *ah, const uint32_t *al, const uint32_t *b)
    {
        switch (s) {
        case 0: mma_bf16(acc, al, b[0], b[1]); break;
        case 1: mma_bf16(acc, ah, b[2], b[3]); break;
        default: mma_bf16(acc, ah, b[0], b[1]); break;
        }
    }
};

// Per step: |c|^2 (as the direct kernels compute it; padding centres 3e38, never nearest) and -2c
// split and packed in the order the threads read them: centre c, group q, thread t: BREG words.
template <class F, int KC>
__global__ void tensor_prep_kernel(const float *__restrict__ centres, int k, int dim, int kpad, uint32_t *cpack,
                                   float *cnorm)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= kpad)
        return;
    float norm = 0.0f;
    for (int j = 0; j < dim && c < k; j++)
        norm = fmaf(centres[(size_t)c * dim + j], centres[(size_t)c * dim + j], norm);
    cnorm[c] = c < k ? norm : 3.0e38f;
    for (int q = 0; q < KC; q++)
        for (int t = 0; t < 4; t++) {
            float v[4];
            for (int i = 0; i < 4; i++) {
                int j = 16 * q + 4 * t + i;
                v[i] = c < k && j < dim ? -2.0f * centres[(size_t)c * dim + j] : 0.0f;
            }
            uint32_t b[F::BREG];
            F::pack_b(v, b);
            for (int w = 0; w < F::BREG; w++)
                cpack[(((size_t)c * KC + q) * 4 + t) * F::BREG + w] = b[w];
        }
}

// Lowest two of {s1, s2} and {k0, k1}: s1 <= s2 stay the lowest and second lowest. Six min/max (the
// ALU pipe, at half the issue rate, bounds the screen: profiled), grouped so that the longest chain
// is three deep: the second lowest of the merged pairs is min(max(s1, lo), min(s2, hi)).
__device__ __forceinline__ void lowest_two(float &s1, float &s2, float k0, float k1)
{
    const float lo = fminf(k0, k1), hi = fmaxf(k0, k1);
    s2 = fminf(fmaxf(s1, lo), fminf(s2, hi));
    s1 = fminf(s1, lo);
}

// d with its low bits (keep = ~mask) replaced by index: one LOP3 ((a & b) | c). Written out because
// the compiler split it in two for odd indices (index = even | 1), 25 logic operations for 16 keys.
__device__ __forceinline__ float key(float d, uint32_t keep, uint32_t index)
{
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(__float_as_uint(d)), "r"(keep), "r"(index));
    return __uint_as_float(r);
}

template <class F, int KC, int MT, int MINB = 1>
__global__ void __launch_bounds__(T, MINB) tensor_assign_kernel(pc__km_tensor_args a)
{
    extern __shared__ uint4 tsm[];
    __shared__ unsigned nmax_bits;
    const size_t words = (size_t)a.kpad * KC * 4 * F::BREG;
    const uint32_t *cs = reinterpret_cast<const uint32_t *>(tsm);
    float *cn = reinterpret_cast<float *>(reinterpret_cast<uint32_t *>(tsm) + words);
    for (size_t q = threadIdx.x; q < words / 4; q += T)
        tsm[q] = reinterpret_cast<const uint4 *>(a.cpack)[q];
    if (threadIdx.x == 0)
        nmax_bits = 0;
    __syncthreads();
    unsigned top = 0; // max |c|^2 as float bits (non-negative, or NaN: larger than any, and S fails)
    for (int c = threadIdx.x; c < a.kpad; c += T) {
        float v = a.cnorm[c];
        cn[c] = v;
        if (c < a.k)
            top = max(top, __float_as_uint(v));
    }
    atomicMax(&nmax_bits, top);
    __syncthreads();
    const float N = __uint_as_float(nmax_bits), C = sqrtf(N) * 1.0001f;

    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const long tasks = ((long)a.n + 16 * MT - 1) / (16 * MT);
    const bool vec = a.dim == 16 * KC;
    unsigned moved = 0;
    for (long task = (long)blockIdx.x * (T / 32) + (threadIdx.x >> 5); task < tasks;
         task += (long)gridDim.x * (T / 32)) {
        uint32_t ah[MT][KC][F::AREG], al[MT][KC][F::AREG];
        float xx[MT][2];
#pragma unroll
        for (int m = 0; m < MT; m++) {
            const long r0 = task * 16 * MT + m * 16 + g, r1 = r0 + 8;
            xx[m][0] = xx[m][1] = 0.0f;
#pragma unroll
            for (int q = 0; q < KC; q++) {
                float v0[4], v1[4];
                if (vec) {
                    float4 f0 = r0 < a.n ? *reinterpret_cast<const float4 *>(a.x + r0 * a.dim + 16 * q + 4 * t)
                                         : make_float4(0, 0, 0, 0);
                    float4 f1 = r1 < a.n ? *reinterpret_cast<const float4 *>(a.x + r1 * a.dim + 16 * q + 4 * t)
                                         : make_float4(0, 0, 0, 0);
                    v0[0] = f0.x, v0[1] = f0.y, v0[2] = f0.z, v0[3] = f0.w;
                    v1[0] = f1.x, v1[1] = f1.y, v1[2] = f1.z, v1[3] = f1.w;
                } else {
#pragma unroll
                    for (int i = 0; i < 4; i++) {
                        const int j = 16 * q + 4 * t + i;
                        v0[i] = r0 < a.n && j < a.dim ? a.x[r0 * a.dim + j] : 0.0f;
                        v1[i] = r1 < a.n && j < a.dim ? a.x[r1 * a.dim + j] : 0.0f;
                    }
                }
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    xx[m][0] = fmaf(v0[i], v0[i], xx[m][0]);
                    xx[m][1] = fmaf(v1[i], v1[i], xx[m][1]);
                }
                F::pack_a(v0, v1, ah[m][q], al[m][q]);
            }
        }
        float s1[MT][2], s2[MT][2];
#pragma unroll
        for (int m = 0; m < MT; m++) {
            s1[m][0] = s1[m][1] = s2[m][0] = s2[m][1] = INFINITY;
#pragma unroll
            for (int h = 0; h < 2; h++) // |x|^2 of the row, over the quad's dims (every lane gets the sum)
                for (int off = 1; off < 4; off <<= 1)
                    xx[m][h] += __shfl_xor_sync(0xffffffffu, xx[m][h], off);
        }
#pragma unroll 2
        for (int c0 = 0; c0 < a.kpad; c0 += 8) {
            uint32_t b[KC][F::BREG];
#pragma unroll
            for (int q = 0; q < KC; q++)
#pragma unroll
                for (int w = 0; w < F::BREG; w += 4) {
                    uint4 v = *reinterpret_cast<const uint4 *>(cs + (((size_t)(c0 + g) * KC + q) * 4 + t) * F::BREG + w);
                    b[q][w] = v.x, b[q][w + 1] = v.y, b[q][w + 2] = v.z, b[q][w + 3] = v.w;
                }
            const float2 nv = *reinterpret_cast<const float2 *>(cn + c0 + 2 * t);
            const uint32_t i0 = (uint32_t)(c0 + 2 * t), keep = ~a.mask;
            float acc[MT][4];
#pragma unroll
            for (int m = 0; m < MT; m++) {
                // |x|^2 + |c|^2 - 2 x.c: about |x - c|^2, small, so the index bits cost little.
                acc[m][0] = nv.x + xx[m][0], acc[m][1] = nv.y + xx[m][0];
                acc[m][2] = nv.x + xx[m][1], acc[m][3] = nv.y + xx[m][1];
            }
#pragma unroll
            for (int q = 0; q < KC; q++)
#pragma unroll
                for (int s = 0; s < F::MMAS; s++)
#pragma unroll
                    for (int m = 0; m < MT; m++)
                        F::mma(s, acc[m], ah[m][q], al[m][q], b[q]);
#pragma unroll
            for (int m = 0; m < MT; m++) {
                lowest_two(s1[m][0], s2[m][0], key(acc[m][0], keep, i0), key(acc[m][1], keep, i0 + 1));
                lowest_two(s1[m][1], s2[m][1], key(acc[m][2], keep, i0), key(acc[m][3], keep, i0 + 1));
            }
        }
        // The four threads of a quad hold the same rows, different centres: merge their lowest two.
#pragma unroll
        for (int off = 1; off < 4; off <<= 1)
#pragma unroll
            for (int m = 0; m < MT; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float o1 = __shfl_xor_sync(0xffffffffu, s1[m][h], off);
                    const float o2 = __shfl_xor_sync(0xffffffffu, s2[m][h], off);
                    s2[m][h] = fminf(fmaxf(s1[m][h], o1), fminf(s2[m][h], o2));
                    s1[m][h] = fminf(s1[m][h], o1);
                }
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const long row = task * 16 * MT + m * 16 + h * 8 + g;
                const bool active = ((m * 2 + h) & 3) == t && row < a.n;
                const float v1 = s1[m][h], v2 = s2[m][h];
                const uint32_t label = __float_as_uint(v1) & a.mask;
                const float X = sqrtf(xx[m][h]) * 1.0001f, XC = X * C, S = N + X * X + 2.0f * XC;
                const float tol = 2.1f * (a.prod * XC + a.accref * S) + a.mask_rel * (fabsf(v1) + fabsf(v2)) +
                                  0x1p-99f + 0x1p-117f * (X + C);
                const bool sure = S < 1e37f && v2 - v1 > tol && label < (uint32_t)a.k;
                const bool unsure = active && !sure;
                const unsigned ballot = __ballot_sync(0xffffffffu, unsure);
                if (ballot) {
                    const int leader = __ffs(ballot) - 1;
                    unsigned base = 0;
                    if (lane == leader)
                        base = atomicAdd(a.list_count, (unsigned)__popc(ballot));
                    base = __shfl_sync(0xffffffffu, base, leader);
                    if (unsure) {
                        const unsigned pos = base + __popc(ballot & ((1u << lane) - 1));
                        a.list[pos] = (int32_t)row;
                        a.list_label[pos] = (int32_t)label;
                    }
                }
                if (active && sure) {
                    const int32_t old = a.labels[row];
                    if (old != (int32_t)label) {
                        a.labels[row] = (int32_t)label;
                        moved++;
                    }
                }
            }
    }
    for (int off = 16; off > 0; off >>= 1)
        moved += __shfl_down_sync(0xffffffffu, moved, off);
    if (lane == 0 && moved)
        atomicAdd(a.changed, (unsigned long long)moved);
}

typedef void (*prep_fn)(const float *, int, int, int, uint32_t *, float *);
typedef void (*assign_fn)(pc__km_tensor_args);

template <class F> void pick(int kc, prep_fn *prep, assign_fn *assign)
{
    switch (kc) {
    case 1:
        // Two blocks an SM (at most 128 registers; 119 used). Three (80 registers, 140 bytes spilled)
        // measured slower: H200, 10M x 16, k = 1000, 4.81 ms against 4.42 for the screen.
        *prep = tensor_prep_kernel<F, 1>, *assign = tensor_assign_kernel<F, 1, 4, 2>;
        break;
    case 2: *prep = tensor_prep_kernel<F, 2>, *assign = tensor_assign_kernel<F, 2, 2>; break;
    case 3: *prep = tensor_prep_kernel<F, 3>, *assign = tensor_assign_kernel<F, 3, 1>; break;
    default: *prep = tensor_prep_kernel<F, 4>, *assign = tensor_assign_kernel<F, 4, 1>; break;
    }
}

void pick(int format, size_t dim, prep_fn *prep, assign_fn *assign)
{
    const int kc = (int)((dim + 15) / 16);
    format == PC__KM_TENSOR_BF16 ? pick<bf16_format>(kc, prep, assign) : pick<tf32_format>(kc, prep, assign);
}

int breg(int format) { return format == PC__KM_TENSOR_BF16 ? bf16_format::BREG : tf32_format::BREG; }

} // namespace

size_t pc__km_tensor_kpad(size_t k) { return (k + 7) / 8 * 8; }

size_t pc__km_tensor_smem(size_t k, size_t dim, int format)
{
    const size_t kpad = pc__km_tensor_kpad(k), kc = (dim + 15) / 16;
    return (kpad * kc * 4 * (size_t)breg(format) + kpad) * sizeof(float);
}

size_t pc__km_tensor_packed_words(size_t k, size_t dim, int format)
{
    return pc__km_tensor_kpad(k) * ((dim + 15) / 16) * 4 * (size_t)breg(format);
}

pc_status pc__km_tensor_setup(size_t dim, int format, size_t smem, int *blocks_per_sm)
{
    prep_fn prep;
    assign_fn assign;
    pick(format, dim, &prep, &assign);
    PC_CUDA_TRY(cudaFuncSetAttribute(assign, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                "k-means shared memory");
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, assign, T, smem), "k-means occupancy");
    if (*blocks_per_sm < 1)
        *blocks_per_sm = 1;
    return PC_OK;
}

void pc__km_tensor_bounds(size_t k, size_t dim, int format, pc__km_tensor_args *a)
{
    const size_t kpad = pc__km_tensor_kpad(k), dp = (dim + 15) / 16 * 16, kc = dp / 16;
    int bits = 0;
    while (((size_t)1 << bits) < kpad)
        bits++;
    const bool bf = format == PC__KM_TENSOR_BF16;
    const double u = bf ? ldexp(1.0, -8) : ldexp(1.0, -11);
    const double mmas = (double)kc * (bf ? bf16_format::MMAS : tf32_format::MMAS);
    a->mask = (1u << bits) - 1;
    a->prod = (float)(6.1 * u * u);
    a->accref = (float)((3.0 * (double)dp + mmas + 2.0) * ldexp(1.0, -22) * 1.02 + ((double)dim + 3.0) * ldexp(1.0, -24) * 1.01);
    a->mask_rel = (float)(ldexp(1.0, bits - 23) * 1.01);
}

pc_status pc__km_tensor_assign(const pc__km_tensor_args &a, const float *centres, int format, int blocks, size_t smem)
{
    prep_fn prep;
    assign_fn assign;
    pick(format, (size_t)a.dim, &prep, &assign);
    prep<<<(a.kpad + 127) / 128, 128>>>(centres, a.k, a.dim, a.kpad, const_cast<uint32_t *>(a.cpack),
                                        const_cast<float *>(a.cnorm));
    PC_CUDA_LAUNCHED("k-means tensor preparation kernel");
    PC_CUDA_TRY(cudaMemsetAsync(a.list_count, 0, sizeof(unsigned)), "cudaMemset");
    assign<<<blocks, T, smem>>>(a);
    PC_CUDA_LAUNCHED("k-means tensor assignment kernel");
    return PC_OK;
}
