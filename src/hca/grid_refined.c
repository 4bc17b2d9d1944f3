/* HECA's members of packed uint8 pixels counted in one pass, through the common refinement of their
 * grids. A member's cell coordinate in band j is a function of the byte value alone, so two values
 * that no member's boundary separates are in the same cell of every member: the 256 values of a band
 * fall into r_j intervals (at most the members' cells a side summed), and a pixel's interval in each
 * band gives its cell in every member. One AVX-512 pass counts the pixels per refined cell (the same
 * kernel as HCA's cell index, with the intervals for tables); each member's counts are then sums over
 * the refined cells, exact. Five members of 3-band pixels: about 113^3 refined cells, where they cost a
 * pass over the image each. With 4 bands the refinement is too large (113^4): the members keep their
 * own passes. */
#include "internal_hca.h"

#include <stdlib.h>

/* The refined cells' counts kept within this many entries (64 MiB): scanned once per member. */
#define REFINED_MAX_CELLS ((uint64_t)1 << 24)

pc_status pc__hca_grids_count_refined(pc__hca_grid *const *grids, size_t L, const pc_points *p, const int *m,
                                      const double (*lo)[PC__HCA_MAX_DIM], const double (*hi)[PC__HCA_MAX_DIM],
                                      size_t memory_budget, int threads, size_t skip, struct pc__hca_tick *tick)
{
    size_t dim = p->dim;
    if (p->dtype != PC_U8 || (dim != 3 && dim != 4) || pc__hca_row_bytes(p) != dim || L < 2 ||
        L > PC_HECA_MAX_MEMBERS)
        return PC_UNSUPPORTED;
    uint64_t totals[PC_HECA_MAX_MEMBERS];
    for (size_t l = 0; l < L; l++) {
        if (l == skip)
            continue;
        if (pc__hca_grid_begin(grids[l], p, m[l], lo[l], hi[l], memory_budget, threads, &totals[l]) != PC_OK) {
            pc__clear_error();
            return PC_UNSUPPORTED;
        }
        if (!grids[l]->dense)
            return PC_UNSUPPORTED;
    }
    /* Every member's coordinate of every value, and the refined intervals: a new one wherever some
     * member's coordinate changes from the value before. first[j][t]: interval t's first value. */
    static const size_t V = 256;
    uint8_t (*coordinate)[PC__HCA_MAX_DIM][256] = malloc(L * sizeof *coordinate);
    uint8_t interval[PC__HCA_MAX_DIM][256], first[PC__HCA_MAX_DIM][256];
    if (!coordinate)
        return PC_UNSUPPORTED;
    int r = 0;
    for (size_t j = 0; j < dim; j++) {
        int t = 0;
        for (size_t v = 0; v < V; v++) {
            int changed = v == 0;
            for (size_t l = 0; l < L; l++) {
                if (l == skip)
                    continue;
                const pc__hca_grid *g = grids[l];
                coordinate[l][j][v] = (uint8_t)pc__hca_cell_coordinate((double)v, g->lo[j], g->hi[j], g->m);
                changed |= v > 0 && coordinate[l][j][v] != coordinate[l][j][v - 1];
            }
            if (changed && v > 0)
                t++;
            if (changed)
                first[j][t] = (uint8_t)v;
            interval[j][v] = (uint8_t)t;
        }
        r = t + 1 > r ? t + 1 : r;
    }
    uint64_t total = 1;
    for (size_t j = 0; j < dim; j++)
        total *= (uint64_t)r;
    pc_status st = PC_UNSUPPORTED;
    int32_t *count = NULL;
    if (r > 127 || total > REFINED_MAX_CELLS || total * sizeof(int32_t) * (uint64_t)threads > memory_budget ||
        !pc__hca_grid_vector_path(p, r))
        goto done;
    /* The byte tables of the pass: band j at 4 - dim + j (3 bands: table 0 stays 0). */
    uint8_t table[4 * 256] = {0};
    for (size_t j = 0; j < dim; j++)
        for (size_t v = 0; v < V; v++)
            table[(4 - dim + j) * 256 + v] = interval[j][v];
    st = PC_OUT_OF_MEMORY;
    if (!(count = pc__calloc((size_t)total, sizeof *count, "HECA refined cells")))
        goto done;
    if ((st = pc__hca_count_u8_coords(p, table, r, threads, tick, count, total, memory_budget)) != PC_OK)
        goto done;
    /* Each member's counts from the refined cells' (the last band varying fastest in both). */
    for (size_t l = 0; l < L; l++) {
        if (l == skip)
            continue;
        pc__hca_grid *g = grids[l];
        st = PC_OUT_OF_MEMORY;
        if (!(g->slot = pc__calloc((size_t)totals[l], sizeof *g->slot, "HCA dense grid")))
            goto done;
        for (uint64_t c = 0; c < total; c++) {
            if (!count[c])
                continue;
            uint64_t key = 0, rest = c;
            for (size_t j = dim; j-- > 0;) {
                key += (uint64_t)coordinate[l][j][first[j][rest % (uint64_t)r]] * g->stride[j];
                rest /= (uint64_t)r;
            }
            g->slot[key] += count[c];
        }
        if ((st = pc__hca_grid_dense_cells(g, totals[l])) != PC_OK)
            goto done;
        pc__hca_grid_deltas(g);
    }
    st = PC_OK;
done:
    if (st != PC_OK && st != PC_UNSUPPORTED)
        for (size_t l = 0; l < L; l++)
            if (l != skip)
                pc__hca_grid_free(grids[l]);
    free(coordinate);
    free(count);
    return st;
}
