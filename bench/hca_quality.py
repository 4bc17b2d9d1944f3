#!/usr/bin/python3
"""HCA's quality on the paper's two model sets (BENCHMARKS / issue 4): matched accuracy, ARI and NMI of
parclust's HCA beside parclust's k-means and mean shift, scikit-learn's DBSCAN and single linkage, all
on the same generated data in the same run. The peers' parameters are searched over a small grid
and their best result is reported, so the comparison favours the peers.

usage: /usr/bin/python3 bench/hca_quality.py PARCLUST
"""
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from sklearn.cluster import DBSCAN, AgglomerativeClustering
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score
from scipy.optimize import linear_sum_assignment


def matched_accuracy(truth, pred):
    t = np.unique(truth, return_inverse=True)[1]
    p = np.unique(pred, return_inverse=True)[1]
    table = np.zeros((t.max() + 1, p.max() + 1), dtype=np.int64)
    np.add.at(table, (t, p), 1)
    rows, cols = linear_sum_assignment(-table)
    return table[rows, cols].sum() / len(truth)


def scores(truth, pred):
    return matched_accuracy(truth, pred), adjusted_rand_score(truth, pred), normalized_mutual_info_score(truth, pred)


def parclust(binary, args, data, work):
    labels = os.path.join(work, "labels.npy")
    t0 = time.perf_counter()
    subprocess.run([binary] + args[:1] + [data] + args[1:] + ["--labels", labels], check=True, capture_output=True)
    return np.load(labels), time.perf_counter() - t0


def main():
    binary = sys.argv[1]
    sets = [("hca8", 20000, 8, 0.9798), ("hca5", 12000, 5, 0.9944)]
    with tempfile.TemporaryDirectory() as work:
        for name, n, k, paper in sets:
            data, truth_path = os.path.join(work, name + ".npy"), os.path.join(work, name + "_truth.npy")
            subprocess.run([binary, "generate", name, "--n", str(n), "-o", data, "--labels", truth_path],
                           check=True, capture_output=True)
            x, truth = np.load(data).astype(np.float64), np.load(truth_path)
            rows = []
            for m in (16, 32, 64):
                pred, t = parclust(binary, ["hca", "-m", str(m), "--clusters", str(k)], data, work)
                rows.append((f"parclust HCA, m = {m}, cut to {k}", t, scores(truth, pred)))
            best = None
            for h in (2, 3, 4, 6):
                pred, t = parclust(binary, ["meanshift", "--bandwidth", str(h), "--radius", str(3 * h)], data, work)
                cand = (f"parclust mean shift, gaussian, best of h = 2, 3, 4, 6 (h = {h})", t, scores(truth, pred))
                best = cand if best is None or cand[2][0] > best[2][0] else best
            rows.append(best)
            best = None
            for eps in (0.5, 1.0, 1.5, 2.0, 3.0):
                for ms in (5, 10, 20, 40):
                    t0 = time.perf_counter()
                    pred = DBSCAN(eps=eps, min_samples=ms).fit_predict(x)
                    cand = (f"scikit-learn DBSCAN, best of 20 settings (eps {eps}, min_samples {ms})",
                            time.perf_counter() - t0, scores(truth, pred))
                    best = cand if best is None or cand[2][0] > best[2][0] else best
            rows.append(best)
            t0 = time.perf_counter()
            pred = AgglomerativeClustering(n_clusters=k, linkage="single").fit_predict(x)
            rows.append((f"scikit-learn single linkage, {k} clusters", time.perf_counter() - t0, scores(truth, pred)))
            pred, t = parclust(binary, ["kmeans", "-k", str(k), "--n-init", "10"], data, work)
            rows.append((f"parclust k-means++, {k} clusters, 10 inits", t, scores(truth, pred)))
            print(f"\n{name}: {n} points, {k} classes; the paper's HCA: {100 * paper:.2f}%\n")
            print("| program | matched accuracy | ARI | NMI | time (s) |")
            print("|---|---|---|---|---|")
            for label, t, (acc, ari, nmi) in rows:
                print(f"| {label} | {100 * acc:.2f}% | {ari:.4f} | {nmi:.4f} | {t:.2f} |")


if __name__ == "__main__":
    main()
