/* A uniform grid hash over points: the points sorted by cell, and a hash table from integer cell
 * coordinates to cells. Neighbour searches (mean shift's finite radius, merging modes) visit only the
 * cells around a point, so their work grows with the neighbours, not with N. */
#ifndef PC_GRID_H
#define PC_GRID_H

#include "parclust.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t n, dim;
    double side;          /* cell side in data units */
    double *origin;       /* dim: the smallest coordinate in each dimension */
    size_t cells;         /* occupied cells */
    int32_t *coords;      /* cells x dim integer cell coordinates */
    size_t *start;        /* cells + 1: cell c holds sorted points start[c] .. start[c+1]-1 */
    size_t *order;        /* n: original index of the i-th point in cell order */
    size_t *table;        /* open-addressing hash, cell index + 1, 0 = empty */
    size_t table_mask;
} pc__grid;

/* Buckets n points (packed rows of dim floats) into cells of the given side. Cells are numbered in
 * the order of their first point, so the grid is the same for the same input. Fails with
 * PC_UNSUPPORTED when the data span too many cells for 32-bit coordinates. threads: OpenMP threads for
 * locating the points (0: OpenMP's default, 1: this thread alone); the grid is the same for any. */
pc_status pc__grid_build(pc__grid *grid, const float *points, size_t n, size_t dim, double side, int threads);
void pc__grid_free(pc__grid *grid);

/* Cell coordinates of any position (inside the data or not); returns 0 when they do not fit in 32 bits
 * (the position is then far from every cell). */
int pc__grid_locate(const pc__grid *grid, const float *position, int32_t *coords);
/* Index of the cell with these coordinates, or -1 if it holds no points. */
long pc__grid_find(const pc__grid *grid, const int32_t *coords);

/* Most cells pc__grid_neighbours can return for a reach: min((2 reach + 1)^dim, cells). */
size_t pc__grid_neighbour_capacity(const pc__grid *grid, int reach);
/* Writes the occupied cells whose coordinates differ from `coords` by at most `reach` in every
 * dimension into out (capacity from pc__grid_neighbour_capacity), in increasing cell order, and
 * returns their number. offset_scratch holds dim ints. Enumerates the (2 reach + 1)^dim candidate
 * cells when they are fewer than the occupied cells, else scans the occupied cells. */
size_t pc__grid_neighbours(const pc__grid *grid, const int32_t *coords, int reach, int32_t *scratch,
                           size_t *out);

#endif
