/* 16 packed uint8 pixels of 3 or 4 bands as 16 lanes of 4 bytes, for HCA's AVX-512 kernels: the grid's
 * cell index (grid.c) and the label stage (label_u8.c). Band j of a pixel is byte 4 - dim + j of its
 * lane: 3-band pixels sit behind a byte of 0. They come from the 48 bytes of 16 pixels by vpermd
 * (dwords 3q .. 3q + 2 to 128-bit lane q) and vpshufb (each lane's 12 bytes to 4 pixels), so that no
 * VBMI is needed. Lanes not in `live` read nothing and are 0. */
#ifndef PC_HCA_PIXELS_U8_H
#define PC_HCA_PIXELS_U8_H

#include "internal_hca.h"

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

/* The cells of packed uint8 pixels in a pc__hca_u8_grid (internal_hca.h): each band's coordinate c_j,
 * two ways, both exact (integers, no rounding):
 * - affine (min(floor(max(v - off, 0) 2^shift mul / 2^16), m - 1) a band, which holds for most grids
 *   over the pixels' own box: not where the doubles' rounding puts a value on a boundary in the cell
 *   below in a way no mul reproduces): 12 instructions for 16 pixels;
 * - the tables, looked up 64 bytes at once with byte permutes (vpermt2b: 128 entries from two
 *   registers, twice for the 256 values, the value's top bit picking the half): 25 instructions.
 * The coordinates then give the linear cell index sum_j c_j m^(3-j) (pc__hca_u8_cell_index), or the
 * counting passes' index of the same cell in blocks (pc__hca_u8_block_index). */
typedef struct {
    int affine;
    __m512i off, shift_even, shift_odd, mul_even, mul_odd, top; /* affine: bytes 0 and 2 in the even
                                                                 * words, 1 and 3 odd */
    __m512i table[4][4];                          /* else: table[j][q] holds values 64q .. 64q + 63 of byte j */
    __m512i mul_bytes, mul_words;                 /* (c0 m + c1) m^2 + (c2 m + c3) */
    __m512i block_bytes, block_words, within_bytes; /* pc__hca_u8_block_index */
    int block_shift;
} pc__hca_u8_cells;

static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) void
pc__hca_u8_cells_init(pc__hca_u8_cells *c, const pc__hca_u8_grid *u, size_t dim)
{
    int m = u->m, half = (m + 1) / 2;
    c->affine = u->affine;
    c->off = _mm512_set1_epi32((int)(u->off[0] | u->off[1] << 8 | u->off[2] << 16 | (uint32_t)u->off[3] << 24));
    c->shift_even = _mm512_set1_epi32((int)(u->shift[0] | (uint32_t)u->shift[2] << 16));
    c->shift_odd = _mm512_set1_epi32((int)(u->shift[1] | (uint32_t)u->shift[3] << 16));
    c->mul_even = _mm512_set1_epi32((int)(u->mul[0] | (uint32_t)u->mul[2] << 16));
    c->mul_odd = _mm512_set1_epi32((int)(u->mul[1] | (uint32_t)u->mul[3] << 16));
    c->top = _mm512_set1_epi16((short)(m - 1));
    for (int j = 0; j < 4; j++)
        for (int q = 0; q < 4; q++)
            c->table[j][q] = _mm512_loadu_si512(u->coord + j * 256 + q * 64);
    c->mul_bytes = _mm512_set1_epi32(m | 1 << 8 | m << 16 | 1 << 24);
    c->mul_words = _mm512_set1_epi32(m * m | 1 << 16);
    c->block_bytes = _mm512_set1_epi32(half | 1 << 8 | half << 16 | 1 << 24);
    c->block_words = _mm512_set1_epi32(half * half | 1 << 16);
    /* 3-band pixels' first byte is the padding, whose coordinate is 0: 8 cells a block */
    c->within_bytes = _mm512_set1_epi32((dim == 4 ? 8 : 0) | 4 << 8 | 2 << 16 | 1 << 24);
    c->block_shift = (int)dim;
}

/* The coordinates of 16 pixels as pc__hca_load_u8_pixels gives them, c_j in byte j of each lane (the
 * 3-band pixels' padding byte: 0). */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) __m512i
pc__hca_u8_coords(__m512i v, const pc__hca_u8_cells *c)
{
    if (c->affine) {
        __m512i d = _mm512_subs_epu8(v, c->off);
        __m512i even = _mm512_sllv_epi16(_mm512_and_si512(d, _mm512_set1_epi16(0xff)), c->shift_even);
        __m512i odd = _mm512_sllv_epi16(_mm512_srli_epi16(d, 8), c->shift_odd);
        even = _mm512_min_epu16(_mm512_mulhi_epu16(even, c->mul_even), c->top);
        odd = _mm512_min_epu16(_mm512_mulhi_epu16(odd, c->mul_odd), c->top);
        return _mm512_or_si512(even, _mm512_slli_epi16(odd, 8));
    }
    const __mmask64 band = 0x1111111111111111ull;
    __mmask64 top = _mm512_movepi8_mask(v);
    __m512i coords = _mm512_setzero_si512();
    for (int j = 0; j < 4; j++) {
        __m512i low = _mm512_permutex2var_epi8(c->table[j][0], v, c->table[j][1]);
        __m512i high = _mm512_permutex2var_epi8(c->table[j][2], v, c->table[j][3]);
        coords = _mm512_mask_mov_epi8(coords, (band << j) & ~top, low);
        coords = _mm512_mask_mov_epi8(coords, (band << j) & top, high);
    }
    return coords;
}

/* The linear cell index of pc__hca_u8_coords' coordinates. */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) __m512i
pc__hca_u8_coords_index(__m512i coords, const pc__hca_u8_cells *c)
{
    return _mm512_madd_epi16(_mm512_maddubs_epi16(coords, c->mul_bytes), c->mul_words);
}

/* The linear cell index of 16 pixels as pc__hca_load_u8_pixels gives them. */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) __m512i
pc__hca_u8_cell_index(__m512i v, const pc__hca_u8_cells *c)
{
    return pc__hca_u8_coords_index(pc__hca_u8_coords(v, c), c);
}

/* The index of the same cell where the counting pass keeps its counts (grid.c: count_u8_coords):
 * blocks of 2 cells a side, 2^dim cells each (c_j mod 2 in bit dim - 1 - j), numbered as a grid of
 * ceil(m / 2) blocks a side. A cache line of counts then holds a 2 x 2 x 2 x 2 box of cells (2 x 2 x 4
 * of 3 bands) instead of 16 along the last band, so that a cluster's cells, a ball in the grid, take
 * fewer lines: its counts stay in the first-level cache more often. */
static inline __attribute__((target("arch=x86-64-v4,avx512vbmi"), always_inline)) __m512i
pc__hca_u8_block_index(__m512i coords, const pc__hca_u8_cells *c)
{
    __m512i within = _mm512_and_si512(coords, _mm512_set1_epi8(1));
    __m512i block = _mm512_and_si512(_mm512_srli_epi16(coords, 1), _mm512_set1_epi8(0x7f));
    block = _mm512_madd_epi16(_mm512_maddubs_epi16(block, c->block_bytes), c->block_words);
    within = _mm512_madd_epi16(_mm512_maddubs_epi16(within, c->within_bytes), _mm512_set1_epi16(1));
    return _mm512_add_epi32(_mm512_slli_epi32(block, (unsigned)c->block_shift), within);
}

#endif
