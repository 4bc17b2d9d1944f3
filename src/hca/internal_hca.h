/* What the HCA files share: the grid of non-empty cells, the component graph and the cut. */
#ifndef PC_HCA_INTERNAL_H
#define PC_HCA_INTERNAL_H

#include "../core/internal.h"
#include "refine_climb.h"

#include <stdlib.h>
#include <string.h>

#define PC__HCA_MAX_DIM 8

typedef struct {
    size_t n, dim;
    int m;
    int threads;  /* OpenMP threads; 1 = sequential */
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    uint64_t stride[PC__HCA_MAX_DIM]; /* m^(dim-1-j): the last dimension varies fastest */
    int dense;    /* 1: points carry linear cell indices and slot[] maps them to cells */
    int32_t *slot; /* dense: m^dim entries, the non-empty cell of a linear index or -1 */
    int32_t *first_seen_to_cell; /* sparse: points carry first-seen ids, mapped to cells here */
    size_t cells; /* non-empty cells, numbered by increasing linear index */
    uint64_t *key;    /* cells: linear index */
    int64_t *density; /* cells: points in the cell */
    int64_t *cell_sums; /* cells x dim: each cell's sums of its points' values, where the counting pass
                         * summed them too (pc__hca_grid_build_box's sums), else NULL */
    int64_t *delta;   /* index offsets of the 3^dim - 1 neighbours of an interior cell (or NULL) */
    size_t deltas;
    struct pc__hca_tick *tick; /* optional: progress and cancellation within passes (hca.c) */
} pc__hca_grid;

/* HCA's progress (params->progress, hca.c). pc__hca_progress reports a stage's end from the calling
 * thread: PC_CANCELLED, with the error set, when the callback says stop. Within a pass over points, any
 * thread calls pc__hca_tick_at(tick, i, n) per point (or block) i of n: the calling thread (thread 0 of
 * the team it started) reports at most every 10 ms, the fraction mapped into [from, to]; once the
 * callback says stop, every thread gets 1 and skips the rest, and the pass's caller returns
 * pc__hca_tick_status. A NULL tick never cancels. */
struct pc__hca_tick {
    const pc_hca_params *params;
    double from, to; /* the fractions the pass under way spans */
    double last_time;
    int cancelled;   /* written by the calling thread, read by all (__atomic) */
};
pc_status pc__hca_progress(const pc_hca_params *params, double fraction);
int pc__hca_tick_report(struct pc__hca_tick *tick, size_t done, size_t total);
static inline int pc__hca_tick_at(struct pc__hca_tick *tick, size_t done, size_t total)
{
    if (!tick)
        return 0;
    if (__atomic_load_n(&tick->cancelled, __ATOMIC_RELAXED))
        return 1;
    return (done & 63) == 0 && pc__hca_tick_report(tick, done, total);
}
pc_status pc__hca_tick_status(const struct pc__hca_tick *tick);
/* The tick pc__hca_grid_build_box gives the grid it builds (pc_hca's counting pass): set by pc_hca on
 * the calling thread around the build, NULL otherwise. */
extern __thread struct pc__hca_tick *pc__hca_grid_tick;

/* Value j of a row of any type. */
static inline double pc__hca_value(const unsigned char *row, pc_dtype t, size_t j)
{
    switch (t) {
    case PC_F32: { float v; memcpy(&v, row + 4 * j, 4); return v; }
    case PC_F64: { double v; memcpy(&v, row + 8 * j, 8); return v; }
    case PC_U16: { uint16_t v; memcpy(&v, row + 2 * j, 2); return v; }
    default: return row[j];
    }
}
/* Bytes from one row to the next. */
size_t pc__hca_row_bytes(const pc_points *points);

/* The parameters' checks shared by pc_hca and the stream (dim: 1 to PC__HCA_MAX_DIM). */
pc_status pc__hca_check_params(const pc_hca_params *params, size_t dim);
/* The minimum cluster size: the user's, or by default 0.1% of the n points, at least 2. */
int64_t pc__hca_min_size(const pc_hca_params *params, uint64_t n);

/* Cell coordinate of value x in a dimension spanning [lo, hi] cut into m cells (step 1). */
int pc__hca_cell_coordinate(double x, double lo, double hi, int m);
/* coordinate[v] = pc__hca_cell_coordinate(v, lo, hi, m) for v < values: the integer types' tables. */
void pc__hca_coordinate_table(double lo, double hi, int m, size_t values, uint16_t *coordinate);

/* Bounding box, cell of every point (kept in `scratch`, n entries, meant to be the labels array),
 * densities. Dense arrays when m^dim int32 slots fit memory_budget. */
pc_status pc__hca_grid_build(pc__hca_grid *g, const pc_points *points, int m, size_t memory_budget, int threads,
                             int32_t *scratch);
void pc__hca_grid_free(pc__hca_grid *g);
/* HECA and HCA-MS (src/heca/, src/hca/refine.c): the grid over a given box (its members share one box,
 * some shifted by half a cell), the box alone, the labelling of pc_hca, and the border refinement.
 * scratch NULL: the counts only, without writing each point's cell (n x 4 bytes a member saved).
 * sums: the cells' sums wanted (HCA-MS's means): where the counting pass can add them as it goes
 * (packed 3- or 4-band uint8 on the AVX-512 path, a small dense grid, with scratch), g->cell_sums; else
 * it stays NULL and the caller sums in a pass of its own (cell_sums.c). */
pc_status pc__hca_grid_build_box(pc__hca_grid *g, const pc_points *points, int m, const double *lo, const double *hi,
                                 size_t memory_budget, int threads, int32_t *scratch, int sums);
void pc__hca_bounding_box(const pc_points *points, int threads, double *lo, double *hi);
/* The non-empty cell of each point: scratch[i] as the grid build left it, mapped. */
static inline int32_t pc__hca_cell_of(const pc__hca_grid *g, const int32_t *scratch, size_t i)
{
    return g->dense ? g->slot[(uint32_t)scratch[i]] : g->first_seen_to_cell[scratch[i]];
}
/* HCA-MS (ALGORITHMS.md 3b): the border points of the cut and the clusters their climbs reach, found
 * before the labelling (scratch: the grid's per-point cells), or listed by it (pc__hca_refine_climbs
 * after pc__hca_label_points); applied after it, sums kept right. */
typedef struct {
    size_t count;     /* border points */
    int32_t *index;   /* count: the points */
    int32_t *cluster; /* count: the cluster each reaches */
} pc__hca_border;
/* Applies the border's clusters to labels, moving each changed point between the sums; returns the
 * number of points that changed cluster. Frees the border's arrays. */
int64_t pc__hca_refine_apply(pc__hca_border *border, const pc_points *points, int32_t *labels, double *sums);
/* HCA-MS's parts shared with the GPU (src/hca/refine.c, the climb itself in refine_climb.h): the cells
 * with a neighbour of another cluster (returns the points they hold), the means from the fixed-point
 * cell sums, and where a climb from x ends (the cluster of its cell, or of the nearest mean's cell). */
uint64_t pc__hca_border_cells(const pc__hca_grid *g, const int32_t *cluster_of_cell, uint8_t *is_border, int threads);
void pc__hca_means_from_sums(const pc__hca_grid *g, pc_dtype dtype, const int64_t *sums, double *mean);
/* Points listed by one thread (HCA-MS's border points), in index order: their indices and, where
 * value_bytes > 0, each one's value (value_bytes of its row, as refine.c's climb_distinct takes them). */
typedef struct {
    int32_t *index;
    uint64_t *key;
    size_t count, cap;
    int failed;
} pc__hca_point_list;
typedef struct pc__hca_values pc__hca_values;
/* A pass over the points that lists those of the cells marked in `in` beside its own work: thread t
 * of the pass lists its share (a range of points, the ranges in thread order) into lists[t]. */
typedef struct {
    const uint8_t *in;          /* a byte a cell, and 3 more (read 4 bytes at a time) */
    size_t value_bytes;
    pc__hca_point_list *lists; /* threads of them, zeroed */
    /* The label pass (pc__hca_label_points) only, 3 bands: in place of listing, each marked pixel takes
     * the cluster its value climbs to (pc__hca_values), and *changed counts those whose cluster that
     * changes; lists[t] then holds thread t's pixels whose value another thread was climbing, to be
     * settled after the pass. NULL: listed. */
    const pc__hca_values *values;
    int64_t *changed;
} pc__hca_listing;
void pc__hca_point_list_grow(pc__hca_point_list *l, size_t value_bytes);
static inline void pc__hca_list_point(pc__hca_point_list *l, size_t i, const unsigned char *row, size_t value_bytes)
{
    if (l->count == l->cap)
        pc__hca_point_list_grow(l, value_bytes);
    if (l->failed)
        return;
    l->index[l->count] = (int32_t)i;
    if (value_bytes) {
        uint64_t key = 0;
        memcpy(&key, row, value_bytes);
        l->key[l->count] = key;
    }
    l->count++;
}
/* Lists point i (its row at `row`) in list when its cell is marked in the listing; list NULL: none. */
static inline void pc__hca_list_if_marked(const pc__hca_listing *listing, pc__hca_point_list *list, int32_t cell,
                                          size_t i, const unsigned char *row)
{
    if (list && listing->in[cell])
        pc__hca_list_point(list, i, row, listing->value_bytes);
}
/* Every point's cluster from its cell's, the clusters' sums (k x (dim + 1)); turns the grid's cell map
 * into a cluster map: its last use. labels hold the points' cells as the grid build left them, unless
 * refind: a dense grid built without them, of packed 3- or 4-band uint8 on the AVX-512 path, whose
 * cells the label stage finds again from the pixels. bytes (else NULL; refind, k < 255): the labels as
 * bytes there instead of in labels. listing (else NULL; where pc__hca_labels_list): the points of the
 * cells marked in listing->in listed as they are labelled (HCA-MS), and the cell map kept. */
pc_status pc__hca_label_points(pc__hca_grid *g, const pc_points *points, const int32_t *cluster_of_cell, size_t k,
                               int refind, int32_t *labels, uint8_t *bytes, double *sums,
                               const pc__hca_listing *listing);
int pc__hca_labels_list(const pc__hca_grid *g, const pc_points *points, size_t k);
/* The threads' lists joined in thread order into index (count of them; and keys where value_bytes),
 * and freed; PC_OUT_OF_MEMORY where one could not grow. index NULL: only freed. */
pc_status pc__hca_point_lists_join(pc__hca_point_list *lists, int threads, size_t count, int32_t *index,
                                   uint64_t *keys);
/* pc__hca_refine in parts, where the label pass lists the border points (hca.c): begin marks the
 * border cells and makes the threads' lists; the climbs take the means from the cells' sums and the
 * points from the lists (scratch NULL: the label pass listed them) or list them in a pass of their own
 * (scratch: the points' cells); end frees what is left. */
typedef struct {
    uint8_t *is_border;      /* cells + 3: the cells with a neighbour of another cluster */
    size_t count;            /* the points they hold */
    pc__hca_listing listing; /* in: is_border; lists: one a thread (g->threads) */
    int threads;
} pc__hca_refining;
pc_status pc__hca_refine_begin(const pc__hca_grid *g, const pc_points *points, const int32_t *cluster_of_cell,
                               pc__hca_refining *rf);
pc_status pc__hca_refine_climbs(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                                const int32_t *cluster_of_cell, const pc_hca_params *params, pc__hca_refining *rf,
                                pc__hca_border *border);
void pc__hca_refine_end(pc__hca_refining *rf);
pc_status pc__hca_refine(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                         const int32_t *cluster_of_cell, const pc_hca_params *params, pc__hca_border *border);
/* uint8 rows (cell_sums.c): sums (cells x dim, overwritten) of every cell's values, the cells from the
 * grid's per-point scratch, or (scratch NULL: a dense grid of packed 3- or 4-band pixels on the AVX-512
 * path, built without them) found again from the pixels; and the means from them
 * (pc__hca_means_from_sums). listing (or NULL): the same pass lists the points of marked cells. */
pc_status pc__hca_cell_sums_u8(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                               int64_t *sums, const pc__hca_listing *listing);
pc_status pc__hca_cell_means_u8(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                                double *mean, const pc__hca_listing *listing);
typedef struct {
    pc__hca_climb climb;             /* climb.h, eps, ...; references only where h > 0 */
    const pc__hca_grid *g;
    const double *mean;              /* cells x dim */
    const int32_t *cluster_of_cell;
    double wmin;                     /* the narrowest cell side */
} pc__hca_reach;
pc_status pc__hca_reach_setup(pc__hca_reach *r, const pc__hca_grid *g, const double *mean,
                              const int32_t *cluster_of_cell, const pc_hca_params *params);
void pc__hca_reach_free(pc__hca_reach *r);
/* The references dimension by dimension (climb->ref_dim, freed by pc__hca_reach_free) for the CPU's
 * AVX-512 step (climb_cpu.c), where that path is in force; left NULL otherwise or without the memory
 * (the other path gives the same sums). */
void pc__climb_dimensions(pc__hca_climb *climb);
int32_t pc__hca_reach_climb(const pc__hca_reach *r, double *x); /* climbs x in place, then its end */
int32_t pc__hca_reach_end(const pc__hca_reach *r, const double *x);
/* HCA-MS on 3-band uint8 pixels whose grid summed the cells (refine.c): each value of a border pixel
 * climbs where the label pass first meets it (pc__hca_label_u8_avx512), once for the image, and
 * by_value (2^24 + 3 bytes, zero-filled: read 4 bytes at a value) keeps 1 + the cluster it reached
 * (PC__HCA_MARKED_NONE + 1 for none), 0 for a value not met yet, PC__HCA_CLIMBING while a thread
 * climbs it. The climbs need no list of the values, no pass of their own, and a list only of the
 * few pixels met while another thread climbed their value. The label pass's gathers read bytes that
 * other threads store (relaxed atomics): a byte only goes 0, PC__HCA_CLIMBING, final, and each of the
 * three is handled wherever it is read. */
struct pc__hca_values {
    pc__hca_reach reach;
    double *mean; /* the cells' means, which reach points to */
    uint8_t *by_value;
};
#define PC__HCA_CLIMBING 0xff
pc_status pc__hca_values_begin(pc__hca_values *v, const pc__hca_grid *g, const int32_t *cluster_of_cell,
                               const pc_hca_params *params);
void pc__hca_values_free(pc__hca_values *v);
/* 1 + the cluster (PC__HCA_MARKED_NONE for none) the 3-band value (its bands as the bytes of a
 * little-endian integer) climbs to: kept in by_value, or climbed now by the calling thread, which
 * claims it first. 0 where another thread's climb of it is under way: the caller comes back to the
 * pixel once every thread's climbs are done (the label pass's deferred pixels). */
uint8_t pc__hca_value_reach(const pc__hca_values *v, uint32_t value);
/* Tests only: 1 makes pc__hca_value_reach answer 0 to the thread that climbed, as to one that met
 * another's climb, so that every value's first pixel takes the deferred way. */
extern int pc__hca_defer_first;
/* HCA-MS on the GPU (src/hca/cuda_refine.cu; cuda_off.c without CUDA), called by the CUDA backend's run
 * once the points are labelled: the same border points, climbs and clusters as pc__hca_refine, the
 * labels (device_labels, else host_labels) and the clusters' sums (as cuda.cu's label pass keeps them)
 * moved with the points that change; r's border and changed counts set. g: the grid on the host (keys,
 * densities, box); the device's grid, cell clusters and cells are the plan's state. */
struct pc__hca_gpu;
pc_status pc__hca_cuda_refine(struct pc__hca_gpu *gpu, const pc_points *points, int device_input,
                              int32_t *device_labels, int32_t *host_labels, const pc_hca_params *params,
                              pc__hca_grid *g, const int32_t *cluster_of_cell, size_t k, double *sums, pc_result *r);
/* stride[] from m and dim; *total = m^dim. Fails when m^dim does not fit 64-bit indices. */
pc_status pc__hca_grid_strides(pc__hca_grid *g, uint64_t *total);
/* The index offsets of the 3^d - 1 neighbours of an interior cell (delta stays NULL without memory:
 * neighbours are then found the slow way). */
void pc__hca_grid_deltas(pc__hca_grid *g);
/* The start of every grid build: g's fields, strides and box (lo NULL: the points' bounding box) and
 * whether it is dense (m^d int32 slots within memory_budget); *total: m^d. Nothing allocated. */
pc_status pc__hca_grid_begin(pc__hca_grid *g, const pc_points *points, int m, const double *lo, const double *hi,
                             size_t memory_budget, int threads, uint64_t *total);
/* Integer rows: how many values a band takes (256 for uint8, 65536 for uint16), else 0; and the table
 * of every value's offset in g's linear index, per band (dim x values). */
size_t pc__hca_integer_values(const pc_points *points);
void pc__hca_value_offsets(const pc__hca_grid *g, size_t values, uint32_t *table);
/* A dense grid whose slot array holds the count of every linear index (total of them): its non-empty
 * cells in index order (key, density, cells), and slot[] each index's cell or -1. */
pc_status pc__hca_grid_dense_cells(pc__hca_grid *g, uint64_t total);
/* Whether a grid of total = m^d linear indices is dense (its int32 slot array within memory_budget). */
int pc__hca_grid_fits_dense(uint64_t total, size_t memory_budget);
/* A grid's cells for packed 3- or 4-band uint8 pixels, as the AVX-512 kernels take them (pixels_u8.h):
 * coord[(4 - dim + j) * 256 + v] is the cell coordinate (< m <= 127) of value v in band j (3 bands:
 * the first 256 are 0); affine: 1 where every table is also min(floor(max(v - off[j], 0) 2^shift[j]
 * mul[j] / 2^16), m - 1) for every value v (pc__hca_u8_affine). */
typedef struct {
    uint8_t coord[4 * 256];
    int m, affine;
    uint8_t off[4], shift[4]; /* shift: 0 or 8 */
    uint16_t mul[4];
} pc__hca_u8_grid;
/* From g's box, or from given tables. */
void pc__hca_u8_grid_of(const pc__hca_grid *g, pc__hca_u8_grid *u);
/* The cell coordinate in g of each of the 256 uint8 values of band j (m <= 256). */
void pc__hca_band_coordinates(const pc__hca_grid *g, size_t j, uint8_t *coordinate);
void pc__hca_u8_grid_from(const uint8_t *coord, int m, pc__hca_u8_grid *u);
/* 1 with off, shift and mul set where each of the 4 tables of coord is such an affine form, else 0. */
int pc__hca_u8_affine(const uint8_t *coord, int m, uint8_t *off, uint8_t *shift, uint16_t *mul);
/* 1 when a grid of m cells a side counts these points with AVX-512 (packed 3- or 4-band uint8,
 * m <= 127, a processor with AVX-512 VBMI): 16 pixels a step. */
int pc__hca_grid_vector_path(const pc_points *points, int m);
/* 1 where such a grid is also dense within memory_budget: it can be counted without the points' cells,
 * which the passes that need them find again from the pixels (pc__hca_u8_cells_of). */
int pc__hca_cells_found_again(const pc_points *points, int m, size_t memory_budget);
/* Counts of packed 3- or 4-band uint8 pixels by cells given as byte tables, with the AVX-512 pass of
 * the grid (pc__hca_grid_vector_path(points, m), else PC_UNSUPPORTED): coord[(4 - dim + j) * 256 + v]
 * is the coordinate (< m <= 127) of value v in band j, the linear index sum_j coordinate_j m^(dim-1-j),
 * and count (total = m^dim entries, zeroed) gets every index's count. */
pc_status pc__hca_count_u8_coords(const pc_points *points, const uint8_t *coord, int m, int threads,
                                  struct pc__hca_tick *tick, int32_t *count, uint64_t total, size_t memory_budget);
/* HECA's members of packed 3- or 4-band uint8 pixels on the AVX-512 path (grid_refined.c): the dense
 * grids[l] (as pc__hca_grid_build_box makes them, no cells of the points) of the members but `skip`,
 * counted several to a pass through the common refinement of their cells; counted[l] says which were
 * (the others: build them one by one). PC_UNSUPPORTED, with no message and nothing allocated, where
 * no two members can share a pass. tick (or NULL): the passes' progress, over its span where member
 * 0 is counted here, else at its start. */
pc_status pc__hca_grids_count_refined(pc__hca_grid *const *grids, size_t L, const pc_points *points, const int *m,
                                      const double (*lo)[PC__HCA_MAX_DIM], const double (*hi)[PC__HCA_MAX_DIM],
                                      size_t memory_budget, int threads, size_t skip, struct pc__hca_tick *tick,
                                      int *counted);
/* HECA's members (src/heca/): L dense grids of integer rows (uint8, uint16) counted in one pass over
 * the points, grids[l] with m[l] cells a side over lo[l] .. hi[l] (PC__HCA_MAX_DIM values each), as
 * pc__hca_grid_build_box makes them; the linear index of every point in grids[with_cells] into
 * cell_of (NULL: none). PC_UNSUPPORTED, with no message and nothing allocated, where that does not
 * apply (other types, a sparse grid, per-thread counts over the budget, or members that the AVX-512
 * path counts faster one by one): build them one by one. */
pc_status pc__hca_grids_count(pc__hca_grid *const *grids, size_t L, const pc_points *points, const int *m,
                              const double (*lo)[PC__HCA_MAX_DIM], const double (*hi)[PC__HCA_MAX_DIM],
                              size_t memory_budget, int threads, size_t with_cells, int32_t *cell_of);
/* The non-empty cell of a linear index, or -1. */
long pc__hca_find(const pc__hca_grid *g, uint64_t key);
/* Calls visit(ctx, cell, neighbour) for every non-empty neighbour of `cell` (corners included, the
 * cell itself not), upper-only: only neighbours with a larger linear index. */
typedef void (*pc__hca_visit)(void *ctx, size_t cell, size_t neighbour);
void pc__hca_neighbours(const pc__hca_grid *g, size_t cell, int upper_only, pc__hca_visit visit, void *ctx);

typedef struct {
    size_t components;
    int32_t *component_of_cell; /* cells */
    size_t *representative;     /* components: the representative cell */
    int64_t *size;              /* components: points */
    size_t edges;
    int32_t *edge_a, *edge_b;   /* edges: adjacent components, a < b */
    double *edge_h;             /* edges: the distance h of ALGORITHMS.md section 3 step 4 */
} pc__hca_graph;

/* Links, components and the distances between adjacent components. */
pc_status pc__hca_graph_build(const pc__hca_grid *g, pc__hca_graph *graph);
void pc__hca_graph_free(pc__hca_graph *graph);

/* Whether cell a is denser than cell b: (density, linear index) compared lexicographically, so that
 * links strictly increase and chains end. */
static inline int pc__hca_denser(const pc__hca_grid *g, size_t a, size_t b)
{
    return g->density[a] != g->density[b] ? g->density[a] > g->density[b] : g->key[a] > g->key[b];
}

/* How the graph finds each cell's neighbours: AUTO (blocks from 4 dimensions up), or one way (the
 * tests compare them). Both give the same graph. */
typedef enum { PC__HCA_NEIGHBOURS_AUTO = 0, PC__HCA_NEIGHBOURS_PROBE, PC__HCA_NEIGHBOURS_BLOCKS } pc__hca_neighbour_way;
pc_status pc__hca_graph_build_by(const pc__hca_grid *g, pc__hca_graph *graph, pc__hca_neighbour_way way);

/* Two cells of different components that touch: a < b, v = min of their densities. A list of them
 * (per thread, merged), where only the largest v of a pair counts. */
typedef struct {
    int32_t a, b;
    int64_t v;
} pc__hca_touch;
typedef struct {
    pc__hca_touch *list;
    size_t count, cap;
    int failed; /* out of memory */
} pc__hca_touches;
void pc__hca_touches_add(pc__hca_touches *t, int32_t ca, int32_t cb, int64_t v);
/* Appends mine to all (one thread at a time): 0, or -1 out of memory. */
int pc__hca_touches_merge(pc__hca_touches *all, const pc__hca_touches *mine);

/* The neighbourhoods by blocks (graph_blocks.c): link[c] = the densest cell of c's closed
 * neighbourhood (density, then linear index); and every touching pair of components, with the largest
 * min(D(a), D(b)) of their touching cells among the entries of the pair, added to *out. */
pc_status pc__hca_links_by_blocks(const pc__hca_grid *g, int32_t *link);
pc_status pc__hca_touches_by_blocks(const pc__hca_grid *g, const int32_t *comp, pc__hca_touches *out);

/* Single linkage over the component graph (Kruskal), parts joined at height 1: (components - 1) x 4. */
pc_status pc__hca_dendrogram(const pc__hca_graph *graph, double **linkage);

/* Cuts the dendrogram (to `clusters`, or at `threshold` when clusters == 0), applies the minimum
 * cluster size, and gives each cell its final cluster (numbered by size, largest first) or -1. */
pc_status pc__hca_cut(const pc__hca_grid *g, const pc__hca_graph *graph, const double *linkage, size_t clusters,
                      double threshold, int64_t min_size, int noise, int32_t *cluster_of_cell, size_t *k);

/* The result's components, cluster sizes and centres from the clusters' sums (k x (dim + 1): the
 * sum of each dimension, then the count), once the labels are in place: shared by every backend. */
pc_status pc__hca_finish(pc_result *r, const pc__hca_grid *g, const pc__hca_graph *graph, const double *sums,
                         size_t k);

/* The result's components (leaves of the dendrogram) and cell count. */
pc_status pc__hca_result_components(pc_result *r, const pc__hca_grid *g, const pc__hca_graph *graph);

/* labels[i] = bytes[i], 255 becoming -1, on all cores (the GPU sends labels of fewer than 255
 * clusters as bytes). */
void pc__hca_widen_labels(const uint8_t *bytes, size_t n, int32_t *labels);
/* Its inverse, -1 becoming 255 (pc_hca_plan_run_u8 where the labels were made as int32). */
void pc__hca_narrow_labels(const int32_t *labels, size_t n, uint8_t *bytes);
/* PC_OK where k clusters fit labels as bytes (at most 254: 255 marks no cluster), else
 * PC_UNSUPPORTED saying so. */
pc_status pc__hca_bytes_fit(size_t k);
/* The label stage of packed uint8 pixels of dim = 3 or 4 bands on the AVX-512 path (label_u8.c):
 * labels[begin, end) hold cell indices and become small[cell] (255: -1; small has 3 bytes of padding
 * after its last entry), and each cluster's band sums and count (dim + 1 a cluster) are added to
 * isum. end - begin < 2^26. list (else NULL): the points of cells marked in small (PC__HCA_MARK,
 * beside clusters below PC__HCA_MARKED_NONE, which stands for none) listed there, with value_bytes of
 * their rows. values (3 bands, else NULL): marked pixels take the cluster their value climbs to
 * (pc__hca_value_reach), those that change counted into *changed; those whose value another thread is
 * climbing keep their cell's cluster for now and are listed in list (the caller's to settle); tick (or
 * NULL) gets the pass's progress between climbs, at pixel i of n, and a stop there returns at once. */
#define PC__HCA_MARK 0x80
#define PC__HCA_MARKED_NONE 0x7f
void pc__hca_label_u8_avx512(const uint8_t *u8, size_t dim, const uint8_t *small, int32_t *labels, size_t begin,
                             size_t end, uint64_t *isum, pc__hca_point_list *list, size_t value_bytes,
                             const pc__hca_values *values, int64_t *changed, struct pc__hca_tick *tick, size_t n);
/* The same where no cells were kept (pc_hca_plan_run_u8's labels straight to bytes, HECA's reference
 * member): each pixel's cell found again from its bands in grid u, and small[cell] written into
 * bytes[begin, end) if bytes, else into labels[begin, end) (255: -1). */
void pc__hca_label_u8_cells_avx512(const uint8_t *u8, size_t dim, const pc__hca_u8_grid *u, const uint8_t *small,
                                   uint8_t *bytes, int32_t *labels, size_t begin, size_t end, uint64_t *isum);
/* The cells (slot[] of the linear index; slot NULL: the linear index) of packed 3- or 4-band uint8
 * pixels begin .. end - 1 in the dense grid u, slot, into cell[0 .. end - begin) (grid.c; the AVX-512
 * path with VBMI). */
void pc__hca_u8_cells_of(const uint8_t *u8, size_t dim, const pc__hca_u8_grid *u, const int32_t *slot, size_t begin,
                         size_t end, int32_t *cell);
/* memcpy on all cores (between pageable memory and the GPU backend's pinned staging buffers). */
void pc__hca_copy_parallel(void *dst, const void *src, size_t bytes);

/* The CUDA backend (src/hca/cuda*.cu; cuda_off.c without CUDA). Device state lives in a pc__hca_gpu, kept
 * by a plan from one run to the next. */
typedef struct pc__hca_gpu pc__hca_gpu;
/* Reserves device memory for inputs of up to n rows of dim values of dtype (in pieces when the card
 * is too small for them at once). */
pc_status pc__hca_gpu_new(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc__hca_gpu **gpu);
void pc__hca_gpu_free(pc__hca_gpu *gpu);
/* One run. device_input: points->data is device memory. device_labels: the labels stay there; else
 * host_bytes: they go there as bytes (255: no cluster; PC_UNSUPPORTED from 255 clusters, not with
 * HCA-MS); else to r->labels on the host. */
pc_status pc__hca_gpu_run(pc__hca_gpu *gpu, const pc_points *points, int device_input, int32_t *device_labels,
                          uint8_t *host_bytes, const pc_hca_params *params, int64_t min_size, pc_result *r);

/* The CUDA backend under pc_hca_stream (src/hca/cuda_stream.cu; cuda_off.c without CUDA): the box, the
 * counting and the labelling of host blocks on the GPU, in pieces where a block exceeds the device's
 * piece buffer. The device counts in int32 and hands its counts to the host's int64 histogram (a
 * "fold") before the points counted since the last fold could overflow them, and whenever asked. Every
 * call takes the state's mutex: labelling from several threads takes turns on the GPU. */
typedef struct pc__hca_stream_gpu pc__hca_stream_gpu;
/* Where a fold puts the device's counts: reserve(ctx, cells) first (at most that many distinct cells
 * follow; the sink makes room, so that add cannot fail), then add(ctx, first, keys, counts, n) per
 * chunk: the counts of cells keys[0..n) or, with keys NULL, of cells first .. first + n - 1 (zeros
 * included). */
typedef struct {
    pc_status (*reserve)(void *ctx, size_t cells);
    void (*add)(void *ctx, uint64_t first, const uint64_t *keys, const int32_t *counts, size_t n);
    void *ctx;
} pc__hca_fold_sink;
/* A fold's cells kept by the host (the stream's list, HECA's members' histograms): two arrays of *cap
 * entries, keys and counts, grown together (doubling from 1024) to hold `need`. 0 where memory is
 * short: both hold what they held (either may have moved), *cap unchanged. */
static inline int pc__hca_grow_cells(uint64_t **keys, int64_t **counts, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 1;
    size_t grown = *cap ? *cap : 1024;
    while (grown < need)
        grown *= 2;
    uint64_t *k = (uint64_t *)realloc(*keys, grown * sizeof *k); /* (a cast: C++ includes this too) */
    if (k)
        *keys = k;
    int64_t *c = k ? (int64_t *)realloc(*counts, grown * sizeof *c) : NULL;
    if (c)
        *counts = c;
    if (!k || !c)
        return 0;
    *cap = grown;
    return 1;
}

/* The state for rows of dim values on the current device, sized to params->device_memory (0: what is
 * free, less a reserve). dense_allowed: the device may count into a dense array of m^dim counters
 * (the host's histogram is dense too); else, or where that does not fit, a hash of the cells. */
pc_status pc__hca_stream_gpu_new(const pc_hca_params *params, size_t dim, int dense_allowed, pc__hca_stream_gpu **gpu);
void pc__hca_stream_gpu_free(pc__hca_stream_gpu *gpu); /* NULL-safe */
/* Holds the block (the stream's own view of it, whose address marks it) on the GPU: later calls given
 * that view read the rows there. Host rows (device_input 0) are copied (PC_DEVICE_OUT_OF_MEMORY where
 * they do not fit beside the state's buffers); device rows (1: memory of the state's GPU, checked as
 * pc_hca_plan_run_device's) are read where they are. Float values are checked here, once (a
 * non-finite one refused, nothing kept). */
pc_status pc__hca_stream_gpu_hold(pc__hca_stream_gpu *gpu, const pc_points *view, int device_input);
/* Widens lo[dim], hi[dim] to the block's values; refuses (PC_INVALID_ARGUMENT, lo and hi unchanged) a
 * block with a non-finite value. The block's shape is checked by the caller. */
pc_status pc__hca_stream_gpu_bound(pc__hca_stream_gpu *gpu, const pc_points *block, double *lo, double *hi);
/* The box is fixed: the cell rule (the CPU's tables for integer types) goes to the device. */
pc_status pc__hca_stream_gpu_start(pc__hca_stream_gpu *gpu, const double *lo, const double *hi);
/* Counts the block's points (folding into sink when needed). A block with a non-finite value is refused
 * before any of it is counted. */
pc_status pc__hca_stream_gpu_add(pc__hca_stream_gpu *gpu, const pc_points *block, const pc__hca_fold_sink *sink);
/* Hands every device count to sink and zeroes them (nothing to do when none is pending). */
pc_status pc__hca_stream_gpu_fold(pc__hca_stream_gpu *gpu, const pc__hca_fold_sink *sink);
/* After the finish: labels[block->n] (host memory, or the GPU's with labels_on_device) and, unless
 * NULL, sums (k x (dim + 1), added to). The map (the cells' keys, increasing, and their clusters) goes
 * to the device at the first call and must stay the same. A block with a non-finite value is refused
 * before any label is written. */
pc_status pc__hca_stream_gpu_label(pc__hca_stream_gpu *gpu, const pc_points *block, size_t cells, const uint64_t *keys,
                                   const int32_t *cluster_of_cell, size_t k, int32_t *labels, int labels_on_device,
                                   double *sums);
/* The finish's component graph (links, components, the minimum spanning forest of the touching
 * components: what the dendrogram and the cut read) on the device, by pc_hca's GPU kernels, from the
 * summed histogram's cells (keys increasing, counts). *done 0, nothing made: left to the host (a count
 * past int32, which the device's densities hold). */
pc_status pc__hca_stream_gpu_graph(pc__hca_stream_gpu *gpu, size_t cells, const uint64_t *keys, const int64_t *density,
                                   pc__hca_graph *graph, int *done);
/* Tests: folds at least every `rows` points, and pieces of at most `rows` rows. */
void pc__hca_stream_gpu_fold_every(pc__hca_stream_gpu *gpu, uint64_t rows);
/* Tests: the same on a stream's GPU state (PC_INVALID_ARGUMENT when the stream has none). */
pc_status pc__hca_stream_fold_every(pc_hca_stream *stream, uint64_t rows);
/* Tests: a finish with a GPU state makes its graph there from `probes` neighbour probes (cells x (3^d -
 * 1)) up; 0: always, UINT64_MAX: never. */
void pc__hca_stream_graph_on_gpu_from(pc_hca_stream *stream, uint64_t probes);

#endif
