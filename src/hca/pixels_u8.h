/* 16 packed uint8 pixels of 3 or 4 bands as 16 lanes of 4 bytes, for HCA's AVX-512 kernels: the grid's
 * cell index (grid.c) and the label stage (label_u8.c). Band j of a pixel is byte 4 - dim + j of its
 * lane: 3-band pixels sit behind a byte of 0. They come from the 48 bytes of 16 pixels by vpermd
 * (dwords 3q .. 3q + 2 to 128-bit lane q) and vpshufb (each lane's 12 bytes to 4 pixels), so that no
 * VBMI is needed. Lanes not in `live` read nothing and are 0. */
#ifndef PC_HCA_PIXELS_U8_H
#define PC_HCA_PIXELS_U8_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __m512i
pc__hca_load_u8_pixels(const uint8_t *u8, size_t dim, size_t i, __mmask16 live)
{
    if (dim == 4)
        return _mm512_maskz_loadu_epi32(live, u8 + 4 * i);
    __mmask64 bytes = ((__mmask64)1 << (3 * __builtin_popcount(live))) - 1;
    __m512i packed = _mm512_maskz_loadu_epi8(bytes, u8 + 3 * i);
    const __m512i dwords = _mm512_setr_epi32(0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 9, 10, 11, 0);
    const __m512i spread =
        _mm512_broadcast_i32x4(_mm_setr_epi8(-128, 0, 1, 2, -128, 3, 4, 5, -128, 6, 7, 8, -128, 9, 10, 11));
    return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dwords, packed), spread);
}

#endif
