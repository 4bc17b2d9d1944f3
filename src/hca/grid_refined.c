/* HECA's members of packed uint8 pixels counted together, through the common refinement of their
 * grids. A member's cell coordinate in band j is a function of the byte value alone, so two values
 * that no member's boundary separates are in the same cell of every member: the 256 values of a band
 * fall into r_j intervals (at most the members' cells a side summed), and a pixel's interval in each
 * band gives its cell in every member. One AVX-512 pass counts the pixels per refined cell (the same
 * kernel as HCA's cell index, with the intervals for tables); each member's counts are then sums over
 * the refined cells, exact. Which members share a pass is chosen by a model of its cost: on
 * bench_hca's images, the default members 16, 19, 23, 27 and 32 take one pass for 3 bands where they
 * took five, and three for 4 bands: 16 with 32 (whose boundaries hold 16's: 32^4 cells), 19 with 23
 * (41^4), and 27 alone. */
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

/* The refined cells of members that can share a pass, else 0: within REFINED_MAX_CELLS (and the
 * threads' copies within the budget), and a grid of r cells a side that the AVX-512 pass counts (its
 * byte tables take r <= 127). */
static uint64_t shared_cells(const band_table *coordinate, const size_t *member, size_t count, const pc_points *p,
                             int threads, size_t memory_budget)
{
    band_table interval, first;
    int r = refine(coordinate, member, count, p->dim, interval, first);
    uint64_t total = power(r, p->dim);
    int fits = total <= REFINED_MAX_CELLS && total * sizeof(int32_t) * (uint64_t)threads <= memory_budget &&
               pc__hca_grid_vector_path(p, r);
    return fits ? total : 0;
}

/* A pass's cost in passes over the pixels: one, plus its counts' table (zeroed, counted into at random,
 * the threads' copies added) and each member's scan of it to sum its own counts. Measured on 100 Mpix
 * x 4 bands, 2 cores: a pass ~63 ms, ~9 ms more a million entries, ~0.85 ms a million entries for
 * each member summed from them. A member alone counts its own m^dim cells, with no scan. */
static double pass_cost(uint64_t entries, size_t members)
{
    return 1 + (double)entries * (1 + (members > 1 ? 0.1 * (double)members : 0)) / 7e6;
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
    /* Groups: members merged two groups at a time, the merge that saves the most modelled time first,
     * while one saves any (pass_cost). Shared passes do not pay for every grouping: 4-band refinements
     * of three members (50^4 cells and more) took as long as the members' own passes, while members
     * whose boundaries nearly coincide (m and 2m) share one at almost no cost. A member left alone keeps
     * its own pass (the caller's). */
    size_t member[PC_HECA_MAX_MEMBERS][PC_HECA_MAX_MEMBERS], size[PC_HECA_MAX_MEMBERS], groups = E;
    double cost[PC_HECA_MAX_MEMBERS];
    for (size_t a = 0; a < E; a++) {
        member[a][0] = eligible[a];
        size[a] = 1;
        cost[a] = pass_cost(totals[eligible[a]], 1);
    }
    for (;;) {
        size_t best_a = 0, best_b = 0, both[PC_HECA_MAX_MEMBERS];
        double saving = 0, merged = 0;
        for (size_t a = 0; a < groups; a++)
            for (size_t b = a + 1; b < groups; b++) {
                memcpy(both, member[a], size[a] * sizeof *both);
                memcpy(both + size[a], member[b], size[b] * sizeof *both);
                uint64_t total = shared_cells(coordinate, both, size[a] + size[b], p, threads, memory_budget);
                double c = total ? pass_cost(total, size[a] + size[b]) : 0;
                if (total && cost[a] + cost[b] - c > saving) {
                    saving = cost[a] + cost[b] - c;
                    merged = c;
                    best_a = a;
                    best_b = b;
                }
            }
        if (saving <= 0)
            break;
        memcpy(member[best_a] + size[best_a], member[best_b], size[best_b] * sizeof **member);
        size[best_a] += size[best_b];
        cost[best_a] = merged;
        groups--;
        memmove(member[best_b], member[best_b + 1], (groups - best_b) * sizeof *member);
        memmove(size + best_b, size + best_b + 1, (groups - best_b) * sizeof *size);
        memmove(cost + best_b, cost + best_b + 1, (groups - best_b) * sizeof *cost);
    }
    /* The shared passes, in the order of their first members (a group's members in list order). */
    size_t pass[PC_HECA_MAX_MEMBERS], passes = 0;
    for (size_t a = 0; a < groups; a++)
        if (size[a] >= 2) {
            for (size_t i = 1; i < size[a]; i++) /* insertion sort of the group's members */
                for (size_t j = i; j > 0 && member[a][j - 1] > member[a][j]; j--) {
                    size_t t = member[a][j];
                    member[a][j] = member[a][j - 1];
                    member[a][j - 1] = t;
                }
            pass[passes++] = a;
        }
    for (size_t i = 1; i < passes; i++)
        for (size_t j = i; j > 0 && member[pass[j - 1]][0] > member[pass[j]][0]; j--) {
            size_t t = pass[j];
            pass[j] = pass[j - 1];
            pass[j - 1] = t;
        }
    pc_status st = passes ? PC_OK : PC_UNSUPPORTED;
    /* Each pass reports its share of the tick's span: the first member's share of HECA's, so none of
     * it where member 0 keeps its own pass (its reports would come after, lower). */
    if (tick && !(passes && member[pass[0]][0] == 0))
        tick->to = tick->from;
    double from = tick ? tick->from : 0, span = tick ? tick->to - tick->from : 0;
    for (size_t q = 0; st == PC_OK && q < passes; q++) {
        size_t a = pass[q];
        if (tick) {
            tick->from = from + span * (double)q / (double)passes;
            tick->to = from + span * (double)(q + 1) / (double)passes;
        }
        st = count_group(grids, p, (const band_table *)coordinate, member[a], size[a], totals, memory_budget, threads,
                         tick);
        for (size_t i = 0; st == PC_OK && i < size[a]; i++)
            counted[member[a][i]] = 1;
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
