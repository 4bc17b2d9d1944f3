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

/* The linear cell index of 16 pixels as pc__hca_load_u8_pixels gives them, from per-band byte tables
 * of cell coordinates (c < m <= 127: table[j][q] holds values 64q .. 64q + 63 of the band in byte j of
 * a lane), looked up 64 bytes at once with byte permutes (vpermt2b: 128 entries from two registers,
 * twice for the 256 values, the value's top bit picking the half). Two multiply-adds then give
 * (c0 m + c1) m^2 + (c2 m + c3) = sum c_j m^(3-j), exactly (integers, no rounding). 3-band pixels come
 * behind a byte of 0 whose table is all 0: (0 m + c0) m^2 + (c1 m + c2). mul_bytes, mul_words: from
 * pc__hca_u8_index_factors. */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) __m512i
pc__hca_u8_cell_index(__m512i v, const __m512i table[4][4], __m512i mul_bytes, __m512i mul_words)
{
    const __mmask64 band = 0x1111111111111111ull;
    __mmask64 top = _mm512_movepi8_mask(v);
    __m512i c = _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) {
        __m512i low = _mm512_permutex2var_epi8(table[j][0], v, table[j][1]);
        __m512i high = _mm512_permutex2var_epi8(table[j][2], v, table[j][3]);
        c = _mm512_mask_mov_epi8(c, (band << j) & ~top, low);
        c = _mm512_mask_mov_epi8(c, (band << j) & top, high);
    }
    return _mm512_madd_epi16(_mm512_maddubs_epi16(c, mul_bytes), mul_words);
}

/* pc__hca_u8_cell_index's tables from coord (4 x 256 bytes: band byte j's coordinate of every value)
 * and its factors for m cells a side. */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) void
pc__hca_u8_index_factors(const uint8_t *coord, int m, __m512i table[4][4], __m512i *mul_bytes, __m512i *mul_words)
{
    for (int j = 0; j < 4; j++)
        for (int q = 0; q < 4; q++)
            table[j][q] = _mm512_loadu_si512(coord + j * 256 + q * 64);
    *mul_bytes = _mm512_set1_epi32(m | 1 << 8 | m << 16 | 1 << 24);
    *mul_words = _mm512_set1_epi32(m * m | 1 << 16);
}

#endif
