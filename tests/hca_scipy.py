#!/usr/bin/python3
"""Cross-check: parclust's HCA against an independent NumPy rendering of ALGORITHMS.md section 3
and SciPy's single linkage.

Usage: hca_scipy.py PATH_TO_parclust WORKDIR

Every run draws fresh random seeds (the base seed is printed; set PARCLUST_HCA_SEED=S to replay).
For each case (1 to 4 dimensions, m from 4 to 40; Gaussian blobs of different spreads, uniform
noise, integer-valued data with many duplicate points so that densities tie, a constant
dimension), the points are saved as float32 .npy and clustered by
    parclust hca data.npy -m M --clusters K --dendrogram d.csv --components c.csv --labels l.csv
The reference, written here from the spec alone (steps 1-4):
  1. bounding box per dimension from the float32 values (in float64); cell coordinate
     min(floor((x - l) / (r - l) * m), m - 1), 0 where r == l; linear index with the last
     dimension fastest; density = points per cell;
  2. each non-empty cell links to the largest (density, linear index) among the non-empty cells of
     its closed 3^d neighbourhood (corners included); itself = representative;
  3. components = cells reaching the same representative, numbered by increasing representative
     linear index;
  4. h(Gi, Gj) = 1 - max over touching cells a in Gi, b in Gj of min(D(a), D(b)) / min(D(Yi), D(Yj)).
Checks:
  (a) the components file (component, cell, density, points) equals the reference;
  (b) parclust's dendrogram is a valid SciPy linkage with non-decreasing heights, and its
      cophenetic matrix equals (to 1e-12) that of scipy.cluster.hierarchy.linkage(method='single')
      on the full matrix (reference h for adjacent components, 1 for the others);
  (c) labels: all points of one cell share a label, and all points of one reference component of
      at least the minimum cluster size (default minimum cluster size: the cells of smaller
      clusters are given to the nearest kept cluster one by one);
      with --min-cluster-size 0, the partition of the components by --clusters K equals SciPy's
      fcluster(Z, K, 'maxclust') on parclust's linkage and fcluster(Z, h, 'distance') at the height
      h of the (n-K)th merge (skipped when the cut's two merge heights tie, where either is right;
      maxclust only for K < n - 1, see gh-12651), and by --threshold T equals
      fcluster(Z, T, 'distance').
"""
import os
import subprocess
import sys
import time

try:
    import numpy as np
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform
except ImportError as e:  # do not skip silently
    print("hca_scipy: cannot import numpy/scipy (%s); install python3-scipy "
          "or point PARCLUST_PYTHON at a Python that has them" % e)
    print("hca_scipy: 0 passed, 1 failed")
    sys.exit(1)


# ---------------------------------------------------------------- data

def blobs(rng, n, dim, k, spread, box=10.0):
    centres = rng.uniform(-box, box, size=(k, dim))
    w = rng.uniform(0.5, 2.0, size=k)
    which = rng.choice(k, size=n, p=w / w.sum())
    s = spread * rng.uniform(0.5, 1.5, size=k)
    return centres[which] + rng.standard_normal((n, dim)) * s[which, None]


def make_data(rng, kind, n, dim):
    if kind == "tight-blobs":
        X = blobs(rng, n, dim, int(rng.integers(3, 7)), 0.6)
    elif kind == "wide-blobs":
        X = blobs(rng, n, dim, int(rng.integers(3, 7)), 2.5)
    elif kind == "uniform":
        X = rng.uniform(-1.0, 1.0, size=(n, dim)) * rng.uniform(0.5, 100.0)
    elif kind == "integers":
        # few distinct values per dimension: many duplicate points, many density ties, and points
        # on cell boundaries (integer / range * m is often an integer)
        hi = int(rng.integers(3, 25))
        X = rng.integers(0, hi + 1, size=(n, dim)).astype(np.float64)
    elif kind.startswith("integers:"):
        # integers 0 .. R, both ends present, with an m for which x / R * m lands a hair below an
        # integer for some x (the spec's order of operations matters there; x * (m / R) differs)
        hi = int(kind.split(":")[1])
        X = rng.integers(0, hi + 1, size=(n, dim)).astype(np.float64)
        X[0], X[1] = 0, hi
    elif kind == "int-blobs":
        X = np.round(blobs(rng, n, dim, int(rng.integers(2, 6)), 1.5, box=6.0))
    elif kind in ("pixels", "pixels16"):
        # band values of an 8-bit (16-bit: 10 bits used) image: integers in [0, top], both ends
        # present, so with m = top + 1 each value has its cell. 256^4 or 1024^3 cells exceed the
        # memory budget of the dense grid: the sparse (non-empty cells only) path runs.
        top = 255 if kind == "pixels" else 1023
        X = blobs(rng, n, dim, int(rng.integers(3, 6)), 1.0 if dim == 4 else 1.5, box=top * 0.35) + top / 2
        X = np.clip(np.round(X), 0, top)
        X[0], X[1] = 0, top
    elif kind == "flat-dim":
        X = blobs(rng, n, dim, int(rng.integers(2, 5)), 1.0)
        X[:, int(rng.integers(0, dim))] = 3.25  # r == l in that dimension
    else:
        raise ValueError(kind)
    return X.astype(np.float32)


# ---------------------------------------------------------------- the reference (steps 1-4)

def reference(X32, m):
    """Grid, links, components, component distances of ALGORITHMS.md section 3 steps 1-4."""
    X = X32.astype(np.float64)
    n, dim = X.shape
    lo, hi = X.min(axis=0), X.max(axis=0)
    coord = np.zeros((n, dim), dtype=np.int64)
    for j in range(dim):
        if hi[j] > lo[j]:
            c = np.floor((X[:, j] - lo[j]) / (hi[j] - lo[j]) * m).astype(np.int64)
            coord[:, j] = np.minimum(c, m - 1)
    weights = np.array([m ** (dim - 1 - j) for j in range(dim)], dtype=np.int64)  # last fastest
    lin = coord @ weights
    cells, point_cell, dens = np.unique(lin, return_inverse=True, return_counts=True)
    point_cell = point_cell.reshape(-1)
    nc = len(cells)
    ccoord = (cells[:, None] // weights[None, :]) % m

    # neighbours over the closed 3^d neighbourhood: for each offset, the neighbour's position in
    # `cells` or -1 when outside the grid or empty
    offsets = np.array(np.meshgrid(*[[-1, 0, 1]] * dim, indexing="ij")).reshape(dim, -1).T
    nbr = np.full((len(offsets), nc), -1, dtype=np.int64)
    for o, off in enumerate(offsets):
        q = ccoord + off[None, :]
        inside = np.all((q >= 0) & (q < m), axis=1)
        ql = q @ weights
        pos = np.searchsorted(cells, ql)
        pos = np.minimum(pos, nc - 1)
        found = inside & (cells[pos] == ql)
        nbr[o, found] = pos[found]

    # step 2: link to the largest (density, linear index); keys compare lexicographically
    key = dens.astype(np.int64) * (np.int64(m) ** dim) + cells
    best = np.arange(nc)
    for o in range(len(offsets)):
        cand = nbr[o]
        ok = cand >= 0
        better = np.zeros(nc, dtype=bool)
        better[ok] = key[cand[ok]] > key[best[ok]]
        best[better] = cand[better]
    # step 3: follow the links (pointer jumping); chains strictly increase, so this ends
    root = best.copy()
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    reps = np.flatnonzero(root == np.arange(nc))  # positions in `cells`, increasing linear index
    comp_of_rep = np.full(nc, -1, dtype=np.int64)
    comp_of_rep[reps] = np.arange(len(reps))
    comp = comp_of_rep[root]
    ng = len(reps)
    comp_points = np.bincount(comp, weights=dens, minlength=ng).astype(np.int64)

    # step 4: max over touching cell pairs of min(D(a), D(b)) per adjacent component pair
    pa, pb, pv = [], [], []
    for o in range(len(offsets)):
        cand = nbr[o]
        ok = cand >= 0
        a = np.flatnonzero(ok)
        b = cand[ok]
        diff = comp[a] != comp[b]
        a, b = a[diff], b[diff]
        ga, gb = comp[a], comp[b]
        pa.append(np.minimum(ga, gb))
        pb.append(np.maximum(ga, gb))
        pv.append(np.minimum(dens[a], dens[b]))
    pa, pb, pv = np.concatenate(pa), np.concatenate(pb), np.concatenate(pv)
    edges = {}
    if len(pa):
        code = pa * ng + pb
        order = np.lexsort((pv, code))
        code, pv = code[order], pv[order]
        last = np.r_[code[1:] != code[:-1], True]  # largest value of each pair comes last
        for c, v in zip(code[last], pv[last]):
            i, j = divmod(int(c), ng)
            repd = min(dens[reps[i]], dens[reps[j]])
            edges[(i, j)] = 1.0 - float(v) / float(repd)
    return {
        "cells": cells, "dens": dens, "point_cell": point_cell, "comp": comp,
        "rep_cells": cells[reps], "rep_dens": dens[reps], "comp_points": comp_points,
        "point_comp": comp[point_cell], "edges": edges, "ng": ng, "nc": nc,
    }


# ---------------------------------------------------------------- reading parclust's files

def read_csv_rows(path, ncols, header=False):
    with open(path) as f:
        lines = f.read().splitlines()
    if header:
        lines = lines[1:]
    rows = [ln.split(",") for ln in lines if ln.strip()]
    for r in rows:
        if len(r) != ncols:
            raise ValueError("%s: row %r has %d fields, expected %d" % (path, r, len(r), ncols))
    return np.array([[float(x) for x in r] for r in rows], dtype=np.float64).reshape(-1, ncols)


def read_labels(path):
    with open(path) as f:
        return np.array([int(x) for x in f.read().split()], dtype=np.int64)


def run_parclust(parclust, args):
    p = subprocess.run([parclust, "hca"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    return p.returncode, p.stdout, p.stderr


def same_partition(a, b):
    """Whether labelings a and b (same length) define the same partition."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def component_labels(point_comp, labels, ng, errors, what):
    """Per component, the one label its points share; None (error noted) if they do not."""
    lab = np.full(ng, np.iinfo(np.int64).min, dtype=np.int64)
    lab[point_comp] = labels
    bad = np.flatnonzero(lab[point_comp] != labels)
    if len(bad):
        i = bad[0]
        errors.append("%s: points of component %d have labels %d and %d (point %d)" %
                      (what, point_comp[i], lab[point_comp[i]], labels[i], i))
        return None
    return lab


# ---------------------------------------------------------------- one case

def run_case(parclust, workdir, name, dim, m, kind, n, seed):
    rng = np.random.default_rng(seed)
    X = make_data(rng, kind, n, dim)
    d = os.path.join(workdir, name)
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "data.npy")
    np.save(data, X)
    ref = reference(X, m)
    ng = ref["ng"]
    # SciPy's single linkage on the full matrix: reference h for adjacent components, 1 otherwise
    D = np.ones((ng, ng))
    np.fill_diagonal(D, 0.0)
    for (i, j), h in ref["edges"].items():
        D[i, j] = D[j, i] = h
    Zs = hierarchy.linkage(squareform(D, checks=False), method="single") if ng > 1 else np.zeros((0, 4))
    # K: where possible one whose cut is unambiguous (merge heights around it differ)
    hs = Zs[:, 2]
    ks = [k for k in range(1, min(ng, 12) + 1) if k == 1 or k == ng or hs[ng - k - 1] != hs[ng - k]]
    k = int(rng.choice(ks)) if len(ks) > 1 and rng.random() < 0.8 else int(rng.integers(1, min(ng, 12) + 1))
    info = "n %d, m %d, %d cells, %d components, K %d" % (n, m, ref["nc"], ng, k)
    errors = []

    dfile, cfile, lfile = (os.path.join(d, f) for f in ("d.csv", "c.csv", "l.csv"))
    for f in (dfile, cfile, lfile):
        if os.path.exists(f):
            os.remove(f)
    rc, out, err = run_parclust(parclust, [data, "-m", str(m), "--clusters", str(k), "--dendrogram", dfile,
                                           "--components", cfile, "--labels", lfile])
    if rc != 0:
        return info, ["parclust exit %d: %s" % (rc, err.strip())]

    # (a) components
    C = read_csv_rows(cfile, 4, header=True)
    with open(cfile) as f:
        hdr = f.readline().strip()
    if hdr != "component,cell,density,points":
        errors.append("components header %r" % hdr)
    if len(C) != ng:
        errors.append("%d components, reference %d" % (len(C), ng))
    else:
        for col, refv, what in ((0, np.arange(ng), "numbering"), (1, ref["rep_cells"], "representative cells"),
                                (2, ref["rep_dens"], "representative densities"),
                                (3, ref["comp_points"], "component points")):
            bad = np.flatnonzero(C[:, col] != refv)
            if len(bad):
                i = bad[0]
                errors.append("components %s differ at %d of %d rows, first row %d: parclust %d, reference %d"
                              % (what, len(bad), ng, i, C[i, col], refv[i]))
    summary_g = None
    for line in out.splitlines():
        if line.startswith("hca:"):
            parts = [p.strip() for p in line.split(",")]
            for p in parts:
                if p.endswith("components"):
                    summary_g = int(p.split()[0])
                if p.endswith("non-empty cells") and int(p.split()[0]) != ref["nc"]:
                    errors.append("summary says %s, reference %d" % (p, ref["nc"]))
    if summary_g != ng:
        errors.append("summary line components %r, reference %d" % (summary_g, ng))
    if errors:  # the rest compares against reference component numbers
        return info, errors

    # (b) dendrogram
    Z = read_csv_rows(dfile, 4)
    if len(Z) != ng - 1:
        return info, ["dendrogram has %d rows, expected %d" % (len(Z), ng - 1)]
    if ng >= 2:
        try:
            valid = hierarchy.is_valid_linkage(Z, throw=True)
        except Exception as e:  # noqa: BLE001 - scipy raises ValueError/TypeError
            valid = False
            errors.append("not a valid SciPy linkage: %s" % e)
        if valid:
            if np.any(np.diff(Z[:, 2]) < 0):
                i = int(np.flatnonzero(np.diff(Z[:, 2]) < 0)[0])
                errors.append("heights decrease at row %d: %r > %r" % (i + 1, Z[i, 2], Z[i + 1, 2]))
            if Z[:, 2].min() < 0 or Z[:, 2].max() > 1:
                errors.append("heights outside [0, 1]: %r .. %r" % (Z[:, 2].min(), Z[:, 2].max()))
            cs = hierarchy.cophenet(Zs)
            cp = hierarchy.cophenet(Z)
            dev = np.abs(cs - cp)
            if dev.max() > 1e-12:
                ij = np.unravel_index(np.argmax(squareform(dev)), (ng, ng))
                errors.append("cophenetic distances differ by up to %.3g (components %d, %d: parclust %.17g, "
                              "scipy %.17g)" % (dev.max(), ij[0], ij[1], squareform(cp)[ij], squareform(cs)[ij]))
            hs = np.sort(Zs[:, 2])
            if np.abs(hs - Z[:, 2]).max() > 1e-12:
                errors.append("merge heights differ from scipy's by %.3g" % np.abs(hs - Z[:, 2]).max())
    if errors:
        return info, errors

    # (c) labels
    labels = read_labels(lfile)
    if len(labels) != n:
        return info, ["%d labels for %d points" % (len(labels), n)]
    # With the default minimum cluster size, the cells of a too-small cluster join the nearest kept
    # cluster one by one (by cell centre), so such a component may be split: all points of one cell
    # share a label, and all points of a component at least as large as the minimum size (which
    # lies in a kept cluster) share one.
    component_labels(ref["point_cell"], labels, ref["nc"], errors, "default minimum size, per cell")
    min_size = max(2, int(np.ceil(0.001 * n)))
    big = ref["comp_points"][ref["point_comp"]] >= min_size
    component_labels(ref["point_comp"][big], labels[big], ng, errors, "default minimum size, component")

    for f in (lfile,):
        os.remove(f)
    rc, out, err = run_parclust(parclust, [data, "-m", str(m), "--clusters", str(k), "--min-cluster-size", "0",
                                           "--labels", lfile])
    if rc != 0:
        return info, errors + ["--min-cluster-size 0: exit %d: %s" % (rc, err.strip())]
    labels0 = read_labels(lfile)
    lab = component_labels(ref["point_comp"], labels0, ng, errors, "--min-cluster-size 0")
    if lab is not None:
        if len(set(lab.tolist())) != k:
            errors.append("--clusters %d --min-cluster-size 0: %d clusters" % (k, len(set(lab.tolist()))))
        # Cutting to K applies merges 0 .. ng-K-1 (0-based rows of Z); unambiguous unless row ng-K-1
        # and row ng-K have the same height.
        if k == 1 or k == ng or Z[ng - k - 1, 2] != Z[ng - k, 2]:
            if k == ng:
                ref_cut = np.arange(ng)
            elif k == 1:
                ref_cut = np.zeros(ng, dtype=np.int64)
            else:
                ref_cut = hierarchy.fcluster(Z, Z[ng - k - 1, 2], criterion="distance")
            if not same_partition(lab, np.asarray(ref_cut)):
                errors.append("--clusters %d: partition of the components differs from fcluster at the height "
                              "of merge %d" % (k, ng - k))
            # SciPy before 1.15 (gh-12651, fixed by gh-21121) gives one cluster too few for maxclust
            # with K >= n - 1, so maxclust is asked only below that.
            if 1 < k < ng - 1:
                fc = hierarchy.fcluster(Z, k, criterion="maxclust")
                if not same_partition(lab, np.asarray(fc)):
                    errors.append("--clusters %d: partition of the components differs from fcluster maxclust" % k)
        else:
            info += " (K cut tied at height %.6g: partition not compared)" % Z[ng - k, 2]

    # threshold cut: merges at heights <= T
    if ng > 1:
        t = float(np.round(rng.uniform(0.05, 0.95), 3))
        if np.any(Z[:, 2] == t):
            t += 1e-4
        os.remove(lfile)
        rc, out, err = run_parclust(parclust, [data, "-m", str(m), "--threshold", repr(t), "--min-cluster-size",
                                               "0", "--labels", lfile])
        if rc != 0:
            return info, errors + ["--threshold %r: exit %d: %s" % (t, rc, err.strip())]
        lt = component_labels(ref["point_comp"], read_labels(lfile), ng, errors, "--threshold %r" % t)
        if lt is not None:
            fc = hierarchy.fcluster(Z, t, criterion="distance")
            if not same_partition(lt, np.asarray(fc)):
                errors.append("--threshold %r: partition of the components differs from fcluster distance "
                              "(%d vs %d clusters)" % (t, len(set(lt.tolist())), len(set(fc.tolist()))))
    return info, errors


# name, dim, m, kind, points
CASES = [
    ("1d-tight-m12", 1, 12, "tight-blobs", 3000),
    ("1d-integers-m40", 1, 40, "integers", 2000),
    ("1d-uniform-m33", 1, 33, "uniform", 500),
    ("2d-tight-m32", 2, 32, "tight-blobs", 6000),
    ("2d-wide-m20", 2, 20, "wide-blobs", 5000),
    ("2d-uniform-m16", 2, 16, "uniform", 1500),
    ("2d-integers-m7", 2, 7, "integers", 3000),
    ("1d-int-edge-m45", 1, 45, "integers:39", 1000),
    ("2d-int-edge-m30", 2, 30, "integers:22", 3000),
    ("3d-int-edge-m39", 3, 39, "integers:39", 3000),
    ("2d-int-blobs-m40", 2, 40, "int-blobs", 4000),
    ("2d-flat-dim-m25", 2, 25, "flat-dim", 2000),
    ("3d-tight-m16", 3, 16, "tight-blobs", 6000),
    ("3d-wide-m10", 3, 10, "wide-blobs", 5000),
    ("3d-integers-m5", 3, 5, "integers", 3000),
    ("3d-uniform-m8", 3, 8, "uniform", 2000),
    ("3d-int-blobs-m13", 3, 13, "int-blobs", 4000),
    ("4d-tight-m8", 4, 8, "tight-blobs", 6000),
    ("4d-wide-m6", 4, 6, "wide-blobs", 4000),
    ("4d-integers-m4", 4, 4, "integers", 3000),
    ("4d-uniform-m5", 4, 5, "uniform", 1500),
    ("4d-flat-dim-m9", 4, 9, "flat-dim", 3000),
    ("3d-pixels-m256", 3, 256, "pixels", 4000),
    ("3d-pixels16-m1024", 3, 1024, "pixels16", 4000),
    ("4d-pixels-m256", 4, 256, "pixels", 4000),
]


def main():
    if len(sys.argv) != 3:
        print("usage: hca_scipy.py PATH_TO_parclust WORKDIR")
        return 2
    parclust, workdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    fixed = os.environ.get("PARCLUST_HCA_SEED")
    base = int(fixed) if fixed else int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
    print("hca_scipy: base seed %d (replay with PARCLUST_HCA_SEED=%d)" % (base, base))
    passed = failed = 0
    t0 = time.time()
    for i, (name, dim, m, kind, n) in enumerate(CASES):
        seed = (base + 7919 * i) & 0x7FFFFFFF
        try:
            info, errors = run_case(parclust, workdir, name, dim, m, kind, n, seed)
        except Exception as e:  # noqa: BLE001 - a crash in one case is a failure, not the end
            info, errors = "", ["exception: %r" % (e,)]
        if errors:
            failed += 1
            print("FAIL %s (seed %d) %s" % (name, seed, info))
            for e in errors:
                print("     " + e)
        else:
            passed += 1
            print("ok   %s (seed %d) %s" % (name, seed, info))
    print("hca_scipy: %.1f s" % (time.time() - t0))
    print("hca_scipy: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
