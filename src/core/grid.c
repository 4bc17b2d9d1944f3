/* Uniform grid hash; see grid.h. */
#include "grid.h"

#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this many values the build runs on one thread (a parallel region costs more). */
#define PARALLEL_MIN 65536
/* Coordinates located at once: a chunk of points of at most this many values. */
#define LOCATE_CHUNK_VALUES ((size_t)1 << 20)

static uint64_t hash_coords(const int32_t *c, size_t dim)
{
    uint64_t h = 0x243F6A8885A308D3ull;
    for (size_t j = 0; j < dim; j++) {
        h ^= (uint64_t)(uint32_t)c[j];
        h *= 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    return h;
}

int pc__grid_locate(const pc__grid *g, const float *p, int32_t *coords)
{
    for (size_t j = 0; j < g->dim; j++) {
        double c = floor(((double)p[j] - g->origin[j]) / g->side);
        if (!(c >= -2147483000.0 && c <= 2147483000.0))
            return 0;
        coords[j] = (int32_t)c;
    }
    return 1;
}

long pc__grid_find(const pc__grid *g, const int32_t *coords)
{
    size_t slot = (size_t)hash_coords(coords, g->dim) & g->table_mask;
    for (;;) {
        size_t v = g->table[slot];
        if (v == 0)
            return -1;
        if (memcmp(g->coords + (v - 1) * g->dim, coords, g->dim * sizeof *coords) == 0)
            return (long)(v - 1);
        slot = (slot + 1) & g->table_mask;
    }
}

void pc__grid_free(pc__grid *g)
{
    free(g->origin);
    free(g->coords);
    free(g->start);
    free(g->order);
    free(g->table);
    memset(g, 0, sizeof *g);
}

pc_status pc__grid_build(pc__grid *g, const float *points, size_t n, size_t dim, double side, int threads)
{
    memset(g, 0, sizeof *g);
    g->n = n;
    g->dim = dim;
    g->side = side;
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    g->table_mask = cap - 1;
    size_t *cell_of = pc__alloc(n, sizeof *cell_of, "grid cell index");
    int32_t *pc = pc__alloc(n, dim * sizeof *pc, "grid coordinates");
    g->origin = pc__alloc(dim, sizeof *g->origin, "grid origin");
    g->table = pc__calloc(cap, sizeof *g->table, "grid hash table");
    g->order = pc__alloc(n, sizeof *g->order, "grid order");
    if (!cell_of || !pc || !g->origin || !g->table || !g->order)
        goto oom;
    int team = threads > 0 ? threads : pc_openmp_max_threads();
    (void)team;
    for (size_t j = 0; j < dim; j++) {
        double lo = INFINITY;
#pragma omp parallel for num_threads(team) reduction(min : lo) schedule(static) if (team > 1 && n >= PARALLEL_MIN)
        for (size_t i = 0; i < n; i++)
            lo = points[i * dim + j] < lo ? points[i * dim + j] : lo;
        g->origin[j] = lo;
    }
    /* Points are located (coordinates and hash) by all threads a chunk at a time, then entered in
     * their order by one, so that cells are numbered by their first point as before; the coordinates
     * of a new cell are appended to the cells' array, which is then shrunk. */
    size_t chunk = dim < LOCATE_CHUNK_VALUES ? LOCATE_CHUNK_VALUES / dim : 1;
    chunk = chunk < n ? chunk : n;
    int32_t *located = pc__alloc(chunk ? chunk : 1, dim * sizeof *located, "grid coordinates");
    uint64_t *hashes = pc__alloc(chunk ? chunk : 1, sizeof *hashes, "grid hashes");
    if (!located || !hashes) {
        free(located);
        free(hashes);
        goto oom;
    }
    g->coords = pc;
    for (size_t base = 0; base < n; base += chunk) {
        size_t m = n - base < chunk ? n - base : chunk;
        int outside = 0;
#pragma omp parallel for num_threads(team) reduction(| : outside) schedule(static) if (team > 1 && m * dim >= PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) {
            if (pc__grid_locate(g, points + (base + i) * dim, located + i * dim))
                hashes[i] = hash_coords(located + i * dim, dim);
            else
                outside = 1;
        }
        if (outside) {
            free(located);
            free(hashes);
            free(cell_of);
            pc__grid_free(g);
            return pc__fail(PC_UNSUPPORTED, "the data span too many grid cells of side %g", side);
        }
        for (size_t i = 0; i < m; i++) {
            const int32_t *c = located + i * dim;
            size_t slot = (size_t)hashes[i] & g->table_mask;
            for (;;) {
                size_t v = g->table[slot];
                if (v == 0) {
                    memcpy(pc + g->cells * dim, c, dim * sizeof *c);
                    g->table[slot] = ++g->cells;
                    cell_of[base + i] = g->cells - 1;
                    break;
                }
                if (memcmp(pc + (v - 1) * dim, c, dim * sizeof *c) == 0) {
                    cell_of[base + i] = v - 1;
                    break;
                }
                slot = (slot + 1) & g->table_mask;
            }
        }
    }
    free(located);
    free(hashes);
    int32_t *shrunk = realloc(g->coords, (g->cells ? g->cells : 1) * dim * sizeof *shrunk);
    if (shrunk)
        g->coords = pc = shrunk; /* pc follows, so the error path below frees it once */
    g->start = pc__calloc(g->cells + 1, sizeof *g->start, "grid cell starts");
    if (!g->start)
        goto oom;
    /* Counting sort by cell keeps points of a cell in their original order. */
    for (size_t i = 0; i < n; i++)
        g->start[cell_of[i] + 1]++;
    for (size_t c = 0; c < g->cells; c++)
        g->start[c + 1] += g->start[c];
    for (size_t i = 0; i < n; i++)
        g->order[g->start[cell_of[i]]++] = i;
    for (size_t c = g->cells; c > 0; c--)
        g->start[c] = g->start[c - 1];
    g->start[0] = 0;
    free(cell_of);
    return PC_OK;
oom:
    free(cell_of);
    if (g->coords != pc)
        free(pc);
    pc__grid_free(g);
    return PC_OUT_OF_MEMORY;
}

static double candidate_count(size_t dim, int reach)
{
    return pow(2.0 * reach + 1.0, (double)dim);
}

size_t pc__grid_neighbour_capacity(const pc__grid *g, int reach)
{
    double c = candidate_count(g->dim, reach);
    return c < (double)g->cells ? (size_t)c : g->cells;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

size_t pc__grid_neighbours(const pc__grid *g, const int32_t *coords, int reach, int32_t *scratch,
                           size_t *out)
{
    size_t dim = g->dim, count = 0;
    if (candidate_count(dim, reach) >= (double)g->cells) {
        for (size_t c = 0; c < g->cells; c++) {
            const int32_t *cc = g->coords + c * dim;
            size_t j = 0;
            while (j < dim && llabs((long long)cc[j] - coords[j]) <= reach)
                j++;
            if (j == dim)
                out[count++] = c;
        }
        return count;
    }
    /* Odometer over the offsets -reach..reach in every dimension. */
    for (size_t j = 0; j < dim; j++)
        scratch[j] = coords[j] - reach;
    for (;;) {
        long c = pc__grid_find(g, scratch);
        if (c >= 0)
            out[count++] = (size_t)c;
        size_t j = 0;
        while (j < dim && scratch[j] == coords[j] + reach) {
            scratch[j] = coords[j] - reach;
            j++;
        }
        if (j == dim)
            break;
        scratch[j]++;
    }
    /* Increasing cell order makes the summation order, and so the rounding, independent of how
     * the neighbours were found. */
    qsort(out, count, sizeof *out, cmp_size);
    return count;
}
