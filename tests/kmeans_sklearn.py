#!/usr/bin/python3
"""Cross-check: parclust's k-means against scikit-learn's KMeans(algorithm='lloyd').

Usage: kmeans_sklearn.py PATH_TO_parclust WORKDIR

Both programs run Lloyd's loop from the SAME initial centres (`parclust kmeans --init c.npy` and
KMeans(init=c64, n_init=1)) with the same max_iter and tol, and follow the same rules: strict
convergence when no label changed, else stop once the centres' total squared shift is <= tol x the
mean feature variance; an empty cluster takes the point farthest from its (old) centre; a final
assignment when not strictly converged. parclust works on float32 points (float32 centres, sums in
double, nearest centre from |c|^2 - 2 x.c in float32), sklearn gets float64 copies of the same
float32 values. For each case:
  - iterations equal;
  - inertia within 1e-5 relative;
  - labels equal, except near-ties: a point whose two candidate centres (parclust's label and
    sklearn's) are at squared distances (float64, sklearn's final centres) differing by < 1e-5
    relative;
  - centres within 1e-4 of the data scale (max |x|).
Some cases start with one or two clusters that get no point in the first assignment (a centre far
from all data; duplicated centres), so that the empty-cluster relocation runs in both programs; the
case checks that it did (no final centre is left where it started in the void, and sklearn moved it
too). Besides: the seq and openmp (2 threads) backends write byte-identical labels, and the
kmeans++, kmeans-par and random initialisations recover well-separated lattice blobs (ARI >= 0.99).

A fresh random seed is drawn on every run and printed; PARCLUST_KMEANS_SEED=S replays it.
"""
import os
import re
import subprocess
import sys
import time
import warnings

try:
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score
except ImportError as e:  # do not skip silently: the test set-up installs python3-sklearn
    print("kmeans_sklearn: cannot import numpy/scikit-learn (%s); install python3-sklearn "
          "or point PARCLUST_PYTHON at a Python that has them" % e)
    print("kmeans_sklearn: 0 passed, 1 failed")
    sys.exit(1)

# name, n, dim, k, max_iter, tol, blobs, blob std (relative to the box), special
#   special: None, "far" (one initial centre far from all points), "dup" (initial centres 1 and
#   k-1 duplicate centre 0: two empty clusters in the first iteration)
CASES = [
    ("d1-k5-tol", 3000, 1, 5, 300, 1e-4, 4, 0.15, None),
    ("d2-k2-tol", 2000, 2, 2, 300, 1e-4, 3, 0.30, None),
    ("d2-k10-iter10", 5000, 2, 10, 10, 0.0, 6, 0.20, None),
    ("d3-k50-tol", 8000, 3, 50, 300, 1e-4, 10, 0.20, None),
    ("d3-k200-iter8", 20000, 3, 200, 8, 0.0, 30, 0.15, None),
    ("d16-k20-iter15", 6000, 16, 20, 15, 0.0, 8, 0.25, None),
    ("d40-k12-tol", 3000, 40, 12, 300, 1e-4, 6, 0.30, None),
    ("d2-k6-far-centre", 3000, 2, 6, 300, 1e-4, 5, 0.20, "far"),
    ("d3-k8-dup-centres", 4000, 3, 8, 300, 1e-4, 5, 0.20, "dup"),
    ("d16-k10-far-iter20", 3000, 16, 10, 20, 0.0, 6, 0.25, "far"),
]
BACKEND_CASES = ("d3-k200-iter8", "d2-k6-far-centre")
SUMMARY = re.compile(r"^k-means: (\d+) points, (\d+) dimensions, (\d+) clusters, (\d+) iterations, "
                     r"inertia ([-+0-9.eE]+|inf|nan), ")


class Failed(Exception):
    pass


def run_parclust(parclust, args):
    p = subprocess.run([parclust] + args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Failed("parclust %s: exit %d, stderr: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    m = SUMMARY.match(p.stdout)
    if not m:
        raise Failed("no summary line in parclust's output: %r" % p.stdout[:300])
    return int(m.group(4)), float(m.group(5))


def make_data(rng, n, dim, blobs, rel_std):
    """Overlapping Gaussian blobs of different sizes and spreads in [-10, 10]^dim, offset from the
    origin (x.c form errors grow with |x|), float32."""
    box = 10.0
    centres = rng.uniform(-box, box, size=(blobs, dim)) + 3.0
    weights = rng.uniform(0.5, 2.0, size=blobs)
    sizes = rng.multinomial(n, weights / weights.sum())
    parts = [c + rng.normal(size=(s, dim)) * (box * rel_std * rng.uniform(0.5, 1.5))
             for c, s in zip(centres, sizes)]
    x = np.concatenate(parts)
    rng.shuffle(x)
    return x.astype(np.float32)


def nearest(x64, c64):
    d2 = ((x64 * x64).sum(1)[:, None] - 2.0 * x64 @ c64.T + (c64 * c64).sum(1)[None, :])
    return d2.argmin(1)


def run_case(parclust, workdir, case, rng):
    name, n, dim, k, max_iter, tol, blobs, rel_std, special = case
    x = make_data(rng, n, dim, blobs, rel_std)
    init = x[rng.choice(n, size=k, replace=False)].copy()
    scale = float(np.abs(x).max())
    moved = []  # initial centres that must take a relocated point
    if special == "far":
        j = int(rng.integers(k))
        init[j] = 100.0 * scale
        moved = [j]
    elif special == "dup":
        init[1] = init[0]
        init[k - 1] = init[0]
        moved = [1, k - 1]
    x64, c64 = x.astype(np.float64), init.astype(np.float64)
    if moved:  # the first assignment (float64) leaves exactly these clusters empty
        first = np.bincount(nearest(x64, c64), minlength=k)
        empty = [int(j) for j in np.flatnonzero(first == 0)]
        if empty != sorted(moved):
            raise Failed("set-up: the first assignment leaves clusters %s empty, expected %s" % (empty, moved))
    xp, cp = os.path.join(workdir, name + "_x.npy"), os.path.join(workdir, name + "_c.npy")
    lp, ccp = os.path.join(workdir, name + "_l.npy"), os.path.join(workdir, name + "_cc.npy")
    np.save(xp, x)
    np.save(cp, init)
    for f in (lp, ccp):
        if os.path.exists(f):
            os.remove(f)
    t0 = time.perf_counter()
    it, inertia = run_parclust(parclust, ["kmeans", xp, "-k", str(k), "--init", cp, "--max-iter", str(max_iter),
                                          "--tol", repr(tol), "--labels", lp, "--centers", ccp])
    t_pc = time.perf_counter() - t0
    labels = np.load(lp).astype(np.int64).ravel()
    centres = np.load(ccp).astype(np.float64).reshape(k, dim)
    if labels.shape != (n,):
        raise Failed("labels file has shape %s, expected (%d,)" % (labels.shape, n))

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = KMeans(n_clusters=k, init=c64, n_init=1, max_iter=max_iter, tol=tol, algorithm="lloyd").fit(x64)
    t_sk = time.perf_counter() - t0
    sl, sc = km.labels_.astype(np.int64), km.cluster_centers_

    errs = []
    if it != km.n_iter_:
        errs.append("iterations %d, sklearn %d" % (it, km.n_iter_))
    rel = abs(inertia - km.inertia_) / max(abs(km.inertia_), 1e-300)
    if not rel <= 1e-5:
        errs.append("inertia %.9g, sklearn %.9g (relative %.2g)" % (inertia, km.inertia_, rel))
    diff = np.flatnonzero(labels != sl)
    ties = 0
    if len(diff):
        if labels.min() < 0 or labels.max() >= k:
            errs.append("labels outside 0..%d" % (k - 1))
        else:
            xd = x64[diff]
            da = ((xd - sc[labels[diff]]) ** 2).sum(1)
            db = ((xd - sc[sl[diff]]) ** 2).sum(1)
            r = np.abs(da - db) / np.maximum(np.maximum(da, db), 1e-300)
            real = diff[r >= 1e-5]
            ties = len(diff) - len(real)
            if len(real):
                i = real[0]
                errs.append("%d labels differ beyond near-ties, e.g. point %d: %d (d2 %.9g) vs sklearn %d (d2 %.9g)"
                            % (len(real), i, labels[i], ((x64[i] - sc[labels[i]]) ** 2).sum(), sl[i],
                               ((x64[i] - sc[sl[i]]) ** 2).sum()))
    cgap = float(np.abs(centres - sc).max()) / scale
    if not cgap <= 1e-4:
        j = int(np.abs(centres - sc).max(1).argmax())
        errs.append("centres differ by %.3g of the data scale (centre %d: %s vs sklearn %s)"
                    % (cgap, j, centres[j][:4], sc[j][:4]))
    for j in moved:  # relocation ran in both: the centre left its initial place and holds points
        for who, cc, ll in (("parclust", centres, labels), ("sklearn", sc, sl)):
            if (special == "far" and np.array_equal(cc[j], c64[j])) or not np.any(ll == j):
                errs.append("%s did not relocate empty cluster %d (centre %s, %d points)"
                            % (who, j, cc[j][:4], int(np.sum(ll == j))))
    if errs:
        raise Failed("; ".join(errs))
    return ("%d iterations, inertia %.9g (rel. diff %.1e), %d near-tie labels, centres within %.1e, "
            "%.2f s vs sklearn %.2f s" % (it, inertia, rel, ties, cgap, t_pc, t_sk)), (xp, cp, k, max_iter, tol)


def check_backends(parclust, workdir, name, xp, cp, k, max_iter, tol):
    files = []
    for tag, extra in (("seq", ["--backend", "seq"]), ("omp", ["--backend", "openmp", "--threads", "2"])):
        lp = os.path.join(workdir, "%s_%s_l.npy" % (name, tag))
        run_parclust(parclust, ["kmeans", xp, "-k", str(k), "--init", cp, "--max-iter", str(max_iter),
                                "--tol", repr(tol), "--labels", lp] + extra)
        with open(lp, "rb") as f:
            files.append(f.read())
    if files[0] != files[1]:
        raise Failed("labels of --backend seq and --backend openmp --threads 2 differ")
    return "identical label files (%d bytes)" % len(files[0])


def check_init(parclust, workdir, grid, truth, init, n_init, seed):
    lp = os.path.join(workdir, "grid_%s_l.npy" % init)
    args = ["kmeans", grid, "-k", "9", "--n-init", str(n_init), "--seed", str(seed), "--labels", lp]
    if init != "kmeans++":
        args += ["--init", init]
    it, inertia = run_parclust(parclust, args)
    ari = adjusted_rand_score(np.load(truth).ravel(), np.load(lp).ravel())
    if not ari >= 0.99:
        raise Failed("ARI %.4f < 0.99 (inertia %.6g, %d iterations)" % (ari, inertia, it))
    return "ARI %.4f, inertia %.6g" % (ari, inertia)


def main():
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[2])
        print("kmeans_sklearn: 0 passed, 1 failed")
        return 1
    parclust, workdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    fixed = os.environ.get("PARCLUST_KMEANS_SEED")
    base = int(fixed) if fixed else int.from_bytes(os.urandom(4), "little") % 1000000
    print("kmeans_sklearn: base seed %d (replay with PARCLUST_KMEANS_SEED=%d)" % (base, base))
    passed = failed = 0
    t_start = time.perf_counter()

    def report(label, fn, *a):
        nonlocal passed, failed
        try:
            msg = fn(*a)
            if isinstance(msg, tuple):
                msg, extra = msg
            else:
                extra = None
            print("ok   %s: %s" % (label, msg))
            passed += 1
            return extra
        except (Failed, subprocess.SubprocessError, OSError, ValueError) as e:
            print("FAIL %s: %s" % (label, e))
            failed += 1
            return None

    for i, case in enumerate(CASES):
        rng = np.random.default_rng([base, i])
        got = report(case[0], run_case, parclust, workdir, case, rng)
        if got and case[0] in BACKEND_CASES:
            report(case[0] + " seq vs openmp", check_backends, parclust, workdir, case[0], *got)

    grid, truth = os.path.join(workdir, "grid_x.npy"), os.path.join(workdir, "grid_truth.npy")
    p = subprocess.run([parclust, "generate", "grid", "--clusters", "9", "--box", "10", "--spread", "0.5",
                        "--n", "9000", "--dim", "2", "--seed", str(base % 100000), "-o", grid, "--labels", truth],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print("FAIL generate grid: exit %d, %s" % (p.returncode, p.stderr.strip()))
        failed += 1
    else:
        seed = base % 0x7fffffff
        report("grid 9 blobs, kmeans++ --n-init 3", check_init, parclust, workdir, grid, truth, "kmeans++", 3, seed)
        report("grid 9 blobs, kmeans-par --n-init 3", check_init, parclust, workdir, grid, truth, "kmeans-par", 3,
               seed)
        report("grid 9 blobs, random --n-init 10", check_init, parclust, workdir, grid, truth, "random", 10, seed)

    print("kmeans_sklearn: %.1f s" % (time.perf_counter() - t_start))
    print("kmeans_sklearn: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
