/* The host's side of HCA's copies to and from the GPU: pixels into the pinned staging buffers, and
 * labels (bytes from the device) into the caller's int32 or byte labels, on all cores. Both write
 * large arrays that nothing reads again soon (the bus takes the staging buffer next; the labels are
 * the caller's output), so on x86 they go out with streaming stores: a plain store first reads each
 * line it overwrites, a third of a copy's memory traffic and a half of the widening's, and the host's
 * memory is what HCA's passes over host pixels wait on (bench/RESULTS.md, 2026-11-26, issue 14).
 * PC_HCA_STREAMING_STORES=0 takes plain stores (to measure one against the other). */
#include "internal_hca.h"
#include "parclust.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Below this many bytes (or labels) a copy runs on one thread. */
#define PARALLEL_MIN 65536
/* A thread's share of a copy: slices of 64 KiB, so that every core takes part in the 8 MiB chunks of the
 * staged copies. One core copies ~10 GB/s, the bus takes ~50. */
#define SLICE 65536

/* The team a staged copy takes: the copies of 8 MiB chunks gain nothing past ~16 threads (one core
 * moves ~10 GB/s, the bus ~50), and on a host of many cores a team of every core leaves none to the
 * CUDA driver's own threads between the chunks: on a 64-vCPU host, 115 Mpix host to host took
 * 140-520 ms with 64 threads against 12-27 ms with 16 (bench/RESULTS.md, 2026-11-27).
 * PC_HCA_COPY_THREADS=N sets the cap (to measure it). */
static int copy_team(void)
{
    int cap = 16;
    const char *e = getenv("PC_HCA_COPY_THREADS");
    if (e && atoi(e) > 0)
        cap = atoi(e);
    int all = pc_openmp_max_threads();
    return all < cap ? all : cap;
}

static int streaming(void)
{
#if defined(__SSE2__)
    const char *e = getenv("PC_HCA_STREAMING_STORES");
    return !(e && strcmp(e, "0") == 0);
#else
    return 0;
#endif
}

#if defined(__SSE2__)
/* dst[0, len) = src[0, len), the 16-byte-aligned middle of dst by streaming stores. */
static void copy_streaming(unsigned char *dst, const unsigned char *src, size_t len)
{
    size_t i = (16 - ((uintptr_t)dst & 15)) & 15;
    i = i < len ? i : len;
    memcpy(dst, src, i);
    for (; i + 64 <= len; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i)), b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32)), d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    for (; i + 16 <= len; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
    memcpy(dst + i, src + i, len - i);
    _mm_sfence(); /* the streamed lines are out before the threads' barrier lets anyone read them */
}

/* labels[0, n) from bytes (255: -1), 16 labels a step, the 16-byte-aligned middle by streaming stores. */
static void widen_streaming(const uint8_t *bytes, size_t n, int32_t *labels)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(labels + i) & 15) != 0; i++)
        labels[i] = bytes[i] == 255 ? -1 : bytes[i];
    const __m128i zero = _mm_setzero_si128(), all = _mm_set1_epi8(-1);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(bytes + i)), none = _mm_cmpeq_epi8(v, all);
        __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
        __m128i nlo = _mm_unpacklo_epi8(none, none), nhi = _mm_unpackhi_epi8(none, none);
        /* 255 | 0xffffffff = -1: the lanes of no cluster */
        _mm_stream_si128((__m128i *)(labels + i),
                         _mm_or_si128(_mm_unpacklo_epi16(lo, zero), _mm_unpacklo_epi16(nlo, nlo)));
        _mm_stream_si128((__m128i *)(labels + i + 4),
                         _mm_or_si128(_mm_unpackhi_epi16(lo, zero), _mm_unpackhi_epi16(nlo, nlo)));
        _mm_stream_si128((__m128i *)(labels + i + 8),
                         _mm_or_si128(_mm_unpacklo_epi16(hi, zero), _mm_unpacklo_epi16(nhi, nhi)));
        _mm_stream_si128((__m128i *)(labels + i + 12),
                         _mm_or_si128(_mm_unpackhi_epi16(hi, zero), _mm_unpackhi_epi16(nhi, nhi)));
    }
    for (; i < n; i++)
        labels[i] = bytes[i] == 255 ? -1 : bytes[i];
    _mm_sfence();
}
#endif

void pc__hca_widen_labels(const uint8_t *bytes, size_t n, int32_t *labels)
{
    int nt = n >= PARALLEL_MIN && streaming(); /* (small outputs may well be read at once) */
    long slices = (long)((n + SLICE - 1) / SLICE);
    int team = copy_team();
    (void)nt;
    (void)team;
#pragma omp parallel for schedule(static) num_threads(team) if (n >= PARALLEL_MIN)
    for (long q = 0; q < slices; q++) {
        size_t off = (size_t)q * SLICE, len = n - off < SLICE ? n - off : SLICE;
#if defined(__SSE2__)
        if (nt) {
            widen_streaming(bytes + off, len, labels + off);
            continue;
        }
#endif
        for (size_t i = off; i < off + len; i++)
            labels[i] = bytes[i] == 255 ? -1 : bytes[i];
    }
}

void pc__hca_narrow_labels(const int32_t *labels, size_t n, uint8_t *bytes)
{
#pragma omp parallel for schedule(static) if (n >= PARALLEL_MIN)
    for (long i = 0; i < (long)n; i++)
        bytes[i] = labels[i] < 0 ? 255 : (uint8_t)labels[i];
}

void pc__hca_copy_parallel(void *dst, const void *src, size_t bytes)
{
    int nt = bytes >= PARALLEL_MIN && streaming();
    long slices = (long)((bytes + SLICE - 1) / SLICE);
    int team = copy_team();
    (void)nt;
    (void)team;
#pragma omp parallel for schedule(static) num_threads(team) if (slices > 4)
    for (long q = 0; q < slices; q++) {
        size_t off = (size_t)q * SLICE, len = bytes - off < SLICE ? bytes - off : SLICE;
#if defined(__SSE2__)
        if (nt) {
            copy_streaming((unsigned char *)dst + off, (const unsigned char *)src + off, len);
            continue;
        }
#endif
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}
