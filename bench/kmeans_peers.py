#!/usr/bin/python3
"""Times parclust's k-means beside its peers on the same data, from the same initial centres, for the
same number of Lloyd iterations (tol 0 everywhere: no early stop on a centre shift):
  - parclust kmeans (OpenMP, all cores): its own time (the "X s (openmp)" of its summary line, the
    clustering alone) and the wall time of the whole process (reading the .npy, writing outputs);
  - scikit-learn KMeans(algorithm='lloyd', init=centres, n_init=1, max_iter=N, tol=0) on float32;
  - OpenCV cv2.kmeans (python3-opencv), which has no "given centres" option: it is started from the
    labels of the nearest given centre (KMEANS_USE_INITIAL_LABELS) with criteria (MAX_ITER, N, 0) and
    attempts=1. Its first step computes the centres of those labels, which is the first update of
    Lloyd's loop from the given centres, so its N iterations match the others' up to that bookkeeping;
  - faiss.Kmeans (python3-faiss) with max_points_per_centroid large enough to use every point (no
    subsampling) and train(X, init_centroids=centres).
With --converge: every program runs to convergence instead (tol 1e-4, max_iter 300): parclust with
--algorithm hamerly (and lloyd beside it), scikit-learn's lloyd and elkan with tol=1e-4 (the same rule);
OpenCV and faiss have no such rule (OpenCV's EPS is an absolute centre shift, faiss has none), so they
run the iterations parclust's converged run took.
A peer whose module is missing is skipped with a note. Every program's result is scored the same way:
the inertia of its final centres, points assigned to the nearest one, computed in NumPy float64.
Runs shorter than 2 s are timed 3 times (median); longer ones once.

usage: /usr/bin/python3 bench/kmeans_peers.py PARCLUST [--n 1000000] [--dim 3] [--k 100] [--iterations 20]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

SUMMARY = re.compile(r"^k-means: .* (\d+) iterations, inertia ([-+0-9.eE]+), ([0-9.]+) s \((\w+)\)")


def make_data(n, dim, k, seed):
    """Gaussian blobs (k of them, unit spread, centres uniform in [-20, 20]^dim), float32, and k
    initial centres: distinct data points."""
    rng = np.random.default_rng(seed)
    blob_centres = rng.uniform(-20, 20, size=(k, dim))
    which = rng.integers(k, size=n)
    x = (blob_centres[which] + rng.normal(size=(n, dim))).astype(np.float32)
    init = x[rng.choice(n, size=k, replace=False)].copy()
    return x, init


def nearest_and_inertia(x, centres, chunk=65536):
    """Labels by nearest centre and the inertia, both in float64."""
    c = centres.astype(np.float64)
    cc = (c * c).sum(1)
    labels = np.empty(len(x), dtype=np.int64)
    total = 0.0
    for s in range(0, len(x), chunk):
        xs = x[s:s + chunk].astype(np.float64)
        d2 = cc[None, :] - 2.0 * (xs @ c.T)
        lab = d2.argmin(1)
        labels[s:s + chunk] = lab
        total += float(((xs - c[lab]) ** 2).sum())
    return labels, total


def timed(fn, repeat_if_short=2.0):
    """(seconds, result): once; if that took under repeat_if_short seconds, the median of 3."""
    t0 = time.perf_counter()
    res = fn()
    times = [time.perf_counter() - t0]
    if times[0] < repeat_if_short:
        for _ in range(2):
            t0 = time.perf_counter()
            res = fn()
            times.append(time.perf_counter() - t0)
    return float(np.median(times)), res, len(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parclust")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--dim", type=int, default=3)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip", default="", help="comma-separated peers to leave out: sklearn,opencv,faiss")
    ap.add_argument("--converge", action="store_true", help="tol 1e-4, max_iter 300 (see above)")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    n, dim, k, iters = args.n, args.dim, args.k, args.iterations
    parclust = os.path.abspath(args.parclust)
    cores = os.cpu_count()
    print("data: %d points, %d dimensions, %d Gaussian blobs (float32), %d initial centres = random data points, "
          "%d iterations, tol 0, seed %d; %d cores" % (n, dim, k, k, iters, args.seed, cores), file=sys.stderr, flush=True)

    x, init = make_data(n, dim, k, args.seed)
    rows = []  # name, seconds, runs, iterations, inertia, note
    notes = []
    with tempfile.TemporaryDirectory() as work:
        xp, cp = os.path.join(work, "x.npy"), os.path.join(work, "c.npy")
        lp, ccp = os.path.join(work, "l.npy"), os.path.join(work, "cc.npy")
        np.save(xp, x)
        np.save(cp, init)

        # parclust
        tol = 1e-4 if args.converge else 0
        cmd = [parclust, "kmeans", xp, "-k", str(k), "--init", cp, "--tol", str(tol), "--max-iter",
               str(300 if args.converge else iters), "--backend", "openmp", "--labels", lp, "--centers", ccp]
        if args.converge:
            cmd += ["--algorithm", "hamerly"]
        own = []

        def run_parclust():
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            m = SUMMARY.match(out)
            if not m:
                raise SystemExit("cannot parse parclust's output: %r" % out[:300])
            own.append(float(m.group(3)))
            return int(m.group(1)), m.group(4)

        wall, (pit, backend), runs = timed(run_parclust)
        _, inertia = nearest_and_inertia(x, np.load(ccp).reshape(k, dim))
        t_own = float(np.median(own))
        rows.append(("parclust (%s, all cores), own time" % backend, t_own, runs, pit, inertia, ""))
        rows.append(("parclust, wall time of the process", wall, runs, pit, inertia, "reads the .npy, writes labels and centres"))
        print("parclust: %.3f s own, %.3f s wall" % (t_own, wall), file=sys.stderr)
        if args.converge:
            iters = pit  # OpenCV and faiss run as many
            cmd[cmd.index("hamerly")] = "lloyd"
            own.clear()
            wall_l, (pit_l, _), runs_l = timed(run_parclust)
            _, inertia_l = nearest_and_inertia(x, np.load(ccp).reshape(k, dim))
            rows.append(("parclust --algorithm lloyd, own time", float(np.median(own)), runs_l, pit_l, inertia_l,
                         "the same labels and centres as hamerly's"))
            print("parclust lloyd: %.3f s own" % float(np.median(own)), file=sys.stderr)

        # scikit-learn
        if "sklearn" not in skip:
            try:
                import sklearn
                from sklearn.cluster import KMeans
            except ImportError as e:
                notes.append("scikit-learn skipped: %s" % e)
            else:
                for algo in (["lloyd", "elkan"] if args.converge else ["lloyd"]):
                    def run_sklearn():
                        return KMeans(n_clusters=k, init=init, n_init=1, max_iter=300 if args.converge else iters,
                                      tol=tol, algorithm=algo).fit(x)
                    t, km, runs = timed(run_sklearn)
                    _, inertia = nearest_and_inertia(x, km.cluster_centers_)
                    rows.append(("scikit-learn %s KMeans %s (float32)" % (sklearn.__version__, algo), t, runs,
                                 km.n_iter_, inertia, ""))
                    print("sklearn %s: %.3f s" % (algo, t), file=sys.stderr)

        # OpenCV
        if "opencv" not in skip:
            try:
                import cv2
            except ImportError as e:
                notes.append("OpenCV skipped: cannot import cv2 (%s; Debian: apt install python3-opencv)" % e)
            else:
                labels0, _ = nearest_and_inertia(x, init)
                labels0 = labels0.astype(np.int32).reshape(-1, 1)

                def run_cv2():
                    return cv2.kmeans(x, k, labels0.copy(), (cv2.TERM_CRITERIA_MAX_ITER, iters, 0), 1,
                                      cv2.KMEANS_USE_INITIAL_LABELS)
                t, (_, _, centres), runs = timed(run_cv2)
                _, inertia = nearest_and_inertia(x, centres)
                rows.append(("OpenCV %s cv2.kmeans (threads %d)" % (cv2.__version__, cv2.getNumThreads()), t, runs,
                             iters, inertia, "started from the labels of the given centres"))
                print("opencv: %.3f s" % t, file=sys.stderr)

        # faiss
        if "faiss" not in skip:
            try:
                import faiss
            except ImportError as e:
                notes.append("faiss skipped: cannot import faiss (%s; Debian: apt install python3-faiss)" % e)
            else:
                def run_faiss():
                    km = faiss.Kmeans(dim, k, niter=iters, max_points_per_centroid=n // k + 1, verbose=False,
                                      seed=args.seed)
                    km.train(x, init_centroids=init)
                    return km
                t, km, runs = timed(run_faiss)
                _, inertia = nearest_and_inertia(x, km.centroids)
                rows.append(("faiss %s Kmeans (CPU, OpenMP threads %d)" % (getattr(faiss, "__version__", "?"),
                                                                          faiss.omp_get_max_threads()),
                             t, runs, iters, inertia, ""))
                print("faiss: %.3f s" % t, file=sys.stderr)

    ref_inertia = rows[0][4]
    print("\n%d points, %d dimensions, k = %d, %s from the same initial centres, %d cores\n"
          % (n, dim, k, "to convergence (tol 1e-4)" if args.converge else "%d iterations, tol 0" % iters, cores))
    print("| program | time (s) | runs | iterations | inertia (NumPy float64) | vs parclust's inertia | note |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, t, runs, it, inertia, note in rows:
        print("| %s | %.3f | %s | %d | %.9g | %+.1e | %s |"
              % (name, t, "median of 3" if runs == 3 else "1", it, inertia, inertia / ref_inertia - 1, note))
    peers = [r for r in rows[2:] if not r[0].startswith("parclust")]
    if peers:
        best = min(peers, key=lambda r: r[1])
        print("\nfastest peer: %s, %.3f s: %.2fx parclust's own time (%.3f s), %.2fx its process wall time (%.3f s)"
              % (best[0], best[1], best[1] / rows[0][1], rows[0][1], best[1] / rows[1][1], rows[1][1]))
    for note in notes:
        print("note: " + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
