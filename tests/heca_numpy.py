#!/usr/bin/python3
"""Cross-check: parclust's HECA and HCA-MS against independent NumPy/SciPy renderings of
ALGORITHMS.md sections 3a and 3b, written from the spec alone.

Usage: heca_numpy.py PATH_TO_parclust WORKDIR

Fresh random seeds every run (printed; PARCLUST_HECA_SEED=S replays).
HECA (3a), per case (2 or 3 dimensions, 2 to 4 members, shifted or not):
  members: grid over the box (shifted members: the box widened by half a cell, m + 1 cells), links
  to the largest (density, index) of the closed neighbourhood, components, h between adjacent
  components, SciPy single linkage on the full matrix (1 where not adjacent), its cophenetic matrix
  u_l; prototypes: the reference (finest) grid's cells and means; c_l(p): the component of the member
  cell holding the mean (empty cell: the largest (density, index) non-empty cell of its closed
  neighbourhood, as parclust documents); U = mean of u_l over adjacent prototypes; SciPy single
  linkage over the prototypes (1 where not adjacent).
  Checks: (a) parclust's merge heights equal the reference's, less the zero-height merges inside its
  groups (to 1e-12); (b) with --min-cluster-size 0, the partition by --threshold T equals fcluster(Z,
  T, 'distance') at heights between the reference's merge heights.
HCA-MS (3b): parclust's HCA labels give the cut; border cells (a non-empty neighbour of another
  cluster); every border point climbs the count-weighted cell means by Gaussian mean shift cut at 3h
  (brute force over all means), eps 1e-3 h, 100 iterations; takes the reached cell's cluster, or the
  nearest mean's. Checks: the border and changed counts parclust prints, and the labels, equal the
  reference's (a point whose climb ends within 1e-5 of a cell of a boundary may go either way).
"""
import os
import re
import subprocess
import sys

try:
    import numpy as np
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform
except ImportError as e:
    print("heca_numpy: cannot import numpy/scipy (%s)" % e)
    print("heca_numpy: 0 passed, 1 failed")
    sys.exit(1)


def grid(X, lo, hi, m):
    n, dim = X.shape
    coord = np.zeros((n, dim), dtype=np.int64)
    for j in range(dim):
        if hi[j] > lo[j]:
            coord[:, j] = np.clip(np.floor((X[:, j] - lo[j]) / (hi[j] - lo[j]) * m), 0, m - 1)
    w = np.array([m ** (dim - 1 - j) for j in range(dim)], dtype=np.int64)
    lin = coord @ w
    cells, point_cell, dens = np.unique(lin, return_inverse=True, return_counts=True)
    ccoord = (cells[:, None] // w[None, :]) % m
    return {"cells": cells, "pc": point_cell.reshape(-1), "dens": dens, "cc": ccoord, "m": m, "w": w,
            "lo": lo, "hi": hi}


def adjacency(cc):
    """Pairs (a < b) of cells whose coordinates differ by at most 1 in every dimension."""
    d = np.abs(cc[:, None, :] - cc[None, :, :]).max(axis=2)
    a, b = np.nonzero(np.triu(d <= 1, 1))
    return a, b


def member(X, lo, hi, m):
    g = grid(X, lo, hi, m)
    cells, dens, nc = g["cells"], g["dens"], len(g["cells"])
    a, b = adjacency(g["cc"])
    key = dens.astype(np.float64) * float(m) ** X.shape[1] + cells
    best = np.arange(nc)
    for x, y in ((a, b), (b, a)):
        for i, j in zip(x, y):
            if key[j] > key[best[i]]:
                best[i] = j
    root = best.copy()
    while not np.array_equal(root[root], root):
        root = root[root]
    reps = np.flatnonzero(root == np.arange(nc))
    cid = np.full(nc, -1)
    cid[reps] = np.arange(len(reps))
    comp = cid[root]
    ng = len(reps)
    D = np.ones((ng, ng))
    np.fill_diagonal(D, 0)
    best_v = {}
    for i, j in zip(a, b):
        ci, cj = comp[i], comp[j]
        if ci != cj:
            k = (min(ci, cj), max(ci, cj))
            best_v[k] = max(best_v.get(k, 0), min(dens[i], dens[j]))
    for (ci, cj), v in best_v.items():
        D[ci, cj] = D[cj, ci] = 1.0 - v / min(dens[reps[ci]], dens[reps[cj]])
    if ng > 1:
        u = squareform(hierarchy.cophenet(hierarchy.linkage(squareform(D, checks=False), "single")))
    else:
        u = np.zeros((1, 1))
    g.update(comp=comp, u=u)
    return g


def component_at(g, x):
    dim = len(x)
    m = g["m"]
    c = np.array([min(int(np.floor((x[j] - g["lo"][j]) / (g["hi"][j] - g["lo"][j]) * m)), m - 1)
                  if g["hi"][j] > g["lo"][j] else 0 for j in range(dim)])
    c = np.maximum(c, 0)
    hit = np.flatnonzero(np.all(g["cc"] == c, axis=1))
    if len(hit):
        return g["comp"][hit[0]]
    near = np.flatnonzero(np.abs(g["cc"] - c).max(axis=1) <= 1)
    assert len(near), "no non-empty cell around a prototype's mean"
    k = near[np.lexsort((g["cells"][near], g["dens"][near]))[-1]]
    return g["comp"][k]


def heca_reference(X, ms, shifts):
    lo, hi = X.min(axis=0), X.max(axis=0)
    members = []
    for l, m in enumerate(ms):
        half = (hi - lo) / m / 2 if shifts and l % 2 == 1 else np.zeros_like(lo)
        members.append(member(X, lo - half, hi + half, m + (1 if shifts and l % 2 == 1 else 0)))
    ref = int(np.argmax(ms))
    rg = members[ref]
    P = len(rg["cells"])
    mean = np.zeros((P, X.shape[1]))
    np.add.at(mean, rg["pc"], X)
    mean /= rg["dens"][:, None]
    comp = [rg["comp"] if l == ref else np.array([component_at(g, mean[p]) for p in range(P)])
            for l, g in enumerate(members)]
    a, b = adjacency(rg["cc"])
    U = np.ones((P, P))
    np.fill_diagonal(U, 0)
    same = np.ones(len(a), dtype=bool)
    vals = np.zeros(len(a))
    for l, g in enumerate(members):
        vals += g["u"][comp[l][a], comp[l][b]]
        same &= comp[l][a] == comp[l][b]
    vals /= len(members)
    U[a, b] = U[b, a] = vals
    Z = hierarchy.linkage(squareform(U, checks=False), "single") if P > 1 else np.zeros((0, 4))
    # groups: adjacent prototypes in one component of every member
    parent = list(range(P))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for i, j in zip(a[same], b[same]):
        parent[find(i)] = find(j)
    groups = len({find(i) for i in range(P)})
    return Z, rg["pc"], groups


def same_partition(x, y):
    pairs = set(zip(x.tolist(), y.tolist()))
    return len(pairs) == len(set(x.tolist())) == len(set(y.tolist()))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(cmd), p.stderr.strip()))
    return p.stdout


def heca_case(parclust, work, rng, dim, ms, shifts, errors):
    n = int(rng.integers(1500, 3000))
    k = int(rng.integers(3, 6))
    centres = rng.uniform(-10, 10, size=(k, dim))
    X = (centres[rng.integers(0, k, n)] + rng.standard_normal((n, dim)) * rng.uniform(0.8, 2.5)).astype(np.float32)
    data = os.path.join(work, "heca.npy")
    np.save(data, X)
    Z, pcell, groups = heca_reference(X.astype(np.float64), ms, shifts)
    dend = os.path.join(work, "heca_z.npy")
    base = [parclust, "heca", data, "--m-list", ",".join(map(str, ms)), "--min-cluster-size", "0"]
    if shifts:
        base.append("--shifts")
    out = run(base + ["--threshold", "0", "--dendrogram", dend])
    got = np.load(dend)
    ng = int(re.search(r"prototypes in (\d+) groups", out).group(1))
    name = "heca dim %d m %s%s" % (dim, ms, " shifted" if shifts else "")
    if ng != groups:
        errors.append("%s: %d groups, reference %d" % (name, ng, groups))
        return
    ref_h = np.sort(Z[:, 2])
    zeros = len(ref_h) - len(got)
    if zeros < 0 or np.any(ref_h[:zeros] != 0) or not np.allclose(np.sort(got[:, 2]), ref_h[zeros:], rtol=0,
                                                                   atol=1e-12):
        errors.append("%s: merge heights differ from the reference's" % name)
        return
    hs = np.unique(ref_h)
    cuts = (hs[:-1] + hs[1:]) / 2
    for T in cuts[np.linspace(0, len(cuts) - 1, min(4, len(cuts))).astype(int)] if len(cuts) else []:
        labels = os.path.join(work, "heca_l.npy")
        run(base + ["--threshold", repr(float(T)), "--labels", labels])
        want = hierarchy.fcluster(Z, T, "distance")[pcell] if len(Z) else np.zeros(len(X))
        if not same_partition(np.load(labels), want):
            errors.append("%s: the partition at threshold %g differs from SciPy's fcluster" % (name, T))


def ms_case(parclust, work, rng, dim, m, bandwidth, errors, origin=0.0):
    """origin: added to every value, saved as float64 (a float would hold 1e6 + x only to 0.06, the
    climbs' offsets from their frames keep it to ~1e-7 h)."""
    n = int(rng.integers(1500, 3000))
    k = int(rng.integers(3, 6))
    centres = rng.uniform(-6, 6, size=(k, dim))
    X32 = (centres[rng.integers(0, k, n)] + rng.standard_normal((n, dim)) * 1.5).astype(np.float32)
    X = X32.astype(np.float64) + origin
    data = os.path.join(work, "ms.npy")
    np.save(data, X if origin else X32)
    plain, refined = os.path.join(work, "plain.npy"), os.path.join(work, "refined.npy")
    args = [parclust, "hca", data, "-m", str(m), "--clusters", str(k)]
    run(args + ["--labels", plain])
    extra = ["--refine-bandwidth", repr(bandwidth)] if bandwidth is not None else ["--refine-borders"]
    out = run(args + extra + ["--labels", refined])
    lab, got = np.load(plain), np.load(refined)
    lo, hi = X.min(axis=0), X.max(axis=0)
    g = grid(X, lo, hi, m)
    P = len(g["cells"])
    cl = np.full(P, -2)
    cl[g["pc"]] = lab
    a, b = adjacency(g["cc"])
    border = np.zeros(P, dtype=bool)
    diff = cl[a] != cl[b]
    border[a[diff]] = True
    border[b[diff]] = True
    mean = np.zeros((P, dim))
    np.add.at(mean, g["pc"], X)
    mean /= g["dens"][:, None]
    if bandwidth is None:  # the documented default: a cell width of the finer of m and the auto m
        auto = 32
        while auto > 4 and n / auto ** dim < 4:
            auto -= 1
        bandwidth = ((hi - lo) / max(m, auto)).max()
    h = bandwidth
    want = lab.copy()
    pts = np.flatnonzero(border[g["pc"]])
    ambiguous = np.zeros(n, dtype=bool)
    # parclust climbs in floats (offsets in h, to ~1e-6 h after a climb's rounding): a climb that ends
    # within 1e-5 of a cell of a boundary may go either way, and so may one whose stopping step is within
    # 1e-2 of eps (parclust may stop a step earlier or later) and that ends within 2 eps of a boundary.
    # Every other label must be the reference's.
    for i in pts:
        x = X[i].copy()
        near_stop = False
        if h > 0:
            for _ in range(100):
                d2 = ((mean - x) ** 2).sum(axis=1)
                w = g["dens"] * np.exp(-d2 / (2 * h * h)) * (d2 <= 9 * h * h)
                if w.sum() <= 0:
                    break
                nxt = (w[:, None] * mean).sum(axis=0) / w.sum()
                step = np.sqrt(((nxt - x) ** 2).sum())
                x = nxt
                near_stop = near_stop or abs(step / (1e-3 * h) - 1) < 1e-2
                if step < 1e-3 * h:
                    break
        t = (x - lo) / (hi - lo) * m
        edge = np.abs(t - np.round(t)) * (hi - lo) / m  # the distance to the nearest boundary, per dimension
        if np.any(np.abs(t - np.round(t)) < 1e-5) or (near_stop and np.any(edge < 2e-3 * h)):
            ambiguous[i] = True
        c = np.clip(np.floor(t), 0, m - 1).astype(np.int64)
        hit = np.flatnonzero(np.all(g["cc"] == c, axis=1))
        cell = hit[0] if len(hit) else int(np.argmin(((mean - x) ** 2).sum(axis=1)))
        want[i] = cl[cell]
    name = "hca-ms dim %d m %d h %g" % (dim, m, h)
    mm = re.search(r"refined borders: (\d+) border points, (\d+) changed", out)
    if not mm or int(mm.group(1)) != len(pts):
        errors.append("%s: border points %s, reference %d" % (name, mm and mm.group(1), len(pts)))
    mismatches = int(((got != want) & ~ambiguous).sum())
    if mismatches:
        errors.append("%s: %d labels differ from the reference's (besides %d climbs that end on a cell boundary)"
                      % (name, mismatches, int(ambiguous.sum())))
    elif mm and abs(int(mm.group(2)) - int((want != lab).sum())) > int(ambiguous.sum()):
        errors.append("%s: %s changed, reference %d" % (name, mm.group(2), int((want != lab).sum())))
    return len(pts), int((want != lab).sum())


def main():
    parclust, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    seed = int(os.environ.get("PARCLUST_HECA_SEED", np.random.SeedSequence().entropy % (2 ** 32)))
    print("heca_numpy: seed %d (replay with PARCLUST_HECA_SEED=%d)" % (seed, seed))
    rng = np.random.default_rng(seed)
    errors, cases = [], 0
    for dim, ms, shifts in ((2, [8, 11, 14], False), (2, [9, 12, 16, 20], True), (3, [5, 7], False),
                            (3, [6, 8, 10], True), (2, [12], False)):
        heca_case(parclust, work, rng, dim, ms, shifts, errors)
        cases += 1
    for dim, m, h, origin in ((2, 10, None, 0.0), (2, 14, 0.8, 0.0), (3, 7, None, 0.0), (2, 12, 0.0, 0.0),
                              (2, 12, None, 1e6)):
        b, c = ms_case(parclust, work, rng, dim, m, h, errors, origin)
        print("  hca-ms dim %d m %d origin %g: %d border points, %d changed" % (dim, m, origin, b, c))
        cases += 1
    # the command line: bad lists are refused in one line with exit 2; -m auto prints the m it chose
    data = os.path.join(work, "ms.npy")
    for bad, say in (("8,x", "not a list of integers"), ("8,", "ends with a comma"), ("1,8", "from 2 to 65535"),
                     (",".join(["8"] * 17), "at most 16 members")):
        p = subprocess.run([parclust, "heca", data, "--m-list", bad], capture_output=True, text=True)
        if p.returncode != 2 or say not in p.stderr or p.stderr.count("\n") != 1:
            errors.append("heca --m-list %s: exit %d, %r" % (bad, p.returncode, p.stderr))
        cases += 1
    n = len(np.load(data))
    dim = np.load(data).shape[1]
    auto = 32
    while auto > 4 and n / auto ** dim < 4:
        auto -= 1
    out = run([parclust, "hca", data, "--clusters", "3"])
    if ("m %d (auto)" % auto) not in out:
        errors.append("hca -m auto: expected m %d (auto) in %r" % (auto, out.splitlines()[0]))
    cases += 1
    # segment --algorithm heca and --refine-borders on an .npy image: the labels of heca and hca on its pixels
    img = np.clip(rng.normal(100, 30, size=(60, 50, 3)), 0, 255).astype(np.uint8)
    img[:30] //= 2
    img[:, :20] += 60
    np.save(os.path.join(work, "img.npy"), img)
    np.save(os.path.join(work, "pix.npy"), img.reshape(-1, 3))
    for seg, direct in ((["--algorithm", "heca", "-k", "3"], ["heca", "-k", "3"]),
                        (["--algorithm", "hca", "-m", "12", "-k", "3", "--refine-borders"],
                         ["hca", "-m", "12", "-k", "3", "--refine-borders"])):
        run([parclust, "segment", os.path.join(work, "img.npy"), "-o", os.path.join(work, "seg.npy")] + seg)
        run([parclust] + direct[:1] + [os.path.join(work, "pix.npy")] + direct[1:] +
            ["--labels", os.path.join(work, "direct.npy")])
        a, b = np.load(os.path.join(work, "seg.npy")).reshape(-1), np.load(os.path.join(work, "direct.npy"))
        if not np.array_equal(a, b):
            errors.append("segment %s: %d labels differ from %s on the pixels" % (" ".join(seg), int((a != b).sum()),
                                                                                 direct[0]))
        cases += 1
    for e in errors:
        print("FAIL " + e)
    print("heca_numpy: %d passed, %d failed" % (cases - len(errors), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
