#!/usr/bin/python3
"""The CLI's array outputs in every format the README lists (.csv, .txt, .tsv, .npy), read back
(issue 12, item 3):
  - .npy by NumPy: labels int32 (n,), centres and modes float32 (k, d), generated points float32,
    the HCA dendrogram float64 (components - 1, 4) and the component table int64 (components, 4);
  - the dendrogram by SciPy as it is: scipy.cluster.hierarchy.is_valid_linkage, and fcluster on it
    gives the partition of the components that --clusters K gives (components from an independent
    NumPy rendering of the spec, tests/hca_scipy.py's reference);
  - text, byte for byte: labels as NumPy's savetxt(fmt='%d') writes them (the format of the writer
    this replaced), float32 values as Python's '%.9g' (every float32 round-trips), the dendrogram as
    the old "%.0f,%.0f,%.17g,%.0f" rows, commas in .csv and .txt, tabs in .tsv; and each text file
    holds the values of the .npy file of the same run.

Usage: cli_arrays_test.py PATH_TO_parclust WORKDIR
"""
import io
import os
import shutil
import subprocess
import sys

from checks import Checks

try:
    import numpy as np
    from scipy.cluster import hierarchy
except ImportError as e:  # do not skip silently
    print("cli_arrays: cannot import numpy/scipy (%s); install python3-scipy" % e)
    print("cli_arrays: 0 passed, 1 failed")
    sys.exit(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hca_scipy import component_labels, reference, same_partition  # noqa: E402

P, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
EXTS = (".csv", ".txt", ".tsv", ".npy")
TEXT = EXTS[:3]
check = Checks("cli_arrays")


def w(name):
    return os.path.join(W, name)


def run(*args):
    r = subprocess.run([P] + [str(a) for a in args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit("FAIL parclust %s: exit %d: %s" % (" ".join(map(str, args)), r.returncode, r.stderr))
    return r.stdout


def sep_of(ext):
    return "\t" if ext == ".tsv" else ","


def raw(path):
    with open(path, "rb") as f:
        return f.read()


def first_difference(got, want):
    i = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
    return "%d bytes, expected %d; from byte %d: got %r, want %r" % (len(got), len(want), i, got[i:i + 40],
                                                                      want[i:i + 40])


def check_bytes(path, want, desc):
    got = raw(path)
    check(got == want, desc, "" if got == want else first_difference(got, want))


def load_npy(path, dtype, shape, desc):
    """The .npy as NumPy reads it, with its dtype, shape and order checked."""
    a = np.load(path)
    check(a.dtype == np.dtype(dtype) and a.shape == shape and a.flags.c_contiguous,
          "%s: %s %s, C order" % (desc, np.dtype(dtype).str, shape),
          "got %s %s fortran_order %s" % (a.dtype.str, a.shape, a.flags.f_contiguous and a.ndim > 1))
    return a


def labels_text(labels):
    """NumPy's own formatting of the labels, one "%d" a line."""
    b = io.BytesIO()
    np.savetxt(b, labels, fmt="%d")
    return b.getvalue()


def f32_text(a, sep):
    """Each float32 as printf's "%.9g" prints it: Python's % formatting rounds exactly as glibc does."""
    return "".join(sep.join("%.9g" % v for v in row) + "\n" for row in a.astype(np.float64).tolist()).encode()


def label_dtype(clusters):
    """The smallest signed type that holds -1 and 0 .. clusters - 1: what .npy labels are stored in."""
    return "|i1" if clusters <= 128 else "<i2" if clusters <= 32768 else "<i4"


def check_labels(base, n, desc):
    clusters = int(np.load(w(base + ".npy")).max()) + 1  # clusters are numbered 0 .. k - 1, none empty
    lab = load_npy(w(base + ".npy"), label_dtype(clusters), (n,), "%s labels .npy (%d clusters)" % (desc, clusters))
    want = labels_text(lab)
    for ext in TEXT:
        check_bytes(w(base + ext), want, "%s labels %s: byte for byte NumPy's savetxt fmt='%%d'" % (desc, ext))
    return lab


def check_f32(base, shape, desc):
    a = load_npy(w(base + ".npy"), "<f4", shape, desc + " .npy")
    want = f32_text(a, ",")
    for ext in TEXT:
        check_bytes(w(base + ext), want.replace(b",", sep_of(ext).encode()), "%s %s: '%%.9g' of the .npy's values, byte for byte" % (desc, ext))
        back = np.loadtxt(w(base + ext), delimiter=sep_of(ext), dtype=np.float64, ndmin=2).astype(np.float32)
        check(np.array_equal(back, a), "%s %s: read back as float32, equal to the .npy" % (desc, ext))
    return a


# ---------------------------------------------------------------- HCA: labels with noise, centres,
# dendrogram, components (outputs of many 1 MiB blocks: tests/test_array_writers.c)

rng = np.random.default_rng(12)
n = 200000
centres = rng.uniform(-10, 10, size=(6, 2))
X = centres[rng.integers(0, 6, n)] + rng.standard_normal((n, 2)) * rng.uniform(0.3, 1.5, size=(n, 1))
X[: n // 50] = rng.uniform(-16, 16, size=(n // 50, 2))  # sparse noise: small clusters, labelled -1
X32 = X.astype(np.float32)
np.save(w("hca.npy"), X32)
M = 24
for ext in EXTS:
    run("hca", w("hca.npy"), "-m", M, "--clusters", 5, "--min-cluster-size", 700, "--noise", "--labels", w("hl" + ext),
        "--centers", w("hc" + ext), "--dendrogram", w("hd" + ext), "--components", w("hg" + ext))
lab = check_labels("hl", n, "hca --noise")
check(lab.min() == -1 and lab.max() >= 1, "hca --noise: labels from -1 up (negative labels written too)")
k = int(lab.max()) + 1
check_f32("hc", (k, 2), "hca --centers")

Z = np.load(w("hd.npy"))
ng = Z.shape[0] + 1
check(Z.dtype == np.dtype("<f8") and Z.ndim == 2 and Z.shape[1] == 4 and Z.flags.c_contiguous,
      "hca --dendrogram .npy: float64 (components - 1, 4), C order", "%s %s" % (Z.dtype, Z.shape))
check(ng >= 8, "hca: %d components (enough to cut several ways)" % ng)
check(hierarchy.is_valid_linkage(Z), "hca --dendrogram .npy: scipy.cluster.hierarchy.is_valid_linkage as loaded")
for ext in TEXT:
    t = np.loadtxt(w("hd" + ext), delimiter=sep_of(ext), dtype=np.float64, ndmin=2)
    check(t.shape == Z.shape and np.array_equal(t, Z), "hca --dendrogram %s: the .npy's values, value for value" % ext)
old = "".join("%.0f,%.0f,%.17g,%.0f\n" % tuple(r) for r in Z.tolist()).encode()
check_bytes(w("hd.csv"), old, "hca --dendrogram .csv: byte for byte the old writer's '%.0f,%.0f,%.17g,%.0f' rows")
check_bytes(w("hd.tsv"), old.replace(b",", b"\t"), "hca --dendrogram .tsv: the same with tabs")

G = load_npy(w("hg.npy"), "<i8", (ng, 4), "hca --components .npy")
ref = reference(X32, M)
check(ref["ng"] == ng and np.array_equal(G[:, 0], np.arange(ng)) and np.array_equal(G[:, 1], ref["rep_cells"]) and
      np.array_equal(G[:, 2], ref["rep_dens"]) and np.array_equal(G[:, 3], ref["comp_points"]),
      "hca --components .npy: number, representative cell, density, points of each component as the spec's")
for ext in TEXT:
    s = sep_of(ext)
    want = (s.join(["component", "cell", "density", "points"]) + "\n" +
            "".join(s.join(str(v) for v in r) + "\n" for r in G.tolist())).encode()
    check_bytes(w("hg" + ext), want, "hca --components %s: header row and the .npy's rows" % ext)

# fcluster on the .npy linkage gives --clusters K's partition of the components
compared = 0
for kk in range(2, ng - 1):
    if compared == 4:
        break
    if Z[ng - kk - 1, 2] == Z[ng - kk, 2]:
        continue  # the cut at K ties: either side is right
    run("hca", w("hca.npy"), "-m", M, "--clusters", kk, "--min-cluster-size", 0, "--labels", w("hk.npy"))
    errors = []
    cl = component_labels(ref["point_comp"], np.load(w("hk.npy")).astype(np.int64), ng, errors, "--clusters %d" % kk)
    fc = hierarchy.fcluster(Z, kk, criterion="maxclust")
    check(cl is not None and same_partition(cl, np.asarray(fc)),
          "hca --clusters %d: fcluster(Z from the .npy, %d, 'maxclust') gives the same clusters" % (kk, kk),
          "; ".join(errors))
    compared += 1
check(compared == 4, "fcluster compared at %d cuts" % compared)

# one component: an empty linkage, (0, 4), and an empty text file
np.save(w("one.npy"), np.ones((50, 3), dtype=np.float32))
for ext in EXTS:
    run("hca", w("one.npy"), "--dendrogram", w("od" + ext), "--components", w("og" + ext), "--labels", w("ol" + ext))
load_npy(w("od.npy"), "<f8", (0, 4), "hca on one component: --dendrogram")
check(raw(w("od.csv")) == b"" and raw(w("od.tsv")) == b"", "hca on one component: empty text dendrograms")
check(np.array_equal(load_npy(w("og.npy"), "<i8", (1, 4), "hca on one component: --components")[0], [0, 0, 50, 50]),
      "hca on one component: component 0, cell 0, density 50, 50 points")
check_labels("ol", 50, "hca on one component")

# the extension in any case
run("hca", w("hca.npy"), "-m", M, "--clusters", 5, "--labels", w("up.NPY"), "--dendrogram", w("upd.NPY"))
check(np.load(w("up.NPY")).dtype == np.dtype("|i1") and hierarchy.is_valid_linkage(np.load(w("upd.NPY"))),
      "hca: .NPY outputs are NumPy files too")

# ---------------------------------------------------------------- k-means, mean shift, generate

Xk = (rng.standard_normal((4000, 3)) * 3).astype(np.float32)
np.save(w("km.npy"), Xk)
for ext in EXTS:
    run("kmeans", w("km.npy"), "-k", 7, "--seed", 3, "--backend", "seq", "--labels", w("kl" + ext), "--centers", w("kc" + ext))
check_labels("kl", 4000, "kmeans")
check_f32("kc", (7, 3), "kmeans --centers")
for k in (128, 129):  # the last count int8 holds, and the first that needs int16
    for ext in EXTS:
        run("kmeans", w("km.npy"), "-k", k, "--seed", 3, "--backend", "seq", "--labels", w("k%d%s" % (k, ext)))
    check(int(np.load(w("k%d.npy" % k)).max()) == k - 1, "kmeans -k %d: every cluster has points" % k)
    check_labels("k%d" % k, 4000, "kmeans -k %d" % k)

Xm = np.concatenate([rng.standard_normal((300, 2)) * 0.3 + c for c in ((0, 0), (4, 1), (1e-3, 5))]).astype(np.float32)
np.save(w("ms.npy"), Xm)
for ext in EXTS:
    run("meanshift", w("ms.npy"), "--bandwidth", 0.7, "--labels", w("ml" + ext), "--modes", w("mm" + ext),
        "--centers", w("mc" + ext))
check_labels("ml", 900, "meanshift")
modes = check_f32("mm", (900, 2), "meanshift --modes")
check_f32("mc", (len(np.unique(np.load(w("ml.npy")))), 2), "meanshift --centers")

for ext in EXTS:
    run("generate", "blobs", "--n", 50000, "--dim", 3, "--seed", 5, "-o", w("gp" + ext), "--labels", w("gl" + ext))
check_f32("gp", (50000, 3), "generate blobs -o")
check_labels("gl", 50000, "generate --labels")

check.finish()
