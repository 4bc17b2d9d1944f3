/* parclust-mpi segment --truth: the scores of parclust segment --truth with no rank holding all the
 * labels. Every rank reads its rows of the truth raster (the labels of its valid pixels) and counts its
 * (truth, cluster) pairs in a hash table: a handful of classes times the clusters, however many
 * pixels. Rank 0 gathers the counts and scores them with pc_label_scores, which gives what the three
 * point calls give on all the valid pixels at once. */
#include "mpi_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (truth, cluster) packed in 64 bits, and how many pixels have it: open addressing, doubled at half full. */
typedef struct {
    uint64_t *keys;
    int64_t *counts; /* 0: an empty slot (a pair present counts at least one) */
    size_t cap, used;
} pair_table;

static uint64_t pair_key(int32_t truth, int32_t cluster) { return (uint64_t)(uint32_t)truth << 32 | (uint32_t)cluster; }

static size_t slot_of(const pair_table *t, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 17) & (t->cap - 1);
    while (t->counts[i] && t->keys[i] != key)
        i = (i + 1) & (t->cap - 1);
    return i;
}

static int table_grow(pair_table *t)
{
    pair_table g = {NULL, NULL, t->cap ? 2 * t->cap : 256, t->used};
    if (!(g.keys = malloc(g.cap * sizeof *g.keys)) || !(g.counts = calloc(g.cap, sizeof *g.counts))) {
        free(g.keys);
        return -1;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->counts[i]) {
            size_t s = slot_of(&g, t->keys[i]);
            g.keys[s] = t->keys[i];
            g.counts[s] = t->counts[i];
        }
    free(t->keys);
    free(t->counts);
    *t = g;
    return 0;
}

static int table_add(pair_table *t, uint64_t key)
{
    if (2 * (t->used + 1) > t->cap && table_grow(t))
        return -1;
    size_t s = slot_of(t, key);
    if (!t->counts[s]) {
        t->keys[s] = key;
        t->used++;
    }
    t->counts[s]++;
    return 0;
}

int mpi_score_truth(const char *cmd, const char *truth_path, const pcli_image *rows, size_t y0, size_t height,
                    const int32_t *labels, size_t n)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char err[1024] = "";
    int32_t *truth = NULL;
    pair_table t = {NULL, NULL, 0, 0};
    int bad = 0;
    if (n) {
        char why[900];
        if (pcli_labels_read_valid_rows(truth_path, rows, y0, height, &truth, why, sizeof why))
            bad = snprintf(err, sizeof err, "--truth %s", why) > 0;
        for (size_t i = 0; !bad && i < n; i++)
            if (table_add(&t, pair_key(truth[i], labels[i])))
                bad = snprintf(err, sizeof err, "rank %d: out of memory for the --truth pairs", rank) > 0;
    }
    free(truth);
    /* This rank's pairs, packed, then gathered on rank 0. */
    int mine = (int)t.used, *sizes = NULL, *displs = NULL;
    uint64_t *keys = malloc((t.used + 1) * sizeof *keys), *all_keys = NULL;
    int64_t *counts = malloc((t.used + 1) * sizeof *counts), *all_counts = NULL;
    if (!bad && (!keys || !counts))
        bad = snprintf(err, sizeof err, "rank %d: out of memory for the --truth pairs", rank) > 0;
    for (size_t i = 0, k = 0; !bad && i < t.cap; i++)
        if (t.counts[i]) {
            keys[k] = t.keys[i];
            counts[k++] = t.counts[i];
        }
    free(t.keys);
    free(t.counts);
    int rc = -1;
    if (mpi_agree(cmd, bad ? PC_IO_ERROR : PC_OK, err))
        goto done;
    if (rank == 0 && (!(sizes = calloc((size_t)size, sizeof *sizes)) || !(displs = calloc((size_t)size, sizeof *displs))))
        bad = snprintf(err, sizeof err, "rank 0: out of memory for the --truth pairs") > 0;
    if (mpi_agree(cmd, bad ? PC_OUT_OF_MEMORY : PC_OK, err))
        goto done;
    MPI_Gather(&mine, 1, MPI_INT, sizes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (rank == 0) {
        for (int q = 0; q < size; q++) {
            displs[q] = (int)total;
            total += (size_t)sizes[q];
        }
        if (!(all_keys = malloc((total + 1) * sizeof *all_keys)) ||
            !(all_counts = malloc((total + 1) * sizeof *all_counts)))
            bad = snprintf(err, sizeof err, "rank 0: out of memory for the --truth pairs") > 0;
    }
    if (mpi_agree(cmd, bad ? PC_OUT_OF_MEMORY : PC_OK, err))
        goto done;
    MPI_Gatherv(keys, mine, MPI_UINT64_T, all_keys, sizes, displs, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Gatherv(counts, mine, MPI_INT64_T, all_counts, sizes, displs, MPI_INT64_T, 0, MPI_COMM_WORLD);
    pc_status st = PC_OK;
    if (rank == 0) {
        /* The keys' halves back into labels. */
        int32_t *tl = malloc((total + 1) * sizeof *tl), *pl = malloc((total + 1) * sizeof *pl);
        int64_t pixels = 0;
        double acc, ari, nmi;
        if (!tl || !pl)
            st = PC_OUT_OF_MEMORY;
        for (size_t i = 0; tl && pl && i < total; i++) {
            tl[i] = (int32_t)(uint32_t)(all_keys[i] >> 32);
            pl[i] = (int32_t)(uint32_t)all_keys[i];
            pixels += all_counts[i];
        }
        if (st == PC_OK && (st = pc_label_scores(tl, pl, all_counts, total, &acc, &ari, &nmi)) == PC_OK)
            printf("accuracy %.6f  ARI %.6f  NMI %.6f  (matched against %s over the %lld valid pixels)\n", acc, ari,
                   nmi, truth_path, (long long)pixels);
        else
            snprintf(err, sizeof err, "scores: %s", st == PC_OUT_OF_MEMORY ? "out of memory" : pc_last_error());
        free(tl);
        free(pl);
    }
    rc = mpi_agree(cmd, st, err);
done:
    free(keys);
    free(counts);
    free(all_keys);
    free(all_counts);
    free(sizes);
    free(displs);
    return rc;
}
