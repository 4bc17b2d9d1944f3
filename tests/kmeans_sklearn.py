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


class Diverged(Exception):
    """The two programs parted at a near-tie (rounding), not at a bug: the case is drawn again."""


def run_parclust(parclust, args):
    p = subprocess.run([parclust] + args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Failed("parclust %s: exit %d, stderr: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    m = SUMMARY.match(p.stdout)
    if not m:
        raise Failed("no summary line in parclust's output: %r" % p.stdout[:300])
    return int(m.group(4)), float(m.group(5))


def make_data(rng, n, dim, blobs, rel_std):
    """Overlapping Gaussian blobs of different sizes and spreads, centres in [-10, 10]^dim, float32."""
    box = 10.0
    centres = rng.uniform(-box, box, size=(blobs, dim))
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


def tie_band(x64, ca, cb, da, db):
    """How close two squared distances must be for a point to count as a near-tie between centres ca
    and cb: 1e-5 relative to the distances, or to |x|^2 + |ca|^2 + |cb|^2 (parclust finds the nearest
    centre from |c|^2 - 2 x.c in float32, whose rounding error scales with those norms, not with the
    distance: two initial centres 5e-5 apart in 1-D at |x| = 11 split some points differently)."""
    norms = (x64 * x64).sum(-1) + (ca * ca).sum(-1) + (cb * cb).sum(-1)
    return 1e-5 * np.maximum(np.maximum(da, db), norms)


def near_ties(x64, lab_a, lab_b, c64):
    """Of the points labelled differently, those that are NOT near-ties between their two centres."""
    diff = np.flatnonzero(lab_a != lab_b)
    xd, ca, cb = x64[diff], c64[lab_a[diff]], c64[lab_b[diff]]
    da, db = ((xd - ca) ** 2).sum(1), ((xd - cb) ** 2).sum(1)
    return diff, diff[np.abs(da - db) >= tie_band(xd, ca, cb, da, db)]


def tied_clusters(x64, c64):
    """Clusters that take part in a near-tie when the points are assigned to centres c64 (pairs of
    exactly equal centres excluded: both programs give such a point to the lower index)."""
    d2 = ((x64[:, None, :] - c64[None, :, :]) ** 2).sum(2) if len(c64) * len(x64) < 4e6 else None
    if d2 is None:
        d2 = np.stack([((x64 - c) ** 2).sum(1) for c in c64], 1)
    order = np.argsort(d2, 1)[:, :2]
    a, b = order[:, 0], order[:, 1]
    rows = np.arange(len(x64))
    da, db = d2[rows, a], d2[rows, b]
    tie = (np.abs(da - db) < tie_band(x64, c64[a], c64[b], da, db)) & np.any(c64[a] != c64[b], axis=1)
    return set(a[tie].tolist()) | set(b[tie].tolist())


def parclust_fit(parclust, xp, cp, lp, ccp, k, dim, max_iter, tol, extra=()):
    for f in (lp, ccp):
        if os.path.exists(f):
            os.remove(f)
    it, inertia = run_parclust(parclust, ["kmeans", xp, "-k", str(k), "--init", cp, "--max-iter", str(max_iter),
                                          "--tol", repr(tol), "--labels", lp, "--centers", ccp] + list(extra))
    return it, inertia, np.load(lp).astype(np.int64).ravel(), np.load(ccp).astype(np.float64).reshape(k, dim)


def sklearn_fit(x64, c64, max_iter, tol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km = KMeans(n_clusters=len(c64), init=c64, n_init=1, max_iter=max_iter, tol=tol, algorithm="lloyd").fit(x64)
    return km.n_iter_, km.inertia_, km.labels_.astype(np.int64), km.cluster_centers_


def first_divergence(fit_pc, fit_sk, x64, c64, max_iter, tol_abs, scale):
    """Replays both programs iteration by iteration (max_iter = 1, 2, ...) to find where they first
    part. Returns a sentence when that is explained by floating-point rounding -- a near-tie in the
    assignment, or a centre shift at the tolerance itself -- and raises Failed otherwise."""
    prev = c64
    for m in range(1, max_iter + 1):
        pit, _, pl, pc = fit_pc(m)
        sit, _, sl, sc = fit_sk(m)
        off = np.flatnonzero(np.abs(pc - sc).max(1) > 1e-6 * scale)
        if len(off) or pit != sit:
            # iteration m assigned the points to `prev`, on which both agreed
            shift = float(((sc - prev) ** 2).sum())
            if not len(off) and abs(shift - tol_abs) <= 1e-5 * tol_abs:
                return "iteration %d: centre shift %.9g at the tolerance %.9g" % (m, shift, tol_abs)
            tied = tied_clusters(x64, prev)
            if len(off) and set(off.tolist()) <= tied:
                return ("iteration %d: centres %s moved differently, all of them in near-ties of the "
                        "assignment" % (m, off.tolist()[:6]))
            raise Failed("iteration %d: centres %s differ (by up to %.3g of the data scale; near-tie clusters "
                         "%s), iterations %d vs sklearn %d: not explained by rounding"
                         % (m, off.tolist()[:6], np.abs(pc - sc).max() / scale, sorted(tied)[:6], pit, sit))
        diff, real = near_ties(x64, pl, sl, sc)
        if len(real):
            i = real[0]
            raise Failed("after iteration %d, %d labels differ beyond near-ties, e.g. point %d: %d vs sklearn %d"
                         % (m, len(real), i, pl[i], sl[i]))
        if len(diff):
            return "assignment after iteration %d: %d near-tie labels" % (m, len(diff))
        if sit < m:
            break
        prev = sc
    return None


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
    t0 = time.perf_counter()
    it, inertia, labels, centres = parclust_fit(parclust, xp, cp, lp, ccp, k, dim, max_iter, tol)
    t_pc = time.perf_counter() - t0
    if labels.shape != (n,) or labels.min() < 0 or labels.max() >= k:
        raise Failed("labels file: shape %s, values %d..%d, expected (%d,) in 0..%d"
                     % (labels.shape, labels.min(), labels.max(), n, k - 1))
    t0 = time.perf_counter()
    sit, sinertia, sl, sc = sklearn_fit(x64, c64, max_iter, tol)
    t_sk = time.perf_counter() - t0

    errs = []
    if it != sit:
        errs.append("iterations %d, sklearn %d" % (it, sit))
    rel = abs(inertia - sinertia) / max(abs(sinertia), 1e-300)
    if not rel <= 1e-5:
        errs.append("inertia %.9g, sklearn %.9g (relative %.2g)" % (inertia, sinertia, rel))
    diff, real = near_ties(x64, labels, sl, sc)
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
        # Parted somewhere: find where, and whether rounding explains it (then the caller redraws).
        tol_abs = tol * float(x64.var(0).mean())
        why = first_divergence(
            lambda m: parclust_fit(parclust, xp, cp, lp + ".step.npy", ccp + ".step.npy", k, dim, m, tol),
            lambda m: sklearn_fit(x64, c64, m, tol), x64, c64, max_iter, tol_abs, scale)
        if why is None:
            raise Failed("; ".join(errs))
        raise Diverged("%s; then %s" % (why, "; ".join(errs)))
    return ("%d iterations, inertia %.9g (rel. diff %.1e), %d near-tie labels, centres within %.1e, "
            "%.2f s vs sklearn %.2f s" % (it, inertia, rel, len(diff), cgap, t_pc, t_sk)), (xp, cp, k, max_iter, tol)


def run_case_redrawn(parclust, workdir, case, base, i, attempts=5):
    """run_case on fresh data until the programs do not part at a near-tie (attempts at most)."""
    notes = []
    for a in range(attempts):
        try:
            msg, extra = run_case(parclust, workdir, case, np.random.default_rng([base, i, a]))
            return msg + "".join("\n     (drawn again after: %s)" % w for w in notes), extra
        except Diverged as e:
            notes.append(str(e))
    raise Failed("parted at a near-tie on %d draws of the data:%s" % (attempts, "".join("\n     " + w for w in notes)))


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
        got = report(case[0], run_case_redrawn, parclust, workdir, case, base, i)
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
        report("grid 9 blobs, random --n-init 100", check_init, parclust, workdir, grid, truth, "random", 100, seed)

    print("kmeans_sklearn: %.1f s" % (time.perf_counter() - t_start))
    print("kmeans_sklearn: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
