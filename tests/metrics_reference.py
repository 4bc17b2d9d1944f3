#!/usr/bin/python3
"""Writes reference values of ARI, NMI and Hungarian-matched accuracy computed by scikit-learn and
SciPy, for tests/test_metrics.c to compare parclust's metrics against.

Usage: metrics_reference.py OUTPUT.txt

Output format (plain text, whitespace separated):
  lines starting with '#' are comments;
  every other line is one case: n ari nmi accuracy truth[0] .. truth[n-1] pred[0] .. pred[n-1]
Labels are int32. parclust counts every negative label as one "noise" class, while scikit-learn
keeps -1 and -2 apart, so negatives are merged to -1 before scikit-learn sees them (the file keeps
the original labels).
"""
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from sklearn.metrics.cluster import contingency_matrix


def reference(truth, pred):
    t = np.where(truth < 0, -1, truth)
    p = np.where(pred < 0, -1, pred)
    ari = adjusted_rand_score(t, p)
    nmi = normalized_mutual_info_score(t, p)
    table = contingency_matrix(t, p)
    rows, cols = linear_sum_assignment(table, maximize=True)
    acc = table[rows, cols].sum() / len(t)
    return ari, nmi, acc


def noisy_copy(rng, truth, k_pred, flip):
    """pred agrees with a relabelled truth except for a share `flip` of random reassignments."""
    k_true = int(truth.max()) + 1
    mapping = rng.integers(0, k_pred, size=k_true)
    pred = mapping[truth]
    flips = rng.random(len(truth)) < flip
    pred[flips] = rng.integers(0, k_pred, size=int(flips.sum()))
    return pred


def cases():
    rng = np.random.default_rng(20240611)
    # Small uniformly random labelings, equal and unequal k.
    for n, kt, kp in [(2, 2, 2), (5, 2, 3), (10, 3, 3), (17, 4, 2), (40, 3, 7), (100, 6, 6)]:
        yield rng.integers(0, kt, n), rng.integers(0, kp, n)
    # Correlated labelings, more clusters than classes and fewer.
    for n, kt, kp, flip in [(500, 5, 8, 0.2), (1000, 10, 7, 0.3), (20000, 3, 3, 0.05), (3000, 12, 40, 0.5)]:
        truth = rng.integers(0, kt, n)
        yield truth, noisy_copy(rng, truth, kp, flip)
    # Negative labels, several distinct negative values that must act as one class.
    truth = rng.integers(-3, 5, 300)
    pred = noisy_copy(rng, np.maximum(truth, 0), 6, 0.25) - 2
    pred[rng.random(300) < 0.1] = -7
    yield truth, pred
    # Wide-ranging label values (int32 extremes) for the sort-based relabelling.
    truth = rng.integers(0, 50, 5000)
    values = rng.integers(-2**31, 2**31, 60, dtype=np.int64)
    values[:3] = [2**31 - 1, -2**31, 0]
    pred = values[noisy_copy(rng, truth, 60, 0.3)]
    yield (truth * 40_000_003 - 1_000_000_000).astype(np.int64), pred
    # Many classes and clusters: sparse contingency table and large Hungarian blocks.
    truth = rng.integers(0, 1500, 3000)
    yield truth, noisy_copy(rng, truth, 1500, 0.4)
    truth = rng.integers(0, 300, 4000)
    yield truth, rng.integers(0, 700, 4000)
    # Degenerate cases: one class, singletons, independent equal-size splits.
    n = 1000
    yield np.zeros(n, dtype=np.int64), rng.integers(0, 4, n)
    yield rng.integers(0, 4, n), np.zeros(n, dtype=np.int64)
    yield np.arange(n), rng.integers(0, 10, n)
    yield np.arange(n), np.arange(n)[::-1].copy()
    yield np.zeros(n, dtype=np.int64) + 5, np.zeros(n, dtype=np.int64) - 1
    yield np.repeat(np.arange(10), 10), np.tile(np.arange(10), 10)
    yield np.array([7]), np.array([-3])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: metrics_reference.py OUTPUT.txt")
    with open(sys.argv[1], "w") as out:
        out.write("# parclust metrics reference: n ari nmi accuracy truth[n] pred[n]\n")
        for truth, pred in cases():
            truth = np.asarray(truth, dtype=np.int64)
            pred = np.asarray(pred, dtype=np.int64)
            assert truth.shape == pred.shape and truth.ndim == 1
            assert truth.min() >= -2**31 and truth.max() < 2**31
            assert pred.min() >= -2**31 and pred.max() < 2**31
            ari, nmi, acc = reference(truth, pred)
            fields = [str(len(truth)), repr(float(ari)), repr(float(nmi)), repr(float(acc))]
            fields += [str(v) for v in truth] + [str(v) for v in pred]
            out.write(" ".join(fields) + "\n")


if __name__ == "__main__":
    main()
