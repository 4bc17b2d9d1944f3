/* pc_hca_stream: HCA over points that arrive in blocks. The grid histogram is the whole state: the
 * components, dendrogram and cut need the non-empty cells and their densities only (ALGORITHMS.md
 * section 3 steps 2-5), so counting blocks into one histogram and clustering it gives what pc_hca
 * gives on all the points at once, given the same box. Counts are integers: sums of histograms do not
 * depend on the order of the blocks, the threads, or the machines that counted them.
 *
 * Backends: the box, the counting and the labelling of a block run on one thread, on all cores, or on
 * the GPU (cuda_stream.cu: the device counts in int32 and folds its counts into this file's int64
 * histogram before they could overflow and whenever the histogram is read, so that everything from the
 * histogram on is the same code for every backend). The finish runs on the CPU from the histogram
 * whatever the backend: it is small (the non-empty cells), and pc_hca's GPU path hands its dendrogram
 * and cut to the host too. AUTO counts and labels blocks of GPU_MIN_ROWS rows or more on the GPU where a
 * device is present (pc_hca's rule, applied per block), smaller ones with OpenMP. */
#include "internal_hca.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many rows a block is counted on one thread (a parallel region costs more). */
#define SMALL_BLOCK 65536
/* AUTO: blocks of this many rows or more go to the GPU (pc_hca's AUTO rule: from a megapixel on). */
#define GPU_MIN_ROWS ((size_t)1 << 20)
#define EMPTY_KEY UINT64_MAX /* keys are below m^dim <= 2^63 */

enum phase { NO_BOX, BOUNDING, BOX_SET, COUNTING, FINISHED };

typedef struct {
    uint64_t key;
    int64_t count;
} cell_count;

struct pc_hca_stream {
    pc_hca_params params;
    size_t dim;
    int threads;
    enum phase phase;
    pc__hca_grid g; /* box, strides; after finish the cells, densities and (dense) slots */
    uint64_t total; /* m^dim */
    uint64_t points;
    double seconds_counting;
    /* Dense histogram: `slices` arrays of m^dim counts, one per thread, summed when read (threads
     * counting into one array would serialise on the cells they share). */
    int dense;
    int slices;
    int64_t *count;
    /* Sparse histogram: open addressing over the non-empty cells (counted on one thread). */
    uint64_t *hkey;
    int64_t *hcount;
    size_t hcap, hused;
    /* The non-empty cells in key order as last listed (list_ready), kept until counts change: a
     * histogram read for its size and then for its cells, and the finish after it, list them once. */
    cell_count *list;
    size_t list_cells;
    int list_ready;
    /* Integer bands: the key offset of every value, per band (uint8: 256 values, uint16: 65536). */
    uint64_t *table_u8, *table_u16;
    /* After finish: the cluster of every dense slot, or of every cell (sparse). */
    int32_t *cluster_of_slot, *cluster_of_cell;
    size_t k;
    /* The GPU: every block with PC_BACKEND_CUDA (made at create), large blocks with AUTO (made at the
     * first large block; gpu_refused once that failed for want of a usable device: the CPU from then on). */
    pc_backend asked;
    pc__hca_stream_gpu *gpu;
    int gpu_refused;
    uint64_t gpu_blocks; /* blocks bounded or counted on the GPU */
    /* The held block (pc_hca_stream_hold): the caller's view; its address marks the GPU's copy (or, with
     * held_on_device, the caller's rows in GPU memory, which only the GPU reads). */
    pc_points held;
    int holding, held_on_device;
    /* A finish with a GPU state makes the component graph there from this many neighbour probes up
     * (cells x (3^d - 1)): below it the host's threads are done before the device's launches and
     * synchronisations would be. */
    uint64_t graph_on_gpu_from;
};

void pc_hca_stream_free(pc_hca_stream *s)
{
    if (!s)
        return;
    pc__hca_stream_gpu_free(s->gpu);
    pc__hca_grid_free(&s->g);
    free(s->count);
    free(s->hkey);
    free(s->hcount);
    free(s->table_u8);
    free(s->table_u16);
    free(s->cluster_of_slot);
    free(s->cluster_of_cell);
    free(s->list);
    free(s);
}

/* Counts are about to change: the listed cells are stale. */
static void forget_cells(pc_hca_stream *s)
{
    free(s->list);
    s->list = NULL;
    s->list_ready = 0;
}

pc_status pc_hca_stream_create(const pc_hca_params *params, size_t dim, pc_hca_stream **stream)
{
    if (!stream)
        return pc__fail(PC_INVALID_ARGUMENT, "stream pointer is NULL");
    *stream = NULL;
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    pc_status st = pc__hca_check_params(params, dim);
    if (st != PC_OK)
        return st;
    pc_backend backend;
    /* CUDA: refused here without a build or a device (pc__choose_backend says which). */
    if (params->backend == PC_BACKEND_CUDA && (st = pc__choose_backend(PC_BACKEND_CUDA, 0, &backend)) != PC_OK)
        return st;
    /* The CPU's share (every block, AUTO's small blocks, the finish on every backend): all cores where
     * OpenMP was built, unless one thread was asked for. */
    backend = params->backend == PC_BACKEND_SEQUENTIAL || params->backend == PC_BACKEND_OPENMP
                  ? params->backend
                  : pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    if ((st = pc__choose_backend(backend, 0, &backend)) != PC_OK)
        return st;
    pc_hca_stream *s = pc__calloc(1, sizeof *s, "HCA stream");
    if (!s)
        return PC_OUT_OF_MEMORY;
    s->params = *params;
    s->asked = params->backend;
    s->graph_on_gpu_from = (uint64_t)1 << 19;
    s->dim = dim;
    s->threads = 1;
#ifdef _OPENMP
    if (backend == PC_BACKEND_OPENMP)
        s->threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    s->g.dim = dim;
    s->g.m = params->m;
    s->g.threads = s->threads;
    if ((st = pc__hca_grid_strides(&s->g, &s->total)) != PC_OK) {
        free(s);
        return st;
    }
    for (size_t j = 0; j < dim; j++) {
        s->g.lo[j] = INFINITY;
        s->g.hi[j] = -INFINITY;
    }
    /* Dense when one array of counts fits the budget; a copy per thread where they all fit. */
    size_t budget = params->memory_budget;
    s->dense = s->total <= budget / sizeof(int64_t);
    s->slices = s->dense && s->threads > 1 && s->total <= budget / sizeof(int64_t) / (size_t)s->threads ? s->threads : 1;
    if (s->asked == PC_BACKEND_CUDA) {
        s->slices = 1; /* the host adds only the GPU's folds and histograms to it */
        if ((st = pc__hca_stream_gpu_new(params, dim, s->dense, &s->gpu)) != PC_OK) {
            pc_hca_stream_free(s);
            return st;
        }
    }
    *stream = s;
    return PC_OK;
}

pc_status pc__hca_stream_fold_every(pc_hca_stream *s, uint64_t rows)
{
    if (!s || !s->gpu)
        return pc__fail(PC_INVALID_ARGUMENT, "pc__hca_stream_fold_every: the stream has no GPU state");
    pc__hca_stream_gpu_fold_every(s->gpu, rows);
    return PC_OK;
}

void pc__hca_stream_graph_on_gpu_from(pc_hca_stream *s, uint64_t probes)
{
    if (s)
        s->graph_on_gpu_from = probes;
}

/* The finish's component graph: on the GPU where the stream has one and the grid is large enough. */
static pc_status build_graph(pc_hca_stream *s, pc__hca_graph *gr)
{
    uint64_t probes = 1;
    for (size_t j = 0; j < s->dim; j++)
        probes *= 3;
    probes = (probes - 1) * (uint64_t)s->g.cells;
    int done = 0;
    pc_status st = PC_OK;
    if (s->gpu && probes >= s->graph_on_gpu_from)
        st = pc__hca_stream_gpu_graph(s->gpu, s->g.cells, s->g.key, s->g.density, gr, &done);
    /* The host makes any graph the device could not (no memory beside a held block, more touching
     * pairs than its hash takes, a device in trouble): the finish never needed the GPU, and cannot be
     * tried again. */
    if (st == PC_DEVICE_OUT_OF_MEMORY || st == PC_UNSUPPORTED || st == PC_DEVICE_ERROR) {
        pc__clear_error();
        st = PC_OK;
        done = 0;
    }
    return st != PC_OK || done ? st : pc__hca_graph_build(&s->g, gr);
}

/* 1 when the block goes to the GPU: every block with CUDA; with AUTO, blocks of GPU_MIN_ROWS rows or
 * more while a device can be had (its state is made at the first of them, with the box's tables when
 * counting has begun). Device trouble then leaves AUTO on the CPU, as pc_hca_plan_create does. */
static pc_status use_gpu(pc_hca_stream *s, const pc_points *block, int *on_gpu)
{
    *on_gpu = 0;
    if (s->asked == PC_BACKEND_CUDA) {
        *on_gpu = 1;
        return PC_OK;
    }
    if (s->asked != PC_BACKEND_AUTO || block->n < GPU_MIN_ROWS || s->gpu_refused)
        return PC_OK;
    if (!s->gpu) {
        pc_status st = pc_cuda_device_count() > 0 ? pc__hca_stream_gpu_new(&s->params, s->dim, s->dense, &s->gpu)
                                                  : PC_NO_DEVICE;
        if (st == PC_OK && s->phase == COUNTING)
            st = pc__hca_stream_gpu_start(s->gpu, s->g.lo, s->g.hi);
        if (st != PC_OK) {
            pc__hca_stream_gpu_free(s->gpu);
            s->gpu = NULL;
            if (st != PC_DEVICE_OUT_OF_MEMORY && st != PC_DEVICE_ERROR && st != PC_NO_DEVICE)
                return st;
            pc__clear_error();
            s->gpu_refused = 1;
            return PC_OK;
        }
    }
    *on_gpu = 1;
    return PC_OK;
}

/* The block's shape; its values too, unless values_later (the GPU checks them as it reads them). */
static pc_status check_block(const pc_hca_stream *s, const pc_points *block, const char *call, int values_later)
{
    if (!s)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: stream is NULL", call);
    pc__clear_error();
    if (!block)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: block is NULL", call);
    if (block->dim != s->dim)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the stream takes rows of %zu values, the block has %zu", call, s->dim,
                        block->dim);
    return values_later ? pc__points_check_shape(block) : pc_points_check(block);
}

pc_status pc_hca_stream_set_box(pc_hca_stream *s, const double *lo, const double *hi)
{
    if (!s || !lo || !hi)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_set_box: stream, lo and hi must not be NULL");
    pc__clear_error();
    if (s->phase > BOX_SET)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_set_box: the box is fixed once points are added");
    for (size_t j = 0; j < s->dim; j++)
        if (!isfinite(lo[j]) || !isfinite(hi[j]) || lo[j] > hi[j])
            return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_set_box: dimension %zu: [%g, %g] is not a box", j,
                            lo[j], hi[j]);
    for (size_t j = 0; j < s->dim; j++) {
        s->g.lo[j] = lo[j];
        s->g.hi[j] = hi[j];
    }
    s->phase = BOX_SET;
    return PC_OK;
}

pc_status pc_hca_stream_bound(pc_hca_stream *s, const pc_points *block)
{
    pc_status st = check_block(s, block, "pc_hca_stream_bound", 1);
    if (st != PC_OK)
        return st;
    if (s->phase > BOUNDING)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_bound: the box is %s",
                        s->phase == BOX_SET ? "set already" : "fixed once points are added");
    int on_gpu;
    if ((st = use_gpu(s, block, &on_gpu)) != PC_OK)
        return st;
    if (on_gpu) {
        if ((st = pc__hca_stream_gpu_bound(s->gpu, block, s->g.lo, s->g.hi)) != PC_OK)
            return st;
        s->gpu_blocks++;
        s->phase = BOUNDING;
        return PC_OK;
    }
    if ((st = pc_points_check(block)) != PC_OK)
        return st;
    size_t bytes = pc__hca_row_bytes(block), dim = s->dim;
    const unsigned char *base = block->data;
    double *glo = s->g.lo, *ghi = s->g.hi;
    int threads = block->n < SMALL_BLOCK ? 1 : s->threads;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
        for (size_t j = 0; j < dim; j++) {
            lo[j] = INFINITY;
            hi[j] = -INFINITY;
        }
#pragma omp for schedule(static)
        for (long i = 0; i < (long)block->n; i++)
            for (size_t j = 0; j < dim; j++) {
                double v = pc__hca_value(base + (size_t)i * bytes, block->dtype, j);
                lo[j] = v < lo[j] ? v : lo[j];
                hi[j] = v > hi[j] ? v : hi[j];
            }
#pragma omp critical(pc__hca_stream_box)
        for (size_t j = 0; j < dim; j++) {
            glo[j] = fmin(glo[j], lo[j]);
            ghi[j] = fmax(ghi[j], hi[j]);
        }
    }
    s->phase = BOUNDING;
    return PC_OK;
}

pc_status pc_hca_stream_box(const pc_hca_stream *s, double *lo, double *hi)
{
    if (!s || !lo || !hi)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_box: stream, lo and hi must not be NULL");
    if (s->phase == NO_BOX)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_box: no box yet (set it, or bound the blocks first)");
    memcpy(lo, s->g.lo, s->dim * sizeof *lo);
    memcpy(hi, s->g.hi, s->dim * sizeof *hi);
    return PC_OK;
}

/* Fixes the box: the key tables of the integer types and the histogram's memory. */
static pc_status start_counting(pc_hca_stream *s, const char *call)
{
    if (s->phase == NO_BOX)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the stream has no box: set it, or bound every block first", call);
    if (s->phase == FINISHED)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the stream is finished", call);
    if (s->phase == COUNTING)
        return PC_OK;
    /* (what an earlier failed attempt allocated is kept, not allocated again) */
    if (!s->table_u8)
        s->table_u8 = pc__alloc(256 * s->dim, sizeof *s->table_u8, "HCA key tables");
    if (!s->table_u16)
        s->table_u16 = pc__alloc(65536 * s->dim, sizeof *s->table_u16, "HCA key tables");
    uint16_t *coordinate = pc__alloc(65536, sizeof *coordinate, "HCA key tables");
    if (!s->table_u8 || !s->table_u16 || !coordinate) {
        free(coordinate);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t j = 0; j < s->dim; j++) {
        pc__hca_coordinate_table(s->g.lo[j], s->g.hi[j], s->g.m, 65536, coordinate);
        for (size_t v = 0; v < 65536; v++) {
            uint64_t off = (uint64_t)coordinate[v] * s->g.stride[j];
            s->table_u16[j * 65536 + v] = off;
            if (v < 256)
                s->table_u8[j * 256 + v] = off;
        }
    }
    free(coordinate);
    if (s->dense && !s->count) {
        s->count = pc__calloc((size_t)s->total * (size_t)s->slices, sizeof *s->count, "HCA histogram");
        if (!s->count)
            return PC_OUT_OF_MEMORY;
    } else if (!s->dense && !s->hkey) {
        s->hcap = 1024;
        s->hkey = pc__alloc(s->hcap, sizeof *s->hkey, "HCA histogram");
        s->hcount = pc__alloc(s->hcap, sizeof *s->hcount, "HCA histogram");
        if (!s->hkey || !s->hcount) {
            free(s->hkey);
            free(s->hcount);
            s->hkey = NULL;
            s->hcount = NULL;
            return PC_OUT_OF_MEMORY;
        }
        memset(s->hkey, 0xff, s->hcap * sizeof *s->hkey);
    }
    pc_status st;
    if (s->gpu && (st = pc__hca_stream_gpu_start(s->gpu, s->g.lo, s->g.hi)) != PC_OK) {
        if (s->asked == PC_BACKEND_CUDA || (st != PC_DEVICE_OUT_OF_MEMORY && st != PC_DEVICE_ERROR))
            return st;
        pc__hca_stream_gpu_free(s->gpu); /* AUTO: the CPU from here on */
        s->gpu = NULL;
        s->gpu_refused = 1;
        pc__clear_error();
    }
    /* The histogram is empty, and so is its list: kept from here by the GPU's folds and added
     * histograms, forgotten by points counted on the CPU. */
    forget_cells(s);
    if ((s->list = malloc(sizeof *s->list)) != NULL)
        s->list_ready = 1;
    s->phase = COUNTING;
    return PC_OK;
}

/* The linear cell index of a row: the same cell as pc_hca's grid (pc__hca_cell_coordinate). Inlined
 * into loops that pass a constant dim (FOR_DIM below), so that integer rows take dim table lookups
 * with no loop around them. */
static inline __attribute__((always_inline)) uint64_t key_of(const pc_hca_stream *s, const unsigned char *row,
                                                             pc_dtype t, size_t dim)
{
    uint64_t key = 0;
    if (t == PC_U8)
        for (size_t j = 0; j < dim; j++)
            key += s->table_u8[j * 256 + row[j]];
    else if (t == PC_U16)
        for (size_t j = 0; j < dim; j++) {
            uint16_t v;
            memcpy(&v, row + 2 * j, 2);
            key += s->table_u16[j * 65536 + v];
        }
    else
        for (size_t j = 0; j < dim; j++)
            key += (uint64_t)pc__hca_cell_coordinate(pc__hca_value(row, t, j), s->g.lo[j], s->g.hi[j], s->g.m) *
                   s->g.stride[j];
    return key;
}

static inline uint64_t row_key(const pc_hca_stream *s, const unsigned char *row, pc_dtype t)
{
    return key_of(s, row, t, s->dim);
}

/* CALL(DTYPE, DIM) with both constants for uint8 and uint16 rows of 1 to 8 values (the image case,
 * where the per-pixel work is a few lookups and the loop's own overhead would be half of it), else
 * with the block's dtype and s->dim as they are. */
#define FOR_DIM_CASES(CALL, T)                                                                                 \
    switch (dim) {                                                                                             \
    case 1: CALL(T, 1); break;                                                                                 \
    case 2: CALL(T, 2); break;                                                                                 \
    case 3: CALL(T, 3); break;                                                                                 \
    case 4: CALL(T, 4); break;                                                                                 \
    case 5: CALL(T, 5); break;                                                                                 \
    case 6: CALL(T, 6); break;                                                                                 \
    case 7: CALL(T, 7); break;                                                                                 \
    default: CALL(T, 8); break;                                                                                \
    }
#define FOR_DIM(CALL, dtype, dim)                                                                              \
    do {                                                                                                       \
        if ((dtype) == PC_U8)                                                                                  \
            FOR_DIM_CASES(CALL, PC_U8)                                                                         \
        else if ((dtype) == PC_U16)                                                                            \
            FOR_DIM_CASES(CALL, PC_U16)                                                                        \
        else                                                                                                   \
            CALL(dtype, dim);                                                                                  \
    } while (0)

static size_t hash_slot(const pc_hca_stream *s, uint64_t key)
{
    uint64_t h = key ^ (key >> 33);
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    size_t at = (size_t)h & (s->hcap - 1);
    while (s->hkey[at] != EMPTY_KEY && s->hkey[at] != key)
        at = (at + 1) & (s->hcap - 1);
    return at;
}

/* Room in the sparse histogram for `cells` cells at half load at most. */
static pc_status sparse_reserve(pc_hca_stream *s, size_t cells)
{
    if (2 * cells > s->hcap) {
        size_t old_cap = s->hcap;
        uint64_t *old_key = s->hkey;
        int64_t *old_count = s->hcount;
        while (2 * cells > s->hcap)
            s->hcap *= 2;
        s->hkey = pc__alloc(s->hcap, sizeof *s->hkey, "HCA histogram");
        s->hcount = pc__alloc(s->hcap, sizeof *s->hcount, "HCA histogram");
        if (!s->hkey || !s->hcount) {
            free(s->hkey);
            free(s->hcount);
            s->hkey = old_key;
            s->hcount = old_count;
            s->hcap = old_cap;
            return pc__fail(PC_OUT_OF_MEMORY, "HCA histogram: cannot grow past %zu cells", s->hused);
        }
        memset(s->hkey, 0xff, s->hcap * sizeof *s->hkey);
        for (size_t i = 0; i < old_cap; i++)
            if (old_key[i] != EMPTY_KEY) {
                size_t at = hash_slot(s, old_key[i]);
                s->hkey[at] = old_key[i];
                s->hcount[at] = old_count[i];
            }
        free(old_key);
        free(old_count);
    }
    return PC_OK;
}

/* Adds `count` points to the cell `key` of the sparse histogram, growing it at half load. */
static pc_status sparse_add(pc_hca_stream *s, uint64_t key, int64_t count)
{
    if (count == 0) /* no point: no cell (the list of cells would hold one of density 0) */
        return PC_OK;
    pc_status st = sparse_reserve(s, s->hused + 1);
    if (st != PC_OK)
        return st;
    size_t at = hash_slot(s, key);
    if (s->hkey[at] == EMPTY_KEY) {
        s->hkey[at] = key;
        s->hcount[at] = 0;
        s->hused++;
    }
    s->hcount[at] += count;
    return PC_OK;
}

/* Rows [i, end) counted into mine (NULL: into count, with atomics). Neighbouring pixels often share a
 * cell: a run is counted in a register. */
static inline __attribute__((always_inline)) void count_rows(const pc_hca_stream *s, const unsigned char *base,
                                                             size_t bytes, size_t i, size_t end, pc_dtype t,
                                                             size_t dim, int64_t *mine, int64_t *count)
{
    uint64_t run_key = 0;
    int64_t run = 0;
    for (; i < end; i++) {
        uint64_t key = key_of(s, base + i * bytes, t, dim);
        if (key == run_key) {
            run++;
            continue;
        }
        if (run && mine)
            mine[run_key] += run;
        else if (run) {
#pragma omp atomic
            count[run_key] += run;
        }
        run_key = key;
        run = 1;
    }
    if (run && mine)
        mine[run_key] += run;
    else if (run) {
#pragma omp atomic
        count[run_key] += run;
    }
}

static void count_dense(pc_hca_stream *s, const pc_points *block)
{
    size_t bytes = pc__hca_row_bytes(block), n = block->n, dim = s->dim;
    const unsigned char *base = block->data;
    int threads = n < SMALL_BLOCK ? 1 : s->threads;
    int64_t *count = s->count;
    size_t total = (size_t)s->total;
    int slices = s->slices;
    pc_dtype dtype = block->dtype;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        /* One slice shared by several threads: all of them count with atomics (NULL). */
        int64_t *mine = slices > 1 ? count + (size_t)t * total : nt == 1 ? count : NULL;
        size_t i = n / (size_t)nt * (size_t)t, end = t + 1 == nt ? n : i + n / (size_t)nt;
#define COUNT_ROWS(T, D) count_rows(s, base, bytes, i, end, T, D, mine, count)
        FOR_DIM(COUNT_ROWS, dtype, dim);
#undef COUNT_ROWS
    }
}

/* The listed cells with the added ones (keys increasing) merged in: counts of a key in both summed,
 * added empty cells left out; NULL where memory is short (the histogram is then listed anew). */
static cell_count *merged_list(const cell_count *list, size_t listed, const uint64_t *keys, const int64_t *counts,
                               size_t cells, size_t *merged)
{
    cell_count *out = malloc((listed + cells ? listed + cells : 1) * sizeof *out);
    if (!out)
        return NULL;
    size_t i = 0, j = 0, q = 0;
    while (i < listed || j < cells) {
        if (j == cells || (i < listed && list[i].key < keys[j]))
            out[q++] = list[i++];
        else if (i == listed || keys[j] < list[i].key) {
            if (counts[j] > 0)
                out[q++] = (cell_count){keys[j], counts[j]};
            j++;
        } else {
            out[q++] = (cell_count){keys[j], list[i].count + counts[j]};
            i++, j++;
        }
    }
    *merged = q;
    return out;
}

/* The GPU's folds: its int32 counts added to the int64 histogram and, while the stream keeps its list of
 * cells, kept as they come (a dense grid's by increasing key) to be merged into the list afterwards
 * (fold_done), which spares listing the m^d counts anew. */
typedef struct {
    pc_hca_stream *s;
    uint64_t *keys;
    int64_t *counts;
    size_t n, cap;
    int keep;    /* 0 once the list cannot be merged: none kept, keys out of order, or no memory */
    int changed; /* a count was added to the histogram (kept or not) */
} fold_sink;

static fold_sink fold_start(pc_hca_stream *s)
{
    fold_sink f = {s, NULL, NULL, 0, 0, s->list_ready, 0};
    return f;
}

static pc_status sink_reserve(void *ctx, size_t cells)
{
    fold_sink *f = ctx;
    f->keep = f->keep && pc__hca_grow_cells(&f->keys, &f->counts, &f->cap, f->n + cells);
    return f->s->dense ? PC_OK : sparse_reserve(f->s, f->s->hused + cells);
}

static void sink_add(void *ctx, uint64_t first, const uint64_t *keys, const int32_t *counts, size_t n)
{
    fold_sink *f = ctx;
    pc_hca_stream *s = f->s;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = keys ? keys[i] : first + i;
        if (counts[i] == 0)
            continue;
        if (s->dense)
            s->count[key] += counts[i];
        else
            (void)sparse_add(s, key, counts[i]); /* cannot fail: sink_reserve made room */
        f->changed = 1;
        if (f->keep && f->n > 0 && key <= f->keys[f->n - 1])
            f->keep = 0;
        if (f->keep) {
            f->keys[f->n] = key;
            f->counts[f->n++] = counts[i];
        }
    }
}

/* After a fold (or an add that folded): the list with what came merged in, or forgotten. */
static pc_status fold_done(fold_sink *f, pc_status st)
{
    pc_hca_stream *s = f->s;
    size_t merged_cells = 0;
    cell_count *merged = NULL;
    if (f->changed || st != PC_OK) { /* the histogram changed (a failed fold may have added some) */
        if (st == PC_OK && f->keep && s->list_ready)
            merged = merged_list(s->list, s->list_cells, f->keys, f->counts, f->n, &merged_cells);
        forget_cells(s);
    }
    if (merged) {
        s->list = merged;
        s->list_cells = merged_cells;
        s->list_ready = 1;
    }
    free(f->keys);
    free(f->counts);
    return st;
}

/* Whatever the GPU counted since its last fold, into the histogram. */
static pc_status fold_gpu(pc_hca_stream *s)
{
    if (!s->gpu || s->phase != COUNTING)
        return PC_OK;
    fold_sink f = fold_start(s);
    pc__hca_fold_sink sink = {sink_reserve, sink_add, &f};
    return fold_done(&f, pc__hca_stream_gpu_fold(s->gpu, &sink));
}

pc_status pc_hca_stream_add(pc_hca_stream *s, const pc_points *block)
{
    pc_status st = check_block(s, block, "pc_hca_stream_add", 1);
    if (st != PC_OK || (st = start_counting(s, "pc_hca_stream_add")) != PC_OK)
        return st;
    int on_gpu;
    if ((st = use_gpu(s, block, &on_gpu)) != PC_OK)
        return st;
    double t0 = pc__now();
    if (on_gpu) { /* its counts reach the histogram by folds only, which keep the list */
        fold_sink f = fold_start(s);
        pc__hca_fold_sink sink = {sink_reserve, sink_add, &f};
        if ((st = fold_done(&f, pc__hca_stream_gpu_add(s->gpu, block, &sink))) != PC_OK)
            return st;
        s->gpu_blocks++;
    } else {
        if ((st = pc_points_check(block)) != PC_OK)
            return st;
        forget_cells(s); /* points counted here change the histogram under its list */
        if (s->dense)
            count_dense(s, block);
        else {
            size_t bytes = pc__hca_row_bytes(block);
            for (size_t i = 0; i < block->n; i++)
                if ((st = sparse_add(s, row_key(s, (const unsigned char *)block->data + i * bytes, block->dtype), 1)) !=
                    PC_OK)
                    return st;
        }
    }
    s->points += block->n;
    s->seconds_counting += pc__now() - t0;
    return PC_OK;
}

pc_status pc_hca_stream_hold(pc_hca_stream *s, const pc_points *block)
{
    pc_status st = check_block(s, block, "pc_hca_stream_hold", 1);
    if (st != PC_OK)
        return st;
    if (s->holding)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_hold: the stream holds a block already");
    int on_gpu = 0;
    /* (AUTO makes no GPU state after the finish: the labels of a held block then come from the CPU, as
     * those of any block when the counting ran there) */
    if ((s->gpu || s->phase != FINISHED) && (st = use_gpu(s, block, &on_gpu)) != PC_OK)
        return st;
    s->held = *block;
    /* PC_HCA_STREAM_HOLD=0 leaves the rows where they are (to measure one way against the other). */
    const char *env = getenv("PC_HCA_STREAM_HOLD");
    on_gpu = on_gpu && !(env && strcmp(env, "0") == 0);
    if (on_gpu && (st = pc__hca_stream_gpu_hold(s->gpu, &s->held, 0)) != PC_OK) {
        if (st != PC_DEVICE_OUT_OF_MEMORY && !(s->asked == PC_BACKEND_AUTO && st == PC_DEVICE_ERROR)) {
            memset(&s->held, 0, sizeof s->held);
            return st;
        }
        pc__clear_error(); /* too large for the card (or AUTO's device failing): the calls read the caller's rows */
    }
    s->holding = 1;
    return PC_OK;
}

pc_status pc_hca_stream_hold_device(pc_hca_stream *s, const pc_points *block)
{
    pc_status st = check_block(s, block, "pc_hca_stream_hold_device", 1);
    if (st != PC_OK)
        return st;
    if (s->holding)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_hold_device: the stream holds a block already");
    if (s->asked != PC_BACKEND_CUDA || !s->gpu)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_hold_device: rows in GPU memory need a stream made with "
                        "the CUDA backend");
    s->held = *block;
    if ((st = pc__hca_stream_gpu_hold(s->gpu, &s->held, 1)) != PC_OK) {
        memset(&s->held, 0, sizeof s->held);
        return st;
    }
    s->holding = 1;
    s->held_on_device = 1;
    return PC_OK;
}

static pc_status need_held(const pc_hca_stream *s, const char *call)
{
    if (!s)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: stream is NULL", call);
    return s->holding ? PC_OK : pc__fail(PC_INVALID_ARGUMENT, "%s: the stream holds no block (pc_hca_stream_hold)", call);
}

pc_status pc_hca_stream_bound_held(pc_hca_stream *s)
{
    pc_status st = need_held(s, "pc_hca_stream_bound_held");
    return st != PC_OK ? st : pc_hca_stream_bound(s, &s->held);
}

pc_status pc_hca_stream_add_held(pc_hca_stream *s)
{
    pc_status st = need_held(s, "pc_hca_stream_add_held");
    return st != PC_OK ? st : pc_hca_stream_add(s, &s->held);
}

pc_status pc_hca_stream_label_held(const pc_hca_stream *s, int32_t *labels, double *sums)
{
    pc_status st = need_held(s, "pc_hca_stream_label_held");
    return st != PC_OK ? st : pc_hca_stream_label(s, &s->held, labels, sums);
}

pc_status pc_hca_stream_label_held_device(const pc_hca_stream *s, int32_t *device_labels, double *sums)
{
    pc_status st = need_held(s, "pc_hca_stream_label_held_device");
    if (st != PC_OK)
        return st;
    if (!s->held_on_device)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_label_held_device: the held block is not in GPU memory "
                        "(pc_hca_stream_hold_device)");
    if (s->phase != FINISHED)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_label_held_device: finish the stream first");
    if (!device_labels && s->held.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_label_held_device: device_labels must not be NULL");
    return pc__hca_stream_gpu_label(s->gpu, &s->held, s->g.cells, s->g.key, s->cluster_of_cell, s->k, device_labels, 1,
                                    sums);
}

/* The per-thread slices summed into the first. */
static void fold_slices(pc_hca_stream *s)
{
    size_t total = (size_t)s->total;
    int64_t *count = s->count;
    int slices = s->slices, threads = slices > 1 ? s->threads : 1;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long c = 0; c < (long)total; c++)
        for (int t = 1; t < slices; t++) {
            count[c] += count[(size_t)t * total + (size_t)c];
            count[(size_t)t * total + (size_t)c] = 0;
        }
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const cell_count *)a)->key, y = ((const cell_count *)b)->key;
    return (x > y) - (x < y);
}

/* The dense histogram's non-empty cells in key order: counted a chunk per thread, then written at
 * each chunk's offset (1M cells of a 4-band m = 32 grid: a fraction of a millisecond on all cores). */
static cell_count *dense_cells(const pc_hca_stream *s, size_t *cells)
{
    const int64_t *count = s->count;
    size_t total = (size_t)s->total;
    int threads = total < SMALL_BLOCK ? 1 : s->threads;
    size_t *start = pc__calloc((size_t)threads + 1, sizeof *start, "HCA cell list");
    cell_count *list = NULL;
    if (!start)
        return NULL;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        size_t lo = total / (size_t)nt * (size_t)t, hi = t + 1 == nt ? total : lo + total / (size_t)nt, used = 0;
        for (size_t c = lo; c < hi; c++)
            used += count[c] > 0;
        start[t + 1] = used;
#pragma omp barrier
#pragma omp single
        {
            for (int q = 0; q < nt; q++)
                start[q + 1] += start[q];
            *cells = start[nt];
            list = malloc((start[nt] ? start[nt] : 1) * sizeof *list);
        } /* (every thread waits here for the offsets and the list) */
        for (size_t c = lo, q = start[t]; list && c < hi; c++)
            if (count[c] > 0)
                list[q++] = (cell_count){c, count[c]};
    }
    free(start);
    if (!list)
        pc__fail(PC_OUT_OF_MEMORY, "out of memory for the HCA cell list");
    return list;
}

/* The non-empty cells in increasing key order (sparse: sorted out of the hash), listed once until the
 * counts change (forget_cells); the stream keeps the list. */
static pc_status sorted_cells(pc_hca_stream *s, const cell_count **out, size_t *cells)
{
    *out = NULL;
    *cells = 0;
    if (s->phase != COUNTING)
        return PC_OK;
    pc_status st = fold_gpu(s); /* (which keeps a list up to date) */
    if (st != PC_OK)
        return st;
    if (s->list_ready) {
        *out = s->list;
        *cells = s->list_cells;
        return PC_OK;
    }
    size_t used = 0;
    cell_count *list;
    if (s->dense) {
        fold_slices(s);
        if (!(list = dense_cells(s, &used)))
            return PC_OUT_OF_MEMORY;
    } else {
        used = s->hused;
        if (!(list = pc__alloc(used ? used : 1, sizeof *list, "HCA cell list")))
            return PC_OUT_OF_MEMORY;
        size_t q = 0;
        for (size_t i = 0; i < s->hcap; i++)
            if (s->hkey[i] != EMPTY_KEY)
                list[q++] = (cell_count){s->hkey[i], s->hcount[i]};
        qsort(list, used, sizeof *list, by_key);
    }
    s->list = list;
    s->list_cells = used;
    s->list_ready = 1;
    *out = list;
    *cells = used;
    return PC_OK;
}

pc_status pc_hca_stream_histogram(const pc_hca_stream *cs, size_t *cells, uint64_t *keys, int64_t *counts)
{
    if (!cs || !cells)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_histogram: stream and cells must not be NULL");
    pc__clear_error();
    if (cs->phase == FINISHED)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_histogram: the stream is finished");
    /* Folding the threads' slices changes the representation, not the histogram. */
    pc_hca_stream *s = (pc_hca_stream *)cs;
    const cell_count *list;
    size_t used;
    pc_status st = sorted_cells(s, &list, &used);
    if (st != PC_OK)
        return st;
    if (keys && counts && *cells < used) {
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_histogram: room for %zu cells, the histogram has %zu", *cells,
                        used);
    }
    if (keys && counts)
        for (size_t c = 0; c < used; c++) {
            keys[c] = list[c].key;
            counts[c] = list[c].count;
        }
    *cells = used;
    return PC_OK;
}

pc_status pc_hca_stream_add_histogram(pc_hca_stream *s, size_t cells, const uint64_t *keys, const int64_t *counts)
{
    if (!s || (cells && (!keys || !counts)))
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_add_histogram: stream, keys and counts must not be NULL");
    pc__clear_error();
    pc_status st = start_counting(s, "pc_hca_stream_add_histogram");
    if (st != PC_OK)
        return st;
    for (size_t c = 0; c < cells; c++)
        if (keys[c] >= s->total || counts[c] < 0)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_add_histogram: entry %zu (cell %llu, count %lld) is "
                            "not a cell of a %d^%zu grid with a count >= 0", c, (unsigned long long)keys[c],
                            (long long)counts[c], s->g.m, s->dim);
    /* A listed histogram stays listed: the added cells (exported histograms come by increasing key) are
     * merged into the list, where listing it anew would scan all m^d counts of a dense one (ranks adding
     * each other's histograms, then finishing). */
    int increasing = 1;
    for (size_t c = 1; c < cells && increasing; c++)
        increasing = keys[c] > keys[c - 1];
    size_t merged_cells = 0;
    cell_count *merged = s->list_ready && increasing
                             ? merged_list(s->list, s->list_cells, keys, counts, cells, &merged_cells)
                             : NULL;
    forget_cells(s);
    for (size_t c = 0; c < cells; c++) {
        if (s->dense)
            s->count[keys[c]] += counts[c];
        else if ((st = sparse_add(s, keys[c], counts[c])) != PC_OK) {
            free(merged);
            return st;
        }
        s->points += (uint64_t)counts[c];
    }
    if (merged) {
        s->list = merged;
        s->list_cells = merged_cells;
        s->list_ready = 1;
    }
    return PC_OK;
}

pc_status pc_hca_stream_merge(pc_hca_stream *into, const pc_hca_stream *from)
{
    if (!into || !from)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_merge: streams must not be NULL");
    pc__clear_error();
    if (into->dim != from->dim || into->params.m != from->params.m)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_merge: grids differ (%d^%zu and %d^%zu)", into->params.m,
                        into->dim, from->params.m, from->dim);
    if (into->phase == FINISHED || from->phase == FINISHED)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_merge: a finished stream cannot be merged");
    if (into->phase <= BOUNDING && from->phase <= BOUNDING) {
        /* Two first passes: the boxes join. */
        for (size_t j = 0; j < into->dim; j++) {
            into->g.lo[j] = fmin(into->g.lo[j], from->g.lo[j]);
            into->g.hi[j] = fmax(into->g.hi[j], from->g.hi[j]);
        }
        if (from->phase == BOUNDING)
            into->phase = BOUNDING;
        return PC_OK;
    }
    if (into->phase < BOX_SET || from->phase < BOX_SET ||
        memcmp(into->g.lo, from->g.lo, into->dim * sizeof(double)) != 0 ||
        memcmp(into->g.hi, from->g.hi, into->dim * sizeof(double)) != 0)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_merge: histograms add only over the same box (join the "
                        "boxes of the first passes before counting)");
    size_t cells;
    pc_status st = pc_hca_stream_histogram(from, &cells, NULL, NULL);
    uint64_t *keys = st == PC_OK ? pc__alloc(cells ? cells : 1, sizeof *keys, "HCA histogram copy") : NULL;
    int64_t *counts = keys ? pc__alloc(cells ? cells : 1, sizeof *counts, "HCA histogram copy") : NULL;
    if (st == PC_OK && !counts)
        st = PC_OUT_OF_MEMORY;
    if (st == PC_OK)
        st = pc_hca_stream_histogram(from, &cells, keys, counts);
    if (st == PC_OK)
        st = pc_hca_stream_add_histogram(into, cells, keys, counts);
    free(keys);
    free(counts);
    return st;
}

/* The grid pc_hca would have built: cells in key order with their densities; dense slots. */
static pc_status grid_from_histogram(pc_hca_stream *s)
{
    const cell_count *list;
    size_t cells;
    pc_status st = sorted_cells(s, &list, &cells);
    if (st != PC_OK)
        return st;
    if (cells > (size_t)INT32_MAX) {
        return pc__fail(PC_INVALID_ARGUMENT, "HCA handles up to 2^31 - 1 non-empty cells, the histogram has %zu", cells);
    }
    pc__hca_grid *g = &s->g;
    g->key = pc__alloc(cells, sizeof *g->key, "HCA cells");
    g->density = pc__alloc(cells, sizeof *g->density, "HCA densities");
    if (!g->key || !g->density)
        return PC_OUT_OF_MEMORY;
    for (size_t c = 0; c < cells; c++) {
        g->key[c] = list[c].key;
        g->density[c] = list[c].count;
    }
    forget_cells(s);
    g->cells = cells;
    g->n = (size_t)s->points;
    /* Dense slots (int32: cells < 2^31 whenever m^dim is) where pc_hca's rule would have them, for the
     * host's lookups of keys. A stream asked to run on the GPU labels every block there, from the
     * device's map, and makes its graph there too but where a count passes int32 (the sorted keys serve
     * that graph): it skips the m^d slots and the two passes over them. */
    g->dense = s->asked != PC_BACKEND_CUDA && s->total <= (uint64_t)INT32_MAX &&
               s->total * sizeof(int32_t) <= s->params.memory_budget;
    free(s->count); /* the slots take the counts' place */
    s->count = NULL;
    if (g->dense) {
        g->slot = pc__alloc((size_t)s->total, sizeof *g->slot, "HCA dense grid");
        if (!g->slot)
            return PC_OUT_OF_MEMORY;
        int threads = s->total < SMALL_BLOCK ? 1 : s->threads;
        (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long c = 0; c < (long)s->total; c++)
            g->slot[c] = -1;
        for (size_t c = 0; c < cells; c++)
            g->slot[g->key[c]] = (int32_t)c;
    }
    pc__hca_grid_deltas(g);
    return PC_OK;
}

pc_status pc_hca_stream_finish(pc_hca_stream *s, pc_result **result)
{
    if (!s || !result)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_finish: stream and result must not be NULL");
    *result = NULL;
    pc__clear_error();
    if (s->phase != COUNTING || s->points == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_finish: %s",
                        s->phase == FINISHED ? "the stream is finished already" : "no points were added");
    pc__hca_graph gr;
    memset(&gr, 0, sizeof gr);
    pc_result *r = pc__result_new((size_t)s->points, s->dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    /* CUDA where the GPU took blocks (or was asked for: AUTO's small blocks stay on the CPU). */
    r->backend = s->asked == PC_BACKEND_CUDA || s->gpu_blocks ? PC_BACKEND_CUDA
                 : s->threads > 1                          ? PC_BACKEND_OPENMP
                                                           : PC_BACKEND_SEQUENTIAL;
    double t0 = pc__now();
    pc_status st = grid_from_histogram(s);
    s->phase = FINISHED; /* the histogram has become the grid: no way back */
    double t1 = pc__now(), t2 = t1, t3 = t1, t4 = t1;
    if (st != PC_OK || (st = build_graph(s, &gr)) != PC_OK)
        goto done;
    t2 = pc__now();
    if ((st = pc__hca_dendrogram(&gr, &r->dendrogram)) != PC_OK)
        goto done;
    t3 = pc__now();
    s->cluster_of_cell = pc__alloc(s->g.cells, sizeof *s->cluster_of_cell, "HCA cell clusters");
    if (!s->cluster_of_cell) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    if ((st = pc__hca_cut(&s->g, &gr, r->dendrogram, s->params.clusters, s->params.threshold,
                          pc__hca_min_size(&s->params, s->points), s->params.noise, s->cluster_of_cell, &s->k)) != PC_OK)
        goto done;
    t4 = pc__now();
    r->k = s->k;
    r->sizes = pc__calloc(s->k ? s->k : 1, sizeof *r->sizes, "cluster sizes");
    if (!r->sizes || (st = pc__hca_result_components(r, &s->g, &gr)) != PC_OK) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    for (size_t c = 0; c < s->g.cells; c++)
        if (s->cluster_of_cell[c] >= 0)
            r->sizes[s->cluster_of_cell[c]] += s->g.density[c];
    if (s->g.dense) { /* labelling looks clusters up by slot directly */
        s->cluster_of_slot = s->g.slot;
        s->g.slot = NULL;
        int32_t *slot = s->cluster_of_slot;
        const int32_t *cluster = s->cluster_of_cell;
        int threads = s->total < SMALL_BLOCK ? 1 : s->threads;
        (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long c = 0; c < (long)s->total; c++)
            if (slot[c] >= 0)
                slot[c] = cluster[slot[c]];
        s->g.dense = 0; /* the grid's own lookups (none from here on) would search the sorted keys */
    }
    pc__result_add_stage(r, "histogram", s->seconds_counting);
    pc__result_add_stage(r, "grid", t1 - t0);
    pc__result_add_stage(r, "components", t2 - t1);
    pc__result_add_stage(r, "dendrogram", t3 - t2);
    pc__result_add_stage(r, "cut", t4 - t3);
done:
    pc__hca_graph_free(&gr);
    if (st != PC_OK) {
        pc_result_free(r);
        return st;
    }
    *result = r;
    return PC_OK;
}

/* The cluster of a key: the slot map (dense), else a search of the sorted cells. */
static inline int32_t cluster_of_key(const pc_hca_stream *s, uint64_t key)
{
    if (s->cluster_of_slot)
        return s->cluster_of_slot[key];
    long c = pc__hca_find(&s->g, key);
    return c >= 0 ? s->cluster_of_cell[c] : -1;
}

/* Rows [i, end): their labels, and their values and a count added to isum (integer rows) or dsum per
 * cluster (neither when both are NULL). Neighbouring pixels mostly share a cluster: integer sums run
 * in registers while the cluster stays the same (memory's add-after-add chain would set the pace). */
static inline __attribute__((always_inline)) void label_rows(const pc_hca_stream *s, const unsigned char *base,
                                                             size_t bytes, size_t i, size_t end, pc_dtype t,
                                                             size_t dim, int32_t *labels, double *dsum,
                                                             uint64_t *isum)
{
    int32_t run_c = -1;
    uint64_t acc[8] = {0}, run = 0;
    for (; i < end; i++) {
        const unsigned char *row = base + i * bytes;
        int32_t c = cluster_of_key(s, key_of(s, row, t, dim));
        labels[i] = c;
        if (c < 0)
            continue;
        if (isum) {
            if (c != run_c) {
                if (run) {
                    uint64_t *sum = isum + (size_t)run_c * (dim + 1);
                    for (size_t j = 0; j < dim; j++)
                        sum[j] += acc[j], acc[j] = 0;
                    sum[dim] += run;
                }
                run_c = c;
                run = 0;
            }
            for (size_t j = 0; j < dim; j++) {
                uint16_t v = row[j];
                if (t == PC_U16)
                    memcpy(&v, row + 2 * j, 2);
                acc[j] += v;
            }
            run++;
        } else if (dsum) {
            double *sum = dsum + (size_t)c * (dim + 1);
            for (size_t j = 0; j < dim; j++)
                sum[j] += pc__hca_value(row, t, j);
            sum[dim] += 1;
        }
    }
    if (isum && run) {
        uint64_t *sum = isum + (size_t)run_c * (dim + 1);
        for (size_t j = 0; j < dim; j++)
            sum[j] += acc[j];
        sum[dim] += run;
    }
}

pc_status pc_hca_stream_label(const pc_hca_stream *s, const pc_points *block, int32_t *labels, double *sums)
{
    pc_status st = check_block(s, block, "pc_hca_stream_label", 1);
    if (st != PC_OK)
        return st;
    if (!labels)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_label: labels must not be NULL");
    if (s->phase != FINISHED)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_hca_stream_label: finish the stream first");
    /* The GPU state exists only if it counted (AUTO) or was asked for; it serialises its callers. */
    if (s->gpu && (s->asked == PC_BACKEND_CUDA || block->n >= GPU_MIN_ROWS)) {
        st = pc__hca_stream_gpu_label(s->gpu, block, s->g.cells, s->g.key, s->cluster_of_cell, s->k, labels, 0, sums);
        /* AUTO does not fail for want of a busy or full GPU: the CPU labels the block. */
        if (st == PC_OK || s->asked == PC_BACKEND_CUDA || (st != PC_DEVICE_OUT_OF_MEMORY && st != PC_DEVICE_ERROR))
            return st;
        pc__clear_error();
    }
    if ((st = pc_points_check(block)) != PC_OK)
        return st;
    size_t bytes = pc__hca_row_bytes(block), dim = s->dim, k = s->k, n = block->n;
    const unsigned char *base = block->data;
    int threads = n < SMALL_BLOCK ? 1 : s->threads;
    int failed = 0;
    pc_dtype dtype = block->dtype;
    /* Integer rows sum in uint64 (exact; as doubles they are exact too below 2^53, so the sums handed
     * back are the same either way), in the same loop as the labels: the rows are read once. */
    int integer = dtype == PC_U8 || dtype == PC_U16;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        int t = 0, nt = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        size_t cells = k * (dim + 1) + 1;
        double *mine = sums ? calloc(cells, sizeof *mine) : NULL;
        uint64_t *isum = sums && integer ? calloc(cells, sizeof *isum) : NULL;
        failed |= sums && (!mine || (integer && !isum));
        size_t i = n / (size_t)nt * (size_t)t, end = t + 1 == nt ? n : i + n / (size_t)nt;
        if (!failed) {
#define LABEL_ROWS(T, D) label_rows(s, base, bytes, i, end, T, D, labels, mine, isum)
            FOR_DIM(LABEL_ROWS, dtype, dim);
#undef LABEL_ROWS
        }
        if (isum)
            for (size_t c = 0; c < cells; c++)
                mine[c] = (double)isum[c];
        if (mine && !failed)
            pc__team_add_ordered(sums, mine, k * (dim + 1));
        free(isum);
        free(mine);
    }
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate per-thread cluster sums") : PC_OK;
}
