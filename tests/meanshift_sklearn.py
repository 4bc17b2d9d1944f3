#!/usr/bin/python3
"""Cross-check: parclust's flat-kernel mean shift against scikit-learn's MeanShift.

Usage: meanshift_sklearn.py PATH_TO_parclust WORKDIR

For each case, Gaussian blobs are drawn with fresh random seeds (printed; set
PARCLUST_SKLEARN_SEED=S to replay one), saved as .npy, clustered by
`parclust meanshift --kernel flat --bandwidth H` and by sklearn.cluster.MeanShift(bandwidth=H),
and the two must agree: same number of clusters, every sklearn centre matched one-to-one to a
parclust centre within 1e-3 H, and the same partition of the points (ARI exactly 1).

Why the two should agree here. sklearn runs non-blurring mean shift from every point with a flat
kernel (points at distance <= H weigh 1), stops a seed once it moves <= 1e-3 H, keeps the mode
of the densest seed per group (greedy, modes within H dropped) and labels each point by the
nearest kept centre. parclust runs the same iteration from every point, joins modes closer than
H/2 (connected components), labels each point by its mode's cluster, numbers clusters by size
and reports the mean of the modes as the centre. On blobs that are far apart relative to H
every point's mode lies within ~1e-3 H of its blob's single fixed point, so the two
post-processings give the same clusters and centres. The blobs are made just wide enough
(standard deviation 0.25 H to 0.4 H, so their tails reach past the kernel's edge and windows
differ from seed to seed) that the modes are found by several iterations, not one, and
of unequal sizes so that parclust's size-ordered numbering differs from sklearn's.
"""
import os
import subprocess
import sys
import time

try:
    import numpy as np
    from scipy.optimize import linear_sum_assignment
    from sklearn.cluster import MeanShift
    from sklearn.datasets import make_blobs
    from sklearn.metrics import adjusted_rand_score
except ImportError as e:  # do not skip silently: the test set-up installs python3-sklearn
    print("meanshift_sklearn: cannot import numpy/scipy/scikit-learn (%s); install python3-sklearn "
          "or point PARCLUST_PYTHON at a Python that has them" % e)
    print("meanshift_sklearn: 0 passed, 1 failed")
    sys.exit(1)

# name, dim, clusters, sizes (points per blob, cycled), bandwidth, std / bandwidth, min centre gap / H
CASES = [
    ("2d-h1", 2, 4, [600, 350, 200, 450], 1.0, 0.30, 6.0),
    ("2d-h0.5", 2, 6, [300, 180, 420, 250], 0.5, 0.25, 6.0),
    ("2d-h2.5-wide", 2, 3, [700, 400, 250], 2.5, 0.40, 7.0),
    ("3d-h1", 3, 5, [400, 250, 320, 150, 500], 1.0, 0.30, 6.0),
    ("3d-h3", 3, 4, [350, 500, 220, 300], 3.0, 0.35, 6.0),
    ("3d-h0.2", 3, 3, [500, 300, 400], 0.2, 0.30, 6.0),
]


def pick_centres(rng, k, dim, gap):
    """k centres in a box, pairwise at least `gap` apart (rejection sampling)."""
    box = gap * (k ** (1.0 / dim)) * 1.5
    centres = []
    while len(centres) < k:
        c = rng.uniform(-box, box, size=dim)
        if all(np.linalg.norm(c - o) >= gap for o in centres):
            centres.append(c)
    return np.array(centres)


def run_case(parclust, workdir, name, dim, k, sizes, h, rel_std, rel_gap, seed):
    rng = np.random.default_rng(seed)
    sizes = [sizes[i % len(sizes)] for i in range(k)]
    centres = pick_centres(rng, k, dim, rel_gap * h) + rng.uniform(-100, 100, size=dim)
    X, _ = make_blobs(n_samples=sizes, centers=centres, cluster_std=rel_std * h,
                      random_state=int(rng.integers(2**31 - 1)))
    # Both programs must see the same numbers: parclust computes in float32, so the data are
    # float32 values (saved as float64 or float32 in turn, to read both dtypes).
    X = X.astype(np.float32).astype(np.float64)
    path = os.path.join(workdir, name + ".npy")
    np.save(path, X if seed % 2 else X.astype(np.float32))
    cpath, lpath = os.path.join(workdir, name + "_c.csv"), os.path.join(workdir, name + "_l.csv")
    for p in (cpath, lpath):
        if os.path.exists(p):
            os.remove(p)

    t0 = time.time()
    cmd = [parclust, "meanshift", path, "--kernel", "flat", "--bandwidth", repr(h),
           "--centers", cpath, "--labels", lpath]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    t1 = time.time()
    if proc.returncode != 0:
        return ["parclust exited %d: %s" % (proc.returncode, proc.stderr.strip())]
    pc_centres = np.loadtxt(cpath, delimiter=",", ndmin=2)
    pc_labels = np.loadtxt(lpath, dtype=np.int64, ndmin=1)

    ms = MeanShift(bandwidth=h).fit(X)
    t2 = time.time()
    sk_centres, sk_labels = ms.cluster_centers_, ms.labels_

    errors = []
    n = X.shape[0]
    if pc_labels.shape != (n,):
        errors.append("parclust wrote %d labels for %d points" % (pc_labels.size, n))
        return errors
    kp, ks = pc_centres.shape[0], sk_centres.shape[0]
    if pc_centres.shape[1] != dim:
        errors.append("parclust centres have %d columns, expected %d" % (pc_centres.shape[1], dim))
        return errors
    if kp != ks:
        errors.append("parclust found %d clusters, sklearn %d (data: %d blobs)" % (kp, ks, k))
    if ks != k:
        # the data are meant to have exactly k modes; if not, the case does not test what it should
        errors.append("sklearn found %d clusters for %d blobs: the data are not as well separated "
                      "as intended" % (ks, k))
    if set(np.unique(pc_labels)) != set(range(kp)):
        errors.append("parclust labels are not 0..%d" % (kp - 1))
    else:
        counts = np.bincount(pc_labels, minlength=kp)
        if np.any(np.diff(counts) > 0):
            errors.append("parclust clusters are not numbered by size: sizes %s" % counts.tolist())

    # one-to-one matching of centres (Hungarian method on the distances)
    dist = np.linalg.norm(sk_centres[:, None, :] - pc_centres[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(dist)
    worst = float(dist[rows, cols].max()) if len(rows) else float("inf")
    if worst > 1e-3 * h:
        errors.append("centres differ: worst matched distance %.3g > 1e-3 h = %.3g" % (worst, 1e-3 * h))

    ari = adjusted_rand_score(sk_labels, pc_labels)
    if ari != 1.0:
        bad = 0
        mapping = dict(zip(cols, rows))  # parclust cluster -> sklearn cluster
        for i in range(n):
            if mapping.get(int(pc_labels[i]), -1) != sk_labels[i]:
                bad += 1
                if bad <= 3:
                    d = np.linalg.norm(X[i] - sk_centres, axis=1)
                    errors.append("point %d %s: parclust cluster %d, sklearn cluster %d; distance to "
                                  "sklearn centres / h: %s" % (i, X[i].tolist(), pc_labels[i], sk_labels[i],
                                                                np.round(d / h, 4).tolist()))
        errors.append("labelings differ: ARI %.9f, %d points disagree" % (ari, bad))
    else:
        # the label correspondence must also be the centre correspondence
        pairs = set(zip(pc_labels.tolist(), sk_labels.tolist()))
        if pairs != set((int(c), int(r)) for r, c in zip(rows, cols)):
            errors.append("labels agree but the matching of labels differs from the matching of centres")

    print("  %s: n=%d dim=%d h=%g seed=%d: %d clusters (sklearn %d), worst centre distance %.2e h, "
          "ARI %.6f, parclust %.2f s, sklearn %.2f s"
          % (name, n, dim, h, seed, kp, ks, worst / h, ari, t1 - t0, t2 - t1))
    return errors


def main():
    if len(sys.argv) != 3:
        print("usage: meanshift_sklearn.py PATH_TO_parclust WORKDIR")
        return 2
    parclust, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    fixed = os.environ.get("PARCLUST_SKLEARN_SEED")
    base = int(fixed) if fixed else int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
    print("meanshift_sklearn: base seed %d (replay with PARCLUST_SKLEARN_SEED=%d)" % (base, base))
    passed = failed = 0
    for i, (name, dim, k, sizes, h, rel_std, rel_gap) in enumerate(CASES):
        seed = (base + 7919 * i) & 0x7FFFFFFF
        try:
            errors = run_case(parclust, workdir, name, dim, k, sizes, h, rel_std, rel_gap, seed)
        except Exception as e:  # a crash in one case is a failure, not the end of the run
            errors = ["exception: %r" % (e,)]
        if errors:
            failed += 1
            print("FAIL %s (seed %d)" % (name, seed))
            for e in errors:
                print("     " + e)
        else:
            passed += 1
            print("ok   %s (seed %d)" % (name, seed))
    print("meanshift_sklearn: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
