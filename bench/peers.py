#!/usr/bin/python3
"""Times parclust's mean shift beside its peers on the same data, in the same run: a chunked NumPy
brute-force Gaussian mean shift (what a hand-written script does) and scikit-learn's MeanShift
(flat kernel). Prints a Markdown table with each program's time and its agreement with parclust.

usage: /usr/bin/python3 bench/peers.py PARCLUST [--n 10000] [--skip-sklearn]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np


def numpy_meanshift(x, h, iterations, chunk=2000):
    """Non-blurring Gaussian mean shift over all pairs, chunked to bound memory; squared distances
    as |q|^2 + |x|^2 - 2 q.x so that the bulk of the work is BLAS matrix products."""
    q = x.copy()
    xx = (x * x).sum(1)
    inv = 1.0 / (2.0 * h * h)
    for _ in range(iterations):
        for s in range(0, len(q), chunk):
            qc = q[s:s + chunk]
            d2 = np.maximum((qc * qc).sum(1)[:, None] + xx[None, :] - 2.0 * (qc @ x.T), 0.0)
            w = np.exp(-d2 * inv)
            q[s:s + chunk] = (w @ x) / w.sum(1, keepdims=True)
    return q


def run_parclust(parclust, data, extra, workdir):
    labels = os.path.join(workdir, "labels.npy")
    t0 = time.perf_counter()
    out = subprocess.run([parclust, "meanshift", data, "--labels", labels] + extra,
                         check=True, capture_output=True, text=True).stdout
    elapsed = time.perf_counter() - t0
    return elapsed, np.load(labels), out.splitlines()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("parclust")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--skip-sklearn", action="store_true")
    args = ap.parse_args()
    from sklearn.cluster import MeanShift
    from sklearn.metrics import adjusted_rand_score

    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "agnolucci.npy")
        subprocess.run([args.parclust, "generate", "agnolucci", "--n", str(args.n), "-o", data],
                       check=True, capture_output=True)
        x = np.load(data).astype(np.float64)
        rows = []
        t, gauss_labels, line = run_parclust(args.parclust, data,
                                             ["--bandwidth", "2", "--max-iter", "10", "--eps", "0"], work)
        rows.append(("parclust gaussian, OpenMP", t, len(set(gauss_labels)), 1.0))
        print(line, file=sys.stderr)

        t0 = time.perf_counter()
        modes = numpy_meanshift(x.astype(np.float32), 2.0, 10)  # float32, as parclust
        t = time.perf_counter() - t0
        # NumPy has no merge step: compare where each point converged instead.
        pmodes_path = os.path.join(work, "modes.npy")
        subprocess.run([args.parclust, "meanshift", data, "--bandwidth", "2", "--max-iter", "10",
                        "--eps", "0", "--modes", pmodes_path], check=True, capture_output=True)
        gap = float(np.abs(np.load(pmodes_path) - modes).max())
        rows.append((f"NumPy brute force (max mode difference {gap:.2g})", t, None, None))

        if not args.skip_sklearn:
            t, flat_labels, line = run_parclust(args.parclust, data,
                                                ["--kernel", "flat", "--bandwidth", "2", "--max-iter", "10"], work)
            rows.append(("parclust flat, OpenMP", t, len(set(flat_labels)), 1.0))
            t0 = time.perf_counter()
            ms = MeanShift(bandwidth=2.0, max_iter=10, n_jobs=-1).fit(x)
            t = time.perf_counter() - t0
            rows.append(("scikit-learn MeanShift (flat), all cores", t, len(ms.cluster_centers_),
                         adjusted_rand_score(flat_labels, ms.labels_)))

    print(f"| program (N = {args.n}, 3D, h = 2, 10 iterations) | time (s) | clusters | ARI vs parclust |")
    print("|---|---|---|---|")
    for name, t, k, ari in rows:
        print(f"| {name} | {t:.3f} | {'' if k is None else k} | {'' if ari is None else f'{ari:.4f}'} |")


if __name__ == "__main__":
    main()
