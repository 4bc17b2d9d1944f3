/* Clustering quality metrics between two labelings (ARI, NMI, Hungarian-matched accuracy), all built
 * on one sparse contingency table so that millions of points and many clusters stay cheap. */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The pair counts of ARI reach n^2 and their products n^4: 128-bit integers keep them exact, as
 * scikit-learn does with Python integers, so the two agree to the last bit. */
#if defined(__SIZEOF_INT128__)
__extension__ typedef __int128 wide_int;
#else
typedef long double wide_int;
#endif

/* Dense contingency tables are used up to this many cells (and only when not much larger than the
 * data); beyond it the cells are found by sorting (row, column) keys. */
#define DENSE_MAX_CELLS ((uint64_t)1 << 24)
#define DENSE_ALWAYS_CELLS ((uint64_t)1 << 16)

/* Limits of the Hungarian method per connected block of the table (smaller side s, larger side l):
 * each of the s searches scans up to l columns several times, and an s x l dense matching of
 * 20000 x 20000 random cells already takes seconds. Past these limits the call is refused rather
 * than left running for minutes. The second limit is on the sum of s * l over all blocks. */
#define MATCH_MAX_SIDE 20000
#define MATCH_MAX_PRODUCT 2e9

/* The contingency table: r classes (rows) by c clusters (columns), non-zero cells in row-major order
 * (the order of scikit-learn's CSR matrix, so sums run in the same order). */
typedef struct {
    size_t n, r, c;
    int64_t *row_sum, *col_sum;
    size_t nnz;
    size_t *cell_row, *cell_col;
    int64_t *cell_count;
} table;

static void table_free(table *t)
{
    free(t->row_sum);
    free(t->col_sum);
    free(t->cell_row);
    free(t->cell_col);
    free(t->cell_count);
    memset(t, 0, sizeof *t);
}

/* Never asks for zero bytes, whose NULL answer would read as out of memory. */
static void *alloc_n(size_t n, size_t size, const char *what)
{
    return pc__alloc(n ? n : 1, size, what);
}

static void *calloc_n(size_t n, size_t size, const char *what)
{
    return pc__calloc(n ? n : 1, size, what);
}

static unsigned bits_needed(uint64_t max_value)
{
    unsigned bits = 0;
    while (bits < 64 && (max_value >> bits) != 0)
        bits++;
    return bits;
}

/* LSD radix sort on bits [from, from + bits), 11 bits a pass (a histogram that stays in L1 and few enough
 * scatter targets for the TLB): linear in n, where qsort on 10M keys is several times slower. */
#define RADIX_BITS 11
#define RADIX_SIZE ((size_t)1 << RADIX_BITS)
static pc_status radix_sort_u64(uint64_t *keys, size_t n, unsigned from, unsigned bits)
{
    if (n < 2 || bits == 0)
        return PC_OK;
    uint64_t *tmp = alloc_n(n, sizeof *tmp, "radix sort buffer");
    if (!tmp)
        return PC_OUT_OF_MEMORY;
    size_t count[RADIX_SIZE];
    uint64_t *src = keys, *dst = tmp;
    for (unsigned shift = from; shift < from + bits; shift += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & (RADIX_SIZE - 1)]++;
        size_t sum = 0;
        for (size_t d = 0; d < RADIX_SIZE; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & (RADIX_SIZE - 1)]++] = src[i];
        uint64_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != keys)
        memcpy(keys, src, n * sizeof *keys);
    free(tmp);
    return PC_OK;
}

/* All negative labels are one "noise" class. */
static int64_t label_key(int32_t label)
{
    return label < 0 ? -1 : (int64_t)label;
}

/* Maps labels to dense ids 0..k-1 in increasing label order (as numpy.unique does). Labels spanning a
 * small range use a lookup table; wide-ranging ones are sorted and binary-searched. */
static pc_status remap_labels(const int32_t *labels, size_t n, uint32_t *ids, size_t *k_out)
{
    int64_t lo = label_key(labels[0]), hi = lo;
    for (size_t i = 1; i < n; i++) {
        int64_t key = label_key(labels[i]);
        if (key < lo)
            lo = key;
        if (key > hi)
            hi = key;
    }
    uint64_t range = (uint64_t)(hi - lo) + 1;
    size_t k = 0;
    if (range <= DENSE_ALWAYS_CELLS || (range <= DENSE_MAX_CELLS && range <= 4 * (uint64_t)n)) {
        uint32_t *lookup = calloc_n((size_t)range, sizeof *lookup, "label lookup table");
        if (!lookup)
            return PC_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
            lookup[label_key(labels[i]) - lo] = 1;
        for (size_t v = 0; v < (size_t)range; v++)
            if (lookup[v])
                lookup[v] = (uint32_t)++k; /* id + 1, so that 0 keeps meaning "absent" */
        for (size_t i = 0; i < n; i++)
            ids[i] = lookup[label_key(labels[i]) - lo] - 1;
        free(lookup);
    } else if ((uint64_t)n <= UINT32_MAX) {
        /* Sort (label, position) pairs by label, then number the runs: one pass of scattered writes,
         * where binary searches would miss the cache some twenty times a point. */
        uint64_t *pairs = alloc_n(n, sizeof *pairs, "sorted labels");
        if (!pairs)
            return PC_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
            pairs[i] = (uint64_t)(label_key(labels[i]) - lo) << 32 | (uint64_t)i;
        pc_status st = radix_sort_u64(pairs, n, 32, bits_needed(range - 1));
        if (st != PC_OK) {
            free(pairs);
            return st;
        }
        for (size_t i = 0; i < n; i++) {
            if (i > 0 && (pairs[i] >> 32) != (pairs[i - 1] >> 32))
                k++;
            ids[pairs[i] & UINT32_MAX] = (uint32_t)k;
        }
        k++;
        free(pairs);
    } else {
        /* Over 2^32 points the positions no longer fit beside the labels: sort the labels alone
         * and binary-search each point's. */
        uint64_t *sorted = alloc_n(n, sizeof *sorted, "sorted labels");
        if (!sorted)
            return PC_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
            sorted[i] = (uint64_t)(label_key(labels[i]) - lo);
        pc_status st = radix_sort_u64(sorted, n, 0, bits_needed(range - 1));
        if (st != PC_OK) {
            free(sorted);
            return st;
        }
        for (size_t i = 0; i < n; i++)
            if (k == 0 || sorted[i] != sorted[k - 1])
                sorted[k++] = sorted[i];
        for (size_t i = 0; i < n; i++) {
            uint64_t key = (uint64_t)(label_key(labels[i]) - lo);
            size_t a = 0, b = k; /* the key is present: find it in [a, b) */
            while (b - a > 1) {
                size_t mid = a + (b - a) / 2;
                if (sorted[mid] <= key)
                    a = mid;
                else
                    b = mid;
            }
            ids[i] = (uint32_t)a;
        }
        free(sorted);
    }
    *k_out = k;
    return PC_OK;
}

/* A weighted cell of the sparse path: its key and the points in it. */
typedef struct {
    uint64_t key;
    int64_t count;
} weighted_key;

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const weighted_key *)a)->key, y = ((const weighted_key *)b)->key;
    return (x > y) - (x < y);
}

/* The table of n points (weights NULL), or of n distinct-or-not (truth, pred) pairs each standing for
 * weights[i] >= 1 points. */
static pc_status table_build(const int32_t *truth, const int32_t *pred, const int64_t *weights, size_t n, table *t)
{
    memset(t, 0, sizeof *t);
    t->n = n;
    if (weights) {
        t->n = 0;
        for (size_t i = 0; i < n; i++)
            t->n += (size_t)weights[i];
    }
    pc_status st = PC_OUT_OF_MEMORY;
    /* Distinct int32 labels, negatives merged, number at most 2^31 + 1: 32-bit ids suffice. */
    uint32_t *tid = alloc_n(n, sizeof *tid, "class ids");
    uint32_t *pid = alloc_n(n, sizeof *pid, "cluster ids");
    int64_t *dense = NULL;
    uint64_t *keys = NULL;
    weighted_key *wkeys = NULL;
    if (!tid || !pid)
        goto done;
    if ((st = remap_labels(truth, n, tid, &t->r)) != PC_OK)
        goto done;
    if ((st = remap_labels(pred, n, pid, &t->c)) != PC_OK)
        goto done;
    st = PC_OUT_OF_MEMORY;
    t->row_sum = calloc_n(t->r, sizeof *t->row_sum, "class sizes");
    t->col_sum = calloc_n(t->c, sizeof *t->col_sum, "cluster sizes");
    if (!t->row_sum || !t->col_sum)
        goto done;
    for (size_t i = 0; i < n; i++) {
        int64_t w = weights ? weights[i] : 1;
        t->row_sum[tid[i]] += w;
        t->col_sum[pid[i]] += w;
    }
    /* r and c are at most 2^31 + 1 each (distinct int32 labels), so r * c fits in 64 bits. */
    uint64_t cells = (uint64_t)t->r * t->c;
    if (cells <= DENSE_ALWAYS_CELLS || (cells <= DENSE_MAX_CELLS && cells <= 2 * (uint64_t)n)) {
        dense = calloc_n((size_t)cells, sizeof *dense, "contingency table");
        if (!dense)
            goto done;
        for (size_t i = 0; i < n; i++)
            dense[(size_t)tid[i] * t->c + pid[i]] += weights ? weights[i] : 1;
        for (size_t cell = 0; cell < (size_t)cells; cell++)
            t->nnz += dense[cell] != 0;
    } else if (weights) { /* pairs, not points: few enough to sort with their weights */
        wkeys = alloc_n(n, sizeof *wkeys, "contingency keys");
        if (!wkeys)
            goto done;
        for (size_t i = 0; i < n; i++)
            wkeys[i] = (weighted_key){(uint64_t)tid[i] * t->c + pid[i], weights[i]};
        qsort(wkeys, n, sizeof *wkeys, by_key);
        for (size_t i = 0; i < n; i++)
            t->nnz += i == 0 || wkeys[i].key != wkeys[i - 1].key;
    } else {
        keys = alloc_n(n, sizeof *keys, "contingency keys");
        if (!keys)
            goto done;
        for (size_t i = 0; i < n; i++)
            keys[i] = (uint64_t)tid[i] * t->c + pid[i];
        if ((st = radix_sort_u64(keys, n, 0, bits_needed(cells - 1))) != PC_OK)
            goto done;
        st = PC_OUT_OF_MEMORY;
        for (size_t i = 0; i < n; i++)
            t->nnz += i == 0 || keys[i] != keys[i - 1];
    }
    t->cell_row = alloc_n(t->nnz, sizeof *t->cell_row, "contingency rows");
    t->cell_col = alloc_n(t->nnz, sizeof *t->cell_col, "contingency columns");
    t->cell_count = alloc_n(t->nnz, sizeof *t->cell_count, "contingency counts");
    if (!t->cell_row || !t->cell_col || !t->cell_count)
        goto done;
    size_t e = 0;
    if (dense) {
        for (size_t cell = 0; cell < (size_t)cells; cell++) {
            if (dense[cell]) {
                t->cell_row[e] = cell / t->c;
                t->cell_col[e] = cell % t->c;
                t->cell_count[e] = dense[cell];
                e++;
            }
        }
    } else if (wkeys) {
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || wkeys[i].key != wkeys[i - 1].key) {
                t->cell_row[e] = (size_t)(wkeys[i].key / t->c);
                t->cell_col[e] = (size_t)(wkeys[i].key % t->c);
                t->cell_count[e] = 0;
                e++;
            }
            t->cell_count[e - 1] += wkeys[i].count;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || keys[i] != keys[i - 1]) {
                t->cell_row[e] = (size_t)(keys[i] / t->c);
                t->cell_col[e] = (size_t)(keys[i] % t->c);
                t->cell_count[e] = 0;
                e++;
            }
            t->cell_count[e - 1]++;
        }
    }
    st = PC_OK;
done:
    free(tid);
    free(pid);
    free(dense);
    free(keys);
    free(wkeys);
    if (st != PC_OK)
        table_free(t);
    return st;
}

/* Shared argument checks and table construction for the three public calls. */
static pc_status prepare(const char *name, const int32_t *truth, const int32_t *pred, size_t n, double *out,
                         table *t)
{
    pc__clear_error();
    if (out)
        *out = NAN;
    if (!truth || !pred || !out)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: %s is NULL", name,
                        !truth ? "truth" : !pred ? "pred" : "the output pointer");
    if (n == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: n must be >= 1, got 0", name);
    return table_build(truth, pred, NULL, n, t);
}

/* scikit-learn's pair confusion matrix, counting ordered pairs. */
static double ari_of(const table *t)
{
    wide_int sum_sq = 0, sum_rows = 0, sum_cols = 0, nn = (wide_int)t->n;
    for (size_t e = 0; e < t->nnz; e++)
        sum_sq += (wide_int)t->cell_count[e] * t->cell_count[e];
    for (size_t i = 0; i < t->r; i++)
        sum_rows += (wide_int)t->row_sum[i] * t->row_sum[i];
    for (size_t j = 0; j < t->c; j++)
        sum_cols += (wide_int)t->col_sum[j] * t->col_sum[j];
    wide_int tp = sum_sq - nn;
    wide_int fp = sum_cols - sum_sq;
    wide_int fn = sum_rows - sum_sq;
    wide_int tn = nn * nn - fp - fn - sum_sq;
    if (fn == 0 && fp == 0) /* full agreement, including the degenerate "one cluster" and "all singletons" */
        return 1.0;
    /* The four pair counts are below n^2; their products stay exact in 128 bits while n^2 < 2^63.
     * Beyond that (pair counts summed over ranks) the products are formed in long double (64-bit
     * mantissa: each count exact while n <= 2^32, rounded once beyond), |num| <= 1.5 den, so the
     * ratio keeps long double's relative precision, far below double's. */
    if (t->n <= (size_t)3037000499u) {
        wide_int num = tp * tn - fn * fp;
        wide_int den = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn);
        return 2.0 * (double)num / (double)den;
    }
    long double ltp = (long double)tp, lfp = (long double)fp, lfn = (long double)fn, ltn = (long double)tn;
    long double num = ltp * ltn - lfn * lfp;
    long double den = (ltp + lfn) * (lfn + ltn) + (ltp + lfp) * (lfp + ltn);
    return (double)(2.0L * num / den);
}

pc_status pc_adjusted_rand_index(const int32_t *truth, const int32_t *pred, size_t n, double *ari)
{
    table t;
    pc_status st = prepare("pc_adjusted_rand_index", truth, pred, n, ari, &t);
    if (st != PC_OK)
        return st;
    *ari = ari_of(&t);
    table_free(&t);
    return PC_OK;
}

/* Entropy of a labeling from its class sizes, in scikit-learn's operation order. */
static double entropy_of(const int64_t *sizes, size_t k, double total)
{
    if (k == 1)
        return 0.0;
    double log_total = log(total), h = 0.0;
    for (size_t i = 0; i < k; i++) {
        double p = (double)sizes[i];
        h += (p / total) * (log(p) - log_total);
    }
    return -h;
}

static double nmi_of(const table *t)
{
    if (t->r == 1 && t->c == 1) /* neither labeling splits the data: a perfect match by scikit-learn's convention */
        return 1.0;
    /* Mutual information, term by term as sklearn's mutual_info_score writes it (terms below machine
     * epsilon are dropped, which decides the "mi == 0" case the same way). A single class on either
     * side means zero entropy and so zero mutual information. */
    double mi = 0.0;
    if (t->r > 1 && t->c > 1) {
        double total = (double)t->n, log_total = log(total);
        for (size_t e = 0; e < t->nnz; e++) {
            double v = (double)t->cell_count[e];
            double p = v / total;
            /* Sizes below 2^53 are exact in a double, so this is the int64 product rounded once, as
             * scikit-learn forms it, without overflowing where the sizes pass 2^31.5 each. */
            double outer = (double)t->row_sum[t->cell_row[e]] * (double)t->col_sum[t->cell_col[e]];
            double log_outer = -log(outer) + log_total + log_total;
            double term = p * (log(v) - log_total) + p * log_outer;
            if (fabs(term) < DBL_EPSILON)
                term = 0.0;
            mi += term;
        }
        if (mi < 0.0)
            mi = 0.0;
    }
    if (mi == 0.0)
        return 0.0;
    double h_true = entropy_of(t->row_sum, t->r, (double)t->n);
    double h_pred = entropy_of(t->col_sum, t->c, (double)t->n);
    return mi / ((h_true + h_pred) / 2.0);
}

pc_status pc_normalized_mutual_info(const int32_t *truth, const int32_t *pred, size_t n, double *nmi)
{
    table t;
    pc_status st = prepare("pc_normalized_mutual_info", truth, pred, n, nmi, &t);
    if (st != PC_OK)
        return st;
    *nmi = nmi_of(&t);
    table_free(&t);
    return PC_OK;
}

/* Scratch of the Hungarian method, sized for the largest block. */
typedef struct {
    int64_t *u, *v, *dist, *dense;
    size_t *path, *row4col, *col4row, *remaining;
    unsigned char *row_seen, *col_seen;
    size_t *start, *col; /* the block as CSR, rows being its smaller side */
    int64_t *cnt;
} hungarian;

/* Maximum-weight matching of an nr x nc block (nr <= nc) given as CSR, as a minimum-cost assignment
 * with costs -count: one shortest augmenting path (Dijkstra on reduced costs, Jonker-Volgenant style,
 * as in Crouse 2016) per row, O(nr^2 nc) at worst. A search scans only the columns it has not reached
 * yet and stops at the first free column, so typical blocks cost far less. Rows are expanded into a
 * dense scratch row only while scanned, so memory stays O(cells + nc). Returns the matched count. */
static int64_t hungarian_max(hungarian *h, size_t nr, size_t nc)
{
    const int64_t inf = INT64_MAX / 4;
    const size_t none = SIZE_MAX;
    int64_t *u = h->u, *v = h->v, *dist = h->dist, *dense = h->dense;
    size_t *path = h->path, *row4col = h->row4col, *col4row = h->col4row, *remaining = h->remaining;
    for (size_t i = 0; i < nr; i++) {
        u[i] = 0;
        col4row[i] = none;
    }
    for (size_t j = 0; j < nc; j++) {
        v[j] = 0;
        row4col[j] = none;
        dense[j] = 0;
    }
    for (size_t cur = 0; cur < nr; cur++) {
        for (size_t i = 0; i < nr; i++)
            h->row_seen[i] = 0;
        for (size_t j = 0; j < nc; j++) {
            h->col_seen[j] = 0;
            dist[j] = inf;
            remaining[j] = nc - 1 - j;
        }
        size_t left = nc, i = cur, sink = none;
        int64_t min_val = 0;
        while (sink == none) {
            h->row_seen[i] = 1;
            for (size_t e = h->start[i]; e < h->start[i + 1]; e++)
                dense[h->col[e]] = h->cnt[e];
            size_t best = none;
            int64_t lowest = inf;
            for (size_t it = 0; it < left; it++) {
                size_t j = remaining[it];
                int64_t r = min_val - dense[j] - u[i] - v[j];
                if (r < dist[j]) {
                    path[j] = i;
                    dist[j] = r;
                }
                /* Ties go to a free column: the search can end there. */
                if (dist[j] < lowest || (dist[j] == lowest && row4col[j] == none)) {
                    lowest = dist[j];
                    best = it;
                }
            }
            for (size_t e = h->start[i]; e < h->start[i + 1]; e++)
                dense[h->col[e]] = 0;
            /* nr <= nc and every cost is finite, so a column was always found. */
            min_val = lowest;
            size_t j = remaining[best];
            if (row4col[j] == none)
                sink = j;
            else
                i = row4col[j];
            h->col_seen[j] = 1;
            remaining[best] = remaining[--left];
        }
        /* Potentials keep every reduced cost >= 0 and those on the matching at 0. */
        u[cur] += min_val;
        for (size_t r = 0; r < nr; r++)
            if (h->row_seen[r] && r != cur)
                u[r] += min_val - dist[col4row[r]];
        for (size_t j = 0; j < nc; j++)
            if (h->col_seen[j])
                v[j] -= min_val - dist[j];
        for (size_t j = sink;;) { /* flip the matching along the path */
            size_t r = path[j];
            row4col[j] = r;
            size_t previous = col4row[r];
            col4row[r] = j;
            j = previous;
            if (r == cur)
                break;
        }
    }
    int64_t matched = 0;
    for (size_t r = 0; r < nr; r++)
        for (size_t e = h->start[r]; e < h->start[r + 1]; e++)
            if (h->col[e] == col4row[r])
                matched += h->cnt[e];
    return matched;
}

static size_t uf_find(size_t *parent, size_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Zero cells never help a maximum matching, so the table splits into the connected blocks of its
 * non-zero cells and each block is matched on its own: pure clusters cost nothing, and the Hungarian
 * method only sees the genuinely confused part. */
static pc_status matched_count(const table *t, const char *caller, int64_t *out)
{
    pc_status st = PC_OUT_OF_MEMORY;
    size_t nodes = t->r + t->c, K = 0;
    size_t *parent = alloc_n(nodes, sizeof *parent, "matching components");
    size_t *local = alloc_n(nodes, sizeof *local, "matching local indices");
    size_t *comp_rows = NULL, *comp_cols = NULL, *cell_start = NULL, *order = NULL;
    hungarian h;
    memset(&h, 0, sizeof h);
    if (!parent || !local)
        goto done;
    for (size_t x = 0; x < nodes; x++)
        parent[x] = x;
    for (size_t e = 0; e < t->nnz; e++) {
        size_t a = uf_find(parent, t->cell_row[e]), b = uf_find(parent, t->r + t->cell_col[e]);
        if (a != b)
            parent[a < b ? b : a] = a < b ? a : b;
    }
    /* Number the blocks; `local` first holds each root's block id, then each node's index in it. */
    for (size_t x = 0; x < nodes; x++)
        if (uf_find(parent, x) == x)
            local[x] = K++;
    comp_rows = calloc_n(K, sizeof *comp_rows, "block rows");
    comp_cols = calloc_n(K, sizeof *comp_cols, "block columns");
    cell_start = calloc_n(K + 1, sizeof *cell_start, "block cells");
    order = alloc_n(t->nnz, sizeof *order, "block cell order");
    if (!comp_rows || !comp_cols || !cell_start || !order)
        goto done;
    for (size_t x = 0; x < nodes; x++)
        parent[x] = uf_find(parent, x); /* every node now points at its root */
    for (size_t x = 0; x < nodes; x++)
        parent[x] = local[parent[x]]; /* and now holds its block id */
    for (size_t x = 0; x < nodes; x++)
        local[x] = x < t->r ? comp_rows[parent[x]]++ : comp_cols[parent[x]]++;
    for (size_t e = 0; e < t->nnz; e++)
        cell_start[parent[t->cell_row[e]] + 1]++;
    double work = 0.0;
    size_t max_small = 0, max_large = 0, max_cells = 0, worst = 0;
    for (size_t k = 0; k < K; k++) {
        size_t small = comp_rows[k] < comp_cols[k] ? comp_rows[k] : comp_cols[k];
        size_t large = comp_rows[k] < comp_cols[k] ? comp_cols[k] : comp_rows[k];
        work += (double)small * (double)large;
        if ((double)small * (double)large > (double)comp_rows[worst] * (double)comp_cols[worst])
            worst = k;
        if (small > max_small)
            max_small = small;
        if (large > max_large)
            max_large = large;
        if (cell_start[k + 1] > max_cells)
            max_cells = cell_start[k + 1];
        cell_start[k + 1] += cell_start[k];
    }
    if (max_small > MATCH_MAX_SIDE || work > MATCH_MAX_PRODUCT) {
        st = pc__fail(PC_INVALID_ARGUMENT,
                      "%s: %zu classes x %zu clusters are too many for the Hungarian method: "
                      "the largest block of classes and clusters sharing points is %zu x %zu (limits: "
                      "smaller side <= %d, classes x clusters summed over blocks <= %.3g, here %.3g)",
                      caller, t->r, t->c, comp_rows[worst], comp_cols[worst], MATCH_MAX_SIDE, MATCH_MAX_PRODUCT, work);
        goto done;
    }
    {
        /* Stable bucketing of cells by block keeps each block's cells in row-major order. */
        size_t *fill = alloc_n(K, sizeof *fill, "block fill");
        if (!fill)
            goto done;
        memcpy(fill, cell_start, K * sizeof *fill);
        for (size_t e = 0; e < t->nnz; e++)
            order[fill[parent[t->cell_row[e]]]++] = e;
        free(fill);
    }
    h.u = alloc_n(max_small, sizeof *h.u, "hungarian potentials");
    h.v = alloc_n(max_large, sizeof *h.v, "hungarian potentials");
    h.dist = alloc_n(max_large, sizeof *h.dist, "hungarian distances");
    h.dense = alloc_n(max_large, sizeof *h.dense, "hungarian row");
    h.path = alloc_n(max_large, sizeof *h.path, "hungarian paths");
    h.row4col = alloc_n(max_large, sizeof *h.row4col, "hungarian assignment");
    h.col4row = alloc_n(max_small, sizeof *h.col4row, "hungarian assignment");
    h.remaining = alloc_n(max_large, sizeof *h.remaining, "hungarian columns left");
    h.row_seen = alloc_n(max_small, sizeof *h.row_seen, "hungarian marks");
    h.col_seen = alloc_n(max_large, sizeof *h.col_seen, "hungarian marks");
    h.start = alloc_n(max_small + 1, sizeof *h.start, "hungarian rows");
    h.col = alloc_n(max_cells, sizeof *h.col, "hungarian columns");
    h.cnt = alloc_n(max_cells, sizeof *h.cnt, "hungarian counts");
    if (!h.u || !h.v || !h.dist || !h.dense || !h.path || !h.row4col || !h.col4row || !h.remaining ||
        !h.row_seen || !h.col_seen || !h.start || !h.col || !h.cnt)
        goto done;
    int64_t matched = 0;
    for (size_t k = 0; k < K; k++) {
        size_t first = cell_start[k], ncell = cell_start[k + 1] - first;
        if (ncell == 1) { /* a pure cluster matching a whole class: the common case */
            matched += t->cell_count[order[first]];
            continue;
        }
        /* The block's smaller side becomes the rows, as the method needs rows <= columns. */
        int transpose = comp_rows[k] > comp_cols[k];
        size_t nr = transpose ? comp_cols[k] : comp_rows[k];
        size_t nc = transpose ? comp_rows[k] : comp_cols[k];
        for (size_t i = 0; i <= nr; i++)
            h.start[i] = 0;
        for (size_t q = 0; q < ncell; q++) {
            size_t e = order[first + q];
            size_t row = transpose ? local[t->r + t->cell_col[e]] : local[t->cell_row[e]];
            h.start[row + 1]++;
        }
        for (size_t i = 0; i < nr; i++)
            h.start[i + 1] += h.start[i];
        /* Fill by counting sort, then restore the starts that filling advanced. */
        for (size_t q = 0; q < ncell; q++) {
            size_t e = order[first + q];
            size_t lr = local[t->cell_row[e]], lc = local[t->r + t->cell_col[e]];
            size_t row = transpose ? lc : lr, col = transpose ? lr : lc;
            size_t slot = h.start[row]++;
            h.col[slot] = col;
            h.cnt[slot] = t->cell_count[e];
        }
        for (size_t i = nr; i > 0; i--)
            h.start[i] = h.start[i - 1];
        h.start[0] = 0;
        matched += hungarian_max(&h, nr, nc);
    }
    *out = matched;
    st = PC_OK;
done:
    free(parent);
    free(local);
    free(comp_rows);
    free(comp_cols);
    free(cell_start);
    free(order);
    free(h.u);
    free(h.v);
    free(h.dist);
    free(h.dense);
    free(h.path);
    free(h.row4col);
    free(h.col4row);
    free(h.remaining);
    free(h.row_seen);
    free(h.col_seen);
    free(h.start);
    free(h.col);
    free(h.cnt);
    return st;
}

pc_status pc_matched_accuracy(const int32_t *truth, const int32_t *pred, size_t n, double *accuracy)
{
    table t;
    pc_status st = prepare("pc_matched_accuracy", truth, pred, n, accuracy, &t);
    if (st != PC_OK)
        return st;
    int64_t matched = 0;
    st = matched_count(&t, "pc_matched_accuracy", &matched);
    if (st == PC_OK)
        *accuracy = (double)matched / (double)n;
    table_free(&t);
    return st;
}

pc_status pc_label_scores(const int32_t *truth, const int32_t *pred, const int64_t *counts, size_t pairs,
                          double *accuracy, double *ari, double *nmi)
{
    pc__clear_error();
    double *outs[3] = {accuracy, ari, nmi};
    for (int o = 0; o < 3; o++)
        if (outs[o])
            *outs[o] = NAN;
    if (!truth || !pred || !counts)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_label_scores: %s is NULL", !truth ? "truth" : !pred ? "pred" : "counts");
    /* Pairs of no point take no part: they would make classes or clusters of size 0. */
    size_t kept = 0;
    int64_t total = 0;
    for (size_t i = 0; i < pairs; i++) {
        if (counts[i] < 0)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_label_scores: pair %zu counts %lld points", i, (long long)counts[i]);
        if (counts[i] > INT64_MAX - total)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_label_scores: the counts add up past 2^63");
        total += counts[i];
        kept += counts[i] > 0;
    }
    if (total == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_label_scores: the pairs count no point");
    int32_t *t_kept = alloc_n(kept, sizeof *t_kept, "pairs"), *p_kept = alloc_n(kept, sizeof *p_kept, "pairs");
    int64_t *c_kept = alloc_n(kept, sizeof *c_kept, "pairs");
    pc_status st = PC_OUT_OF_MEMORY;
    table t;
    memset(&t, 0, sizeof t);
    if (!t_kept || !p_kept || !c_kept)
        goto done;
    for (size_t i = 0, j = 0; i < pairs; i++)
        if (counts[i] > 0) {
            t_kept[j] = truth[i];
            p_kept[j] = pred[i];
            c_kept[j++] = counts[i];
        }
    if ((st = table_build(t_kept, p_kept, c_kept, kept, &t)) != PC_OK)
        goto done;
    if (ari)
        *ari = ari_of(&t);
    if (nmi)
        *nmi = nmi_of(&t);
    if (accuracy) {
        int64_t matched = 0;
        if ((st = matched_count(&t, "pc_label_scores", &matched)) == PC_OK)
            *accuracy = (double)matched / (double)total;
    }
done:
    table_free(&t);
    free(t_kept);
    free(p_kept);
    free(c_kept);
    return st;
}
