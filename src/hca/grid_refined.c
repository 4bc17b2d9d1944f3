/* HECA's members of packed uint8 pixels counted together, through the common refinement of their
 * grids. A member's cell coordinate in band j is a function of the byte value alone, so two values
 * that no member's boundary separates are in the same cell of every member: the 256 values of a band
 * fall into r_j intervals (at most the members' cells a side summed), and a pixel's interval in each
 * band gives its cell in every member. One AVX-512 pass counts the pixels per refined cell (the same
 * kernel as HCA's cell index, with the intervals for tables); each member's counts are then sums over
 * the refined cells, exact. Members share a pass while the refined cells stay within
 * REFINED_MAX_CELLS: on bench_hca's images the four members besides the reference (m 16, 19, 23, 27)
 * take one pass for 3 bands (76^3 refined cells) where they took four, and two for 4 bands (16, 19
 * and 23 in 56^4 cells; 27 alone, by the caller). */
#include "internal_hca.h"

#include <stdlib.h>

/* The refined cells' counts kept within this many entries (64 MiB of them), scanned once per member. */
#define REFINED_MAX_CELLS ((uint64_t)1 << 24)

typedef uint8_t band_table[PC__HCA_MAX_DIM][256];

/* The refinement of the members' coordinates (coordinate[member[i]]) in every band: interval[j][v], the
 * first value of each interval, and the largest number of intervals in a band (returned). */
static int refine(const band_table *coordinate, const size_t *member, size_t count, size_t dim, band_table interval,
                  band_table first)
{
    int r = 0;
    for (size_t j = 0; j < dim; j++) {
        int t = 0;
        first[j][0] = 0;
        interval[j][0] = 0;
        for (size_t v = 1; v < 256; v++) {
            int changed = 0;
            for (size_t i = 0; i < count; i++)
                changed |= coordinate[member[i]][j][v] != coordinate[member[i]][j][v - 1];
            if (changed)
                first[j][++t] = (uint8_t)v;
            interval[j][v] = (uint8_t)t;
        }
        r = t + 1 > r ? t + 1 : r;
    }
    return r;
}

static uint64_t power(int r, size_t dim)
{
    uint64_t total = 1;
    for (size_t j = 0; j < dim; j++)
        total *= (uint64_t)r;
    return total;
}

/* Whether the members can share a pass: their refined cells within REFINED_MAX_CELLS (and the
 * threads' copies within the budget), and a grid of r cells a side that the AVX-512 pass counts (its
 * byte tables take r <= 127). */
static int fits(const band_table *coordinate, const size_t *member, size_t count, const pc_points *p, int threads,
                size_t memory_budget)
{
    band_table interval, first;
    int r = refine(coordinate, member, count, p->dim, interval, first);
    uint64_t total = power(r, p->dim);
    return total <= REFINED_MAX_CELLS && total * sizeof(int32_t) * (uint64_t)threads <= memory_budget &&
           pc__hca_grid_vector_path(p, r);
}

/* One pass for the members of a group: their dense grids from the refined cells' counts. */
static pc_status count_group(pc__hca_grid *const *grids, const pc_points *p, const band_table *coordinate,
                             const size_t *member, size_t count, const uint64_t *totals, size_t memory_budget,
                             int threads, struct pc__hca_tick *tick)
{
    size_t dim = p->dim;
    band_table interval, first;
    int r = refine(coordinate, member, count, dim, interval, first);
    uint64_t total = power(r, dim);
    /* The pass's byte tables: band j at 4 - dim + j (3 bands: table 0 stays 0). */
    uint8_t table[4 * 256] = {0};
    for (size_t j = 0; j < dim; j++)
        for (size_t v = 0; v < 256; v++)
            table[(4 - dim + j) * 256 + v] = interval[j][v];
    int32_t *cells = pc__calloc((size_t)total, sizeof *cells, "HECA refined cells");
    if (!cells)
        return PC_OUT_OF_MEMORY;
    pc_status st = pc__hca_count_u8_coords(p, table, r, threads, tick, cells, total, memory_budget);
    /* Each member's counts from the refined cells' (the last band varying fastest in both). */
    for (size_t i = 0; st == PC_OK && i < count; i++) {
        size_t l = member[i];
        pc__hca_grid *g = grids[l];
        st = PC_OUT_OF_MEMORY;
        if (!(g->slot = pc__calloc((size_t)totals[l], sizeof *g->slot, "HCA dense grid")))
            break;
        for (uint64_t c = 0; c < total; c++) {
            if (!cells[c])
                continue;
            uint64_t key = 0, rest = c;
            for (size_t j = dim; j-- > 0;) {
                key += (uint64_t)coordinate[l][j][first[j][rest % (uint64_t)r]] * g->stride[j];
                rest /= (uint64_t)r;
            }
            g->slot[key] += cells[c];
        }
        if ((st = pc__hca_grid_dense_cells(g, totals[l])) == PC_OK)
            pc__hca_grid_deltas(g);
    }
    free(cells);
    return st;
}

pc_status pc__hca_grids_count_refined(pc__hca_grid *const *grids, size_t L, const pc_points *p, const int *m,
                                      const double (*lo)[PC__HCA_MAX_DIM], const double (*hi)[PC__HCA_MAX_DIM],
                                      size_t memory_budget, int threads, size_t skip, struct pc__hca_tick *tick,
                                      int *counted)
{
    size_t dim = p->dim;
    for (size_t l = 0; l < L; l++)
        counted[l] = 0;
    if (p->dtype != PC_U8 || (dim != 3 && dim != 4) || pc__hca_row_bytes(p) != dim || L < 3 ||
        L > PC_HECA_MAX_MEMBERS)
        return PC_UNSUPPORTED;
    /* The members that can take part: dense grids; every value's coordinate in each. */
    uint64_t totals[PC_HECA_MAX_MEMBERS];
    size_t eligible[PC_HECA_MAX_MEMBERS], E = 0;
    band_table *coordinate = malloc(L * sizeof *coordinate);
    if (!coordinate)
        return PC_UNSUPPORTED;
    for (size_t l = 0; l < L; l++) {
        if (l == skip)
            continue;
        pc__hca_grid *g = grids[l];
        if (pc__hca_grid_begin(g, p, m[l], lo[l], hi[l], memory_budget, threads, &totals[l]) != PC_OK) {
            pc__clear_error();
            continue;
        }
        if (!g->dense)
            continue;
        for (size_t j = 0; j < dim; j++)
            pc__hca_band_coordinates(g, j, coordinate[l][j]);
        eligible[E++] = l;
    }
    /* Groups in list order, each as large as its refined cells allow; a member left alone keeps its own
     * pass (the caller's). */
    size_t first_of[PC_HECA_MAX_MEMBERS], end_of[PC_HECA_MAX_MEMBERS], groups = 0;
    for (size_t a = 0; a < E;) {
        size_t b = a + 1;
        while (b < E && fits(coordinate, eligible + a, b + 1 - a, p, threads, memory_budget))
            b++;
        if (b - a >= 2) {
            first_of[groups] = a;
            end_of[groups++] = b;
        }
        a = b;
    }
    pc_status st = groups ? PC_OK : PC_UNSUPPORTED;
    /* Each group's pass reports its share of the tick's span: the first member's share of HECA's, so
     * none of it where member 0 keeps its own pass (its reports would come after, lower). */
    if (tick && !(groups && eligible[first_of[0]] == 0))
        tick->to = tick->from;
    double from = tick ? tick->from : 0, span = tick ? tick->to - tick->from : 0;
    for (size_t q = 0; st == PC_OK && q < groups; q++) {
        size_t a = first_of[q], b = end_of[q];
        if (tick) {
            tick->from = from + span * (double)q / (double)groups;
            tick->to = from + span * (double)(q + 1) / (double)groups;
        }
        st = count_group(grids, p, (const band_table *)coordinate, eligible + a, b - a, totals, memory_budget,
                         threads, tick);
        for (size_t i = a; st == PC_OK && i < b; i++)
            counted[eligible[i]] = 1;
    }
    if (st != PC_OK && st != PC_UNSUPPORTED)
        for (size_t l = 0; l < L; l++) {
            if (l != skip)
                pc__hca_grid_free(grids[l]);
            counted[l] = 0;
        }
    free(coordinate);
    return st;
}
