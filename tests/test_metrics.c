/* Tests of pc_adjusted_rand_index, pc_normalized_mutual_info and pc_matched_accuracy against values
 * worked by hand, brute-force and subset-DP matchings, invariances, and optionally scikit-learn's
 * values: test_metrics [REFERENCE.txt], the file written by tests/metrics_reference.py. */
#include "parclust.h"

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void) /* splitmix64: fixed sequence on every machine */
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int32_t rnd_below(int32_t k)
{
    return (int32_t)(rnd() % (uint64_t)k);
}

typedef struct {
    double ari, nmi, acc;
} scores;

static scores all_scores(const int32_t *truth, const int32_t *pred, size_t n)
{
    scores s = {NAN, NAN, NAN};
    CHECK_STATUS(pc_adjusted_rand_index(truth, pred, n, &s.ari), PC_OK);
    CHECK_STATUS(pc_normalized_mutual_info(truth, pred, n, &s.nmi), PC_OK);
    CHECK_STATUS(pc_matched_accuracy(truth, pred, n, &s.acc), PC_OK);
    return s;
}

static void check_scores(const int32_t *truth, const int32_t *pred, size_t n, double ari, double nmi,
                         double acc, const char *what)
{
    scores s = all_scores(truth, pred, n);
    CHECK_MSG(fabs(s.ari - ari) <= TOL, "%s: ari %.17g, expected %.17g", what, s.ari, ari);
    CHECK_MSG(fabs(s.nmi - nmi) <= TOL, "%s: nmi %.17g, expected %.17g", what, s.nmi, nmi);
    CHECK_MSG(fabs(s.acc - acc) <= TOL, "%s: acc %.17g, expected %.17g", what, s.acc, acc);
}

static void test_hand_worked(void)
{
    /* truth 000111, pred 001122. Contingency rows (classes) x columns (clusters):
     *   class 0: 2 1 0      class sizes 3 3, cluster sizes 2 2 2
     *   class 1: 0 1 2
     * ARI: index = sum C(nij,2) = 1 + 1 = 2; a = C(3,2) * 2 = 6; b = C(2,2) * 3 = 3; C(6,2) = 15;
     *   expected = a b / 15 = 1.2; max = (a + b) / 2 = 4.5; ARI = (2 - 1.2) / (4.5 - 1.2) = 8/33.
     * NMI: the 2-cells give (1/3) ln((1/3) / (1/2 * 1/3)) = (1/3) ln 2 each, the 1-cells
     *   (1/6) ln((1/6) / (1/6)) = 0; MI = (2/3) ln 2; H(truth) = ln 2, H(pred) = ln 3;
     *   NMI = MI / ((ln 2 + ln 3) / 2) = (4/3) ln 2 / ln 6.
     * Accuracy: class 0 -> cluster 0 (2), class 1 -> cluster 2 (2): 4/6. */
    const int32_t truth[6] = {0, 0, 0, 1, 1, 1}, pred[6] = {0, 0, 1, 1, 2, 2};
    check_scores(truth, pred, 6, 8.0 / 33.0, (4.0 / 3.0) * log(2.0) / log(6.0), 4.0 / 6.0, "hand 6");
    /* Symmetric metrics: swapping the labelings changes nothing. */
    check_scores(pred, truth, 6, 8.0 / 33.0, (4.0 / 3.0) * log(2.0) / log(6.0), 4.0 / 6.0, "hand 6 swapped");

    /* truth 0011, pred 0101: every cell 1. index 0, a = b = 2, expected 2*2/6 = 2/3, max 2:
     * ARI = (0 - 2/3) / (2 - 2/3) = -1/2. Independent: MI = 0 so NMI = 0. Accuracy 2/4. */
    const int32_t t4[4] = {0, 0, 1, 1}, p4[4] = {0, 1, 0, 1};
    check_scores(t4, p4, 4, -0.5, 0.0, 0.5, "anti 4");

    /* One class vs four singletons: index 0, a = 6, b = 0, expected 0, max 3: ARI 0. H(truth) = 0 so
     * MI = 0 and NMI = 0. Accuracy: one class matches one singleton: 1/4. */
    const int32_t one[4] = {3, 3, 3, 3}, single[4] = {0, 1, 2, 3};
    check_scores(one, single, 4, 0.0, 0.0, 0.25, "one vs singletons");

    /* Degenerate agreements are 1 by scikit-learn's conventions. */
    check_scores(one, one, 4, 1.0, 1.0, 1.0, "one vs one");
    check_scores(single, single, 4, 1.0, 1.0, 1.0, "singletons");
    const int32_t a1[1] = {5}, b1[1] = {-9};
    check_scores(a1, b1, 1, 1.0, 1.0, 1.0, "n = 1");

    /* truth 00011, pred 00111 (5 points): cells [[2,1],[0,2]]. index = 1 + 1 = 2; a = 3 + 1 = 4;
     * b = 1 + 3 = 4; C(5,2) = 10; expected 1.6; max 4: ARI = 0.4 / 2.4 = 1/6. Accuracy 4/5.
     * MI = (2/5) ln((2/5)/(3/5*2/5)) + (1/5) ln((1/5)/(3/5*3/5)) + (2/5) ln((2/5)/(2/5*3/5))
     *    = (2/5) ln(5/3) + (1/5) ln(5/9) + (2/5) ln(5/3); H = -(3/5) ln(3/5) - (2/5) ln(2/5) both. */
    const int32_t t5[5] = {0, 0, 0, 1, 1}, p5[5] = {0, 0, 1, 1, 1};
    double h5 = -(0.6 * log(0.6) + 0.4 * log(0.4));
    double mi5 = 0.8 * log(5.0 / 3.0) + 0.2 * log(5.0 / 9.0);
    check_scores(t5, p5, 5, 1.0 / 6.0, mi5 / h5, 0.8, "hand 5");
}

static void test_negative_labels(void)
{
    /* Every negative label is one class: -1, -2 and -70 together equal a single class. */
    const int32_t t[6] = {-1, -2, -70, 4, 4, 9}, same[6] = {-5, -5, -5, 0, 0, 1};
    check_scores(t, same, 6, 1.0, 1.0, 1.0, "negatives merge");
    /* ... and they are not matched with anything else: same scores as the hand-worked example. */
    const int32_t t6[6] = {-1, -3, -1, 1, 1, 1}, p6[6] = {-4, -4, 1, 1, 2, 2};
    check_scores(t6, p6, 6, 8.0 / 33.0, (4.0 / 3.0) * log(2.0) / log(6.0), 4.0 / 6.0, "negative hand 6");
    /* INT32_MIN and INT32_MAX are ordinary labels. */
    const int32_t te[4] = {INT32_MIN, INT32_MIN, INT32_MAX, INT32_MAX}, pe[4] = {0, 1, 0, 1};
    check_scores(te, pe, 4, -0.5, 0.0, 0.5, "int32 extremes");
}

/* Relabelling a labeling by any injective map (here large and scattered values, which sends the
 * relabelling down its sort-based path) changes no score; a relabelled copy scores 1. */
static void test_invariance(void)
{
    const size_t sizes[] = {50, 2000, 30000};
    const int32_t ks[] = {3, 40, 2500};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s];
        int32_t k = ks[s];
        int32_t *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
        int32_t *t2 = malloc(n * sizeof *t2), *p2 = malloc(n * sizeof *p2);
        for (size_t i = 0; i < n; i++) {
            truth[i] = rnd_below(k);
            pred[i] = rnd() % 4 == 0 ? rnd_below(k + 5) : (truth[i] * 7 + 1) % (k + 5);
            /* Bijections on [0, k + 5): scattered big values (odd multiplier) and a shift. */
            t2[i] = (int32_t)((uint32_t)truth[i] * 2654435761u >> 1);
            p2[i] = pred[i] + 1000;
        }
        check_scores(truth, t2, n, 1.0, 1.0, 1.0, "relabelled copy");
        scores a = all_scores(truth, pred, n), b = all_scores(t2, p2, n);
        CHECK_NEAR(a.ari, b.ari, TOL);
        CHECK_NEAR(a.nmi, b.nmi, TOL);
        CHECK_NEAR(a.acc, b.acc, TOL);
        CHECK(a.ari < 1.0 && a.ari > 0.0 && a.nmi < 1.0 && a.nmi > 0.0 && a.acc < 1.0 && a.acc > 0.5);
        /* ARI and NMI are symmetric; accuracy too (a one-to-one matching read the other way round),
         * which exercises the transposed Hungarian blocks. */
        scores c = all_scores(pred, truth, n);
        CHECK_NEAR(a.ari, c.ari, TOL);
        CHECK_NEAR(a.nmi, c.nmi, TOL);
        CHECK_NEAR(a.acc, c.acc, TOL);
        free(truth);
        free(pred);
        free(t2);
        free(p2);
    }
}

/* Best one-to-one matching by trying every partial injection of rows into columns. */
static long brute_match(long w[6][6], int r, int c, int row, unsigned used)
{
    if (row == r)
        return 0;
    long best = brute_match(w, r, c, row + 1, used); /* row left unmatched */
    for (int j = 0; j < c; j++) {
        if (used & (1u << j))
            continue;
        long v = w[row][j] + brute_match(w, r, c, row + 1, used | (1u << j));
        if (v > best)
            best = v;
    }
    return best;
}

/* Labels for dense id `id`: id 0 is written as assorted negative values (one noise class), others as
 * scattered positive values, so the tests also go through the relabelling. */
static int32_t spell(int32_t id)
{
    return id == 0 ? -1 - rnd_below(4) : id * 37 + 5;
}

static void test_matching_brute_force(void)
{
    int32_t truth[60], pred[60];
    for (int trial = 0; trial < 400; trial++) {
        int r = 1 + rnd_below(6), c = 1 + rnd_below(6);
        size_t n = 1 + (size_t)rnd_below(60);
        long w[6][6] = {{0}};
        for (size_t i = 0; i < n; i++) {
            int32_t a = rnd_below(r), b = rnd_below(c);
            w[a][b]++;
            truth[i] = spell(a);
            pred[i] = spell(b);
        }
        long best = brute_match(w, r, c, 0, 0);
        double acc = NAN;
        CHECK_STATUS(pc_matched_accuracy(truth, pred, n, &acc), PC_OK);
        CHECK_MSG(fabs(acc - (double)best / (double)n) <= TOL, "trial %d: %d x %d, n %zu: %.17g vs %ld/%zu",
                  trial, r, c, n, acc, best, n);
    }
}

/* Medium tables (up to 10 classes, up to 60 clusters or the other way round) against a DP over subsets
 * of classes, processing one cluster at a time. */
static void test_matching_subset_dp(void)
{
    enum { MAXR = 10, MAXC = 60, MAXN = 3000 };
    static long w[MAXR][MAXC];
    static long dp[1 << MAXR], next[1 << MAXR];
    static int32_t truth[MAXN], pred[MAXN];
    for (int trial = 0; trial < 60; trial++) {
        int r = 1 + rnd_below(MAXR), c = 1 + rnd_below(MAXC);
        size_t n = 1 + (size_t)rnd_below(MAXN);
        memset(w, 0, sizeof w);
        for (size_t i = 0; i < n; i++) {
            /* Half the trials concentrate each cluster on a few classes: sparse, blocky tables. */
            int32_t b = rnd_below(c);
            int32_t a = (trial % 2 && rnd() % 8) ? (b * 3 + (int32_t)(rnd() % 2)) % r : rnd_below(r);
            w[a][b]++;
            truth[i] = spell(a);
            pred[i] = spell(b);
        }
        for (int m = 0; m < (1 << r); m++)
            dp[m] = m ? -1 : 0;
        for (int j = 0; j < c; j++) {
            memcpy(next, dp, sizeof(long) * (1u << r));
            for (int m = 0; m < (1 << r); m++) {
                if (dp[m] < 0)
                    continue;
                for (int i = 0; i < r; i++)
                    if (!(m & (1 << i)) && dp[m] + w[i][j] > next[m | (1 << i)])
                        next[m | (1 << i)] = dp[m] + w[i][j];
            }
            memcpy(dp, next, sizeof(long) * (1u << r));
        }
        long best = 0;
        for (int m = 0; m < (1 << r); m++)
            if (dp[m] > best)
                best = dp[m];
        double acc = NAN, acc_t = NAN;
        CHECK_STATUS(pc_matched_accuracy(truth, pred, n, &acc), PC_OK);
        CHECK_STATUS(pc_matched_accuracy(pred, truth, n, &acc_t), PC_OK);
        CHECK_MSG(fabs(acc - (double)best / (double)n) <= TOL, "trial %d: %d x %d: %.17g vs %ld/%zu", trial, r,
                  c, acc, best, n);
        CHECK_NEAR(acc_t, acc, TOL);
    }
}

static void test_errors(void)
{
    const int32_t t[3] = {0, 1, 2};
    double v = 0.0;
    CHECK_STATUS(pc_adjusted_rand_index(NULL, t, 3, &v), PC_INVALID_ARGUMENT);
    CHECK(strlen(pc_last_error()) > 0);
    CHECK_STATUS(pc_normalized_mutual_info(t, NULL, 3, &v), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_matched_accuracy(t, t, 3, NULL), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_adjusted_rand_index(t, t, 0, &v), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_normalized_mutual_info(t, t, 0, &v), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_matched_accuracy(t, t, 0, &v), PC_INVALID_ARGUMENT);
    CHECK(strlen(pc_last_error()) > 0);
    CHECK_STATUS(pc_matched_accuracy(t, t, 3, &v), PC_OK);
    CHECK_NEAR(v, 1.0, 0.0);

    /* 20001 classes chained to 20001 clusters (class i meets clusters i and i + 1) form one block
     * beyond the Hungarian method's limit of 20000 on its smaller side: refused with a message, while
     * ARI and NMI still work. */
    size_t n = 40002;
    int32_t *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
    for (size_t i = 0; i < n; i++) {
        truth[i] = (int32_t)(i % 20001);
        pred[i] = (int32_t)((i % 20001 + i / 20001) % 20001);
    }
    v = 0.0;
    CHECK_STATUS(pc_matched_accuracy(truth, pred, n, &v), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "Hungarian") != NULL);
    CHECK(isnan(v));
    CHECK_STATUS(pc_adjusted_rand_index(truth, pred, n, &v), PC_OK);
    CHECK(strlen(pc_last_error()) == 0);
    /* As many pure clusters are no trouble: 20001 one-cell blocks. */
    CHECK_STATUS(pc_matched_accuracy(truth, truth, n, &v), PC_OK);
    CHECK_NEAR(v, 1.0, 0.0);
    /* Nor is a smaller chain: 3000 x 3000 in one block, where every class can take its own cluster
     * (2 points each of 3 in the class) for 2/3 of the points. */
    for (size_t i = 0; i < 9000; i++) {
        truth[i] = (int32_t)(i % 3000);
        pred[i] = (int32_t)((i % 3000 + (i / 3000 == 2)) % 3000);
    }
    CHECK_STATUS(pc_matched_accuracy(truth, pred, 9000, &v), PC_OK);
    CHECK_NEAR(v, 2.0 / 3.0, TOL);
    free(truth);
    free(pred);
}

/* Skips blank space and '#' comment lines; returns 0 at the end of the file. */
static int skip_comments(FILE *f)
{
    for (;;) {
        int ch = fgetc(f);
        if (ch == EOF)
            return 0;
        if (ch == '#') {
            while ((ch = fgetc(f)) != EOF && ch != '\n') {
            }
            continue;
        }
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            continue;
        ungetc(ch, f);
        return 1;
    }
}

static void test_reference_file(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    int cases = 0;
    while (skip_comments(f)) {
        size_t n = 0;
        double ari, nmi, acc;
        if (fscanf(f, "%zu %lf %lf %lf", &n, &ari, &nmi, &acc) != 4 || n == 0) {
            CHECK_MSG(0, "%s: malformed case %d", path, cases + 1);
            break;
        }
        int32_t *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
        int ok = truth && pred;
        for (size_t i = 0; ok && i < 2 * n; i++) {
            long v;
            ok = fscanf(f, "%ld", &v) == 1 && v >= INT32_MIN && v <= INT32_MAX;
            if (ok)
                (i < n ? truth : pred)[i % n] = (int32_t)v;
        }
        CHECK_MSG(ok, "%s: case %d: bad labels", path, cases + 1);
        if (ok) {
            char what[64];
            snprintf(what, sizeof what, "reference case %d (n %zu)", cases + 1, n);
            check_scores(truth, pred, n, ari, nmi, acc, what);
        }
        free(truth);
        free(pred);
        cases++;
        if (!ok)
            break;
    }
    fclose(f);
    CHECK_MSG(cases > 0, "%s holds no cases", path);
    printf("metrics: %d reference cases from %s\n", cases, path);
}

/* pc_label_scores on pair counts against the three calls on the points they stand for: each point a
 * pair, and the distinct pairs counted in pieces (a pair split over two entries, as ranks would hold
 * it, in shuffled order, with zero-count pairs of labels no point has). Small label ranges take the
 * dense table, labels spread over the int32 range the sorted one; noise (-1) is a class of its own. */
static void test_pair_counts(void)
{
    for (int round = 0; round < 6; round++) {
        size_t n = 3000 + (size_t)round * 977;
        int spread = round % 2; /* labels far apart: the sparse table */
        int32_t *truth = malloc(n * sizeof *truth), *pred = malloc(n * sizeof *pred);
        for (size_t i = 0; i < n; i++) {
            truth[i] = rnd_below(7) - 1;
            pred[i] = rnd_below(2) ? truth[i] + 1 : rnd_below(40) - (round > 3);
            if (spread) {
                truth[i] = truth[i] < 0 ? truth[i] : truth[i] * 300000001;
                pred[i] = pred[i] < 0 ? pred[i] : pred[i] * 50000017;
            }
        }
        scores ref = all_scores(truth, pred, n);
        int64_t *ones = malloc(n * sizeof *ones);
        for (size_t i = 0; i < n; i++)
            ones[i] = 1;
        double acc = NAN, ari = NAN, nmi = NAN;
        CHECK_STATUS(pc_label_scores(truth, pred, ones, n, &acc, &ari, &nmi), PC_OK);
        CHECK_MSG(acc == ref.acc && ari == ref.ari && nmi == ref.nmi,
                  "round %d, a pair a point: %.17g %.17g %.17g, the points' %.17g %.17g %.17g", round, acc, ari, nmi,
                  ref.acc, ref.ari, ref.nmi);
        /* The distinct pairs, each count split in two entries, plus empty pairs, shuffled. */
        size_t cap = 2 * n + 8, m = 0;
        int32_t *pt = malloc(cap * sizeof *pt), *pp = malloc(cap * sizeof *pp);
        int64_t *pc = malloc(cap * sizeof *pc);
        for (size_t i = 0; i < n; i++) {
            size_t j = 0;
            while (j < m && !(pt[j] == truth[i] && pp[j] == pred[i]))
                j++;
            if (j == m) {
                pt[m] = truth[i], pp[m] = pred[i], pc[m++] = 0;
            }
            pc[j]++;
        }
        size_t distinct = m;
        for (size_t j = 0; j < distinct; j++)
            if (pc[j] > 1) {
                int64_t part = 1 + (int64_t)(rnd() % (uint64_t)(pc[j] - 1));
                pt[m] = pt[j], pp[m] = pp[j], pc[m++] = part;
                pc[j] -= part;
            }
        for (int e = 0; e < 4; e++)
            pt[m] = 1000 + e, pp[m] = 2000 + e, pc[m++] = 0;
        for (size_t j = m; j > 1; j--) {
            size_t r = (size_t)(rnd() % j);
            int32_t a = pt[j - 1], b = pp[j - 1];
            int64_t c = pc[j - 1];
            pt[j - 1] = pt[r], pp[j - 1] = pp[r], pc[j - 1] = pc[r];
            pt[r] = a, pp[r] = b, pc[r] = c;
        }
        CHECK_STATUS(pc_label_scores(pt, pp, pc, m, &acc, &ari, &nmi), PC_OK);
        CHECK_MSG(fabs(acc - ref.acc) <= 1e-15 && fabs(ari - ref.ari) <= 1e-12 && fabs(nmi - ref.nmi) <= 1e-12,
                  "round %d, %zu pair counts: %.17g %.17g %.17g, the points' %.17g %.17g %.17g", round, m, acc, ari,
                  nmi, ref.acc, ref.ari, ref.nmi);
        CHECK_STATUS(pc_label_scores(pt, pp, pc, m, NULL, &ari, NULL), PC_OK);
        free(truth), free(pred), free(ones), free(pt), free(pp), free(pc);
    }
    int32_t t[3] = {0, 1, 1}, q[3] = {0, 0, 1};
    int64_t bad[3] = {2, -1, 3}, none[3] = {0, 0, 0};
    double x = 0;
    CHECK_STATUS(pc_label_scores(t, q, bad, 3, &x, NULL, NULL), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "pair 1") != NULL);
    CHECK_STATUS(pc_label_scores(t, q, none, 3, &x, NULL, NULL), PC_INVALID_ARGUMENT);
    CHECK(isnan(x));
    CHECK_STATUS(pc_label_scores(t, NULL, none, 3, &x, NULL, NULL), PC_INVALID_ARGUMENT);
}

/* Pair counts summed over many ranks can pass 2^32 points: the scores stay finite and equal the
 * textbook formulas (Hubert and Arabie's ARI over pairs C(n, 2); NMI from the probabilities), formed
 * here in long double. Totals on both sides of the point where ARI leaves exact 128-bit integers. */
static long double choose2(long double v) { return v * (v - 1.0L) / 2.0L; }

static void test_huge_counts(void)
{
    const int64_t scales[4] = {INT64_C(168722249), INT64_C(168722250), INT64_C(1000000000), INT64_C(1000000007)};
    const int64_t base[6] = {6, 3, 2, 7, 0, 0}; /* (0,0) (0,1) (1,0) (1,1); 3 and 4 grow a third cluster */
    for (int s = 0; s < 4; s++)
        for (int third = 0; third < 2; third++) {
            int32_t t[6] = {0, 0, 1, 1, 0, 1}, q[6] = {0, 1, 0, 1, 2, 2};
            int64_t c[6];
            for (int i = 0; i < 6; i++)
                c[i] = base[i] * scales[s] + (third && i >= 4 ? scales[s] / (i - 2) : 0);
            long double n = 0, rows[2] = {0, 0}, cols[3] = {0, 0, 0};
            for (int i = 0; i < 6; i++) {
                n += (long double)c[i];
                rows[t[i]] += (long double)c[i];
                cols[q[i]] += (long double)c[i];
            }
            long double cells = 0, sr = 0, sc = 0, mi = 0, hr = 0, hc = 0;
            for (int i = 0; i < 6; i++)
                if (c[i] > 0) {
                    long double p = (long double)c[i] / n;
                    cells += choose2((long double)c[i]);
                    mi += p * logl(p / ((rows[t[i]] / n) * (cols[q[i]] / n)));
                }
            for (int i = 0; i < 2; i++)
                sr += choose2(rows[i]), hr -= rows[i] / n * logl(rows[i] / n);
            for (int j = 0; j < 3; j++)
                if (cols[j] > 0)
                    sc += choose2(cols[j]), hc -= cols[j] / n * logl(cols[j] / n);
            long double expected = sr * sc / choose2(n);
            double ari_ref = (double)((cells - expected) / ((sr + sc) / 2.0L - expected));
            double nmi_ref = (double)(mi / ((hr + hc) / 2.0L));
            double acc = 0, ari = 0, nmi = 0;
            CHECK_STATUS(pc_label_scores(t, q, c, 6, &acc, &ari, &nmi), PC_OK);
            double acc_ref = (double)((long double)(c[0] + c[3]) / n);
            CHECK_MSG(fabs(ari - ari_ref) <= 1e-12 && fabs(nmi - nmi_ref) <= 1e-12 && fabs(acc - acc_ref) <= 1e-15,
                      "n = %.0Lf: ARI %.17g NMI %.17g accuracy %.17g, formulas %.17g %.17g %.17g", n, ari, nmi, acc,
                      ari_ref, nmi_ref, acc_ref);
        }
}

int main(int argc, char **argv)
{
    test_pair_counts();
    test_huge_counts();
    test_hand_worked();
    test_negative_labels();
    test_invariance();
    test_matching_brute_force();
    test_matching_subset_dp();
    test_errors();
    if (argc > 1)
        test_reference_file(argv[1]);
    return check_report("metrics");
}
