#!/usr/bin/python3
"""HECA and HCA-MS quality (issue 15 items 3 and 5): matched accuracy (ARI, NMI beside it) of
  - HCA at every m in 12..64 (the best, the median), HCA with -m auto,
  - HECA with its defaults (no m given), and with --shifts,
  - HCA-MS (--refine-borders, default bandwidth) at m = 16 and 32,
on the HCA paper's model sets (docs/hca-model-data.md: hca8 20,000 points, hca5 12,000) and on the pixels
of the demo scene generator (`parclust generate scene`, 4 bands, 6 classes, 1000 x 800, seeds 7, 11, 23),
all cut to the true number of classes; then -m auto against m = 16 and m = 32 on small generated sets
(scikit-learn's make_blobs, make_moons, make_circles; 200 to 1000 points, 2 and 3 dimensions).

usage: /usr/bin/python3 bench/heca_quality.py PARCLUST
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.datasets import make_blobs, make_circles, make_moons
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

MS = [12, 16, 20, 24, 28, 32, 40, 48, 56, 64]


def accuracy(truth, pred):
    t = np.unique(truth, return_inverse=True)[1]
    p = np.unique(pred, return_inverse=True)[1]
    table = np.zeros((t.max() + 1, p.max() + 1), dtype=np.int64)
    np.add.at(table, (t, p), 1)
    r, c = linear_sum_assignment(-table)
    return table[r, c].sum() / len(truth)


def run(binary, cmd, data, work, extra):
    out = os.path.join(work, "l.npy")
    p = subprocess.run([binary, cmd, data] + extra + ["--labels", out], capture_output=True, text=True, check=True)
    return np.load(out), p.stdout


def row(name, truth, pred):
    return (name, accuracy(truth, pred), adjusted_rand_score(truth, pred), normalized_mutual_info_score(truth, pred))


def one_set(binary, work, title, data, truth, k):
    rows, accs = [], []
    for m in MS:
        pred, _ = run(binary, "hca", data, work, ["-m", str(m), "--clusters", str(k)])
        r = row("HCA, m = %d" % m, truth, pred)
        accs.append(r[1])
        rows.append(r)
    best = int(np.argmax(accs))
    pred, out = run(binary, "hca", data, work, ["--clusters", str(k)])
    auto_m = out.split(" m ")[1].split()[0]
    rows.append(row("HCA, -m auto (m = %s)" % auto_m, truth, pred))
    pred, out = run(binary, "heca", data, work, ["--clusters", str(k)])
    ms = out.split("(m ")[1].split(";")[0]
    heca = row("**HECA, defaults** (m %s)" % ms, truth, pred)
    rows.append(heca)
    pred, _ = run(binary, "heca", data, work, ["--clusters", str(k), "--shifts"])
    rows.append(row("HECA, defaults, --shifts", truth, pred))
    for m in (16, 32):
        pred, out = run(binary, "hca", data, work, ["-m", str(m), "--clusters", str(k), "--refine-borders"])
        rows.append(row("**HCA-MS, m = %d** (%s)" % (m, out.split("refined borders: ")[1].split("\n")[0]), truth, pred))
    median = float(np.median(accs))
    print("\n### %s (%d points, %d classes)\n" % (title, len(truth), k))
    print("best single m: %d (%.2f%%), median over m = 12..64: %.2f%%; HECA %.2f%%: %s the best by %.2f points, "
          "%s the median by %.2f\n" % (MS[best], 100 * accs[best], 100 * median, 100 * heca[1],
                                       "within 1 point of" if heca[1] >= accs[best] - 0.01 else "MISSES (1 point of)",
                                       100 * (accs[best] - heca[1]), "above" if heca[1] > median else "NOT above",
                                       100 * (heca[1] - median)))
    print("| run | matched accuracy | ARI | NMI |")
    print("|---|---|---|---|")
    for name, a, ari, nmi in rows:
        print("| %s | %.2f%% | %.4f | %.4f |" % (name, 100 * a, ari, nmi))
    return rows


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        for name, n, k in (("hca8", 20000, 8), ("hca5", 12000, 5)):
            data, tp = os.path.join(work, name + ".npy"), os.path.join(work, name + "_t.npy")
            subprocess.run([binary, "generate", name, "--n", str(n), "-o", data, "--labels", tp], check=True,
                           capture_output=True)
            one_set(binary, work, name, data, np.load(tp), k)
        try:
            from osgeo import gdal
        except ImportError:
            gdal = None
            print("\n(scene sets skipped: no GDAL for Python)")
        for seed in ((7, 11, 23) if gdal else ()):
            tif, ttif = os.path.join(work, "s.tif"), os.path.join(work, "t.tif")
            subprocess.run([binary, "generate", "scene", "-o", tif, "--labels", ttif, "--width", "1000", "--height",
                            "800", "--seed", str(seed)], check=True, capture_output=True)
            img = gdal.Open(tif).ReadAsArray()
            truth = gdal.Open(ttif).ReadAsArray().reshape(-1)
            pix = img.reshape(img.shape[0], -1).T
            valid = truth >= 0
            valid &= (pix != 0).any(axis=1)
            data = os.path.join(work, "scene.npy")
            np.save(data, np.ascontiguousarray(pix[valid]))
            one_set(binary, work, "scene seed %d (uint8, 4 bands)" % seed, data, truth[valid],
                    len(np.unique(truth[valid])))
        print("\n### -m auto on small generated sets (ARI; scikit-learn generators, seed 0..2)\n")
        print("| set | n | dim | auto m | ARI auto | ARI m = 16 | ARI m = 32 |")
        print("|---|---|---|---|---|---|---|")
        for n in (200, 500, 1000, 3000):
            for dim in (2, 3):
                for kind in ("blobs", "moons", "circles"):
                    if kind != "blobs" and dim == 3:
                        continue
                    ari = {"auto": [], 16: [], 32: []}
                    for seed in range(3):
                        if kind == "blobs":
                            X, y = make_blobs(n_samples=n, n_features=dim, centers=4, cluster_std=1.0,
                                              random_state=seed)
                        elif kind == "moons":
                            X, y = make_moons(n_samples=n, noise=0.06, random_state=seed)
                        else:
                            X, y = make_circles(n_samples=n, noise=0.04, factor=0.5, random_state=seed)
                        data = os.path.join(work, "small.npy")
                        np.save(data, X.astype(np.float32))
                        k = len(np.unique(y))
                        for m in ari:
                            extra = ([] if m == "auto" else ["-m", str(m)]) + ["--clusters", str(k)]
                            pred, out = run(binary, "hca", data, work, extra)
                            if m == "auto":
                                am = out.split(" m ")[1].split()[0]
                            ari[m].append(adjusted_rand_score(y, pred))
                    print("| %s | %d | %d | %s | %.3f | %.3f | %.3f |" % (kind, n, dim, am, np.mean(ari["auto"]),
                                                                        np.mean(ari[16]), np.mean(ari[32])))


if __name__ == "__main__":
    main()
