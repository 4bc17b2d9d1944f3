#!/usr/bin/env python3
"""The Python package against the C library and scikit-learn, on BENCHMARKS.md's CPU workloads.

For each workload, in one run, on the same points (pc_generate, the same seed on both sides):
  C       the library call alone, from C (bench_python_floor: the floor), median of REPS calls;
  Python  parclust's estimator fit (input checks, the call, the result's arrays), median of REPS;
  sklearn scikit-learn's estimator on the same points and parameters (k-means: the same initial
          centres and iterations; mean shift: the flat kernel, its only one), with the answer
          compared (inertia, or ARI between the two labelings).
The overhead table comes first, scikit-learn's after: its own OpenMP runtime's threads spin for a while
after each of its parallel regions, and would slow the timings that follow in the same process.
Each side makes one untimed call first (the floor too).
Usage: bench_python.py FLOOR [--reps R] [--sklearn-reps S] [--full] [--no-sklearn]
       bench_python.py FLOOR --fixed-cost   (the estimators' own Python beyond the _core call, tiny inputs)
  FLOOR: the bench_python_floor program built against the same library the package links.
Run with the package importable (PYTHONPATH=BUILD/python after ctest -R python, or installed).
"""
import argparse
import os
import platform
import statistics
import subprocess
import time

import numpy as np

import parclust
from parclust import _core

SEED = 42


def points(dataset, n, dim, clusters, spread, box):
    return _core.generate(dataset, n, dim, clusters, spread, box, SEED)[0]


def pixels(n, bands):
    x = points("blobs", n, bands, 6, 12.0, 100.0)
    return np.clip(np.rint(x.astype(np.float64) + 128.0), 0, 255).astype(np.uint8)


def floor(prog, args, reps):
    out = subprocess.run([prog] + [str(a) for a in args[:8]] + [str(reps)] + [str(a) for a in args[8:]],
                         check=True, capture_output=True, text=True).stdout
    return dict(kv.split("=") for kv in out.split())


def timed(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times), result


def fixed_cost(calls=2000):
    """The estimators' own Python (input checks, attributes) beyond parclust._core's call, by the clock on
    tiny inputs (where the library's work is a few microseconds), one thread, median of `calls`."""
    X = points("blobs", 1000, 2, 3, 1.0, 10.0)
    init = X[:3].copy()
    U = np.clip(np.rint(X.astype(np.float64) * 10 + 128), 0, 255).astype(np.uint8)
    S = X[:200].copy()
    pairs = [
        ("KMeans 1000 x 2, k 3, 1 it", lambda: parclust.KMeans(3, init=init, max_iter=1, tol=0.0, n_jobs=1).fit(X),
         lambda: _core.kmeans(X, 3, init="given", centers=init, max_iter=1, tol=0.0, threads=1)),
        ("MeanShift 200 x 2, 1 it", lambda: parclust.MeanShift(2.0, max_iter=1, n_jobs=1).fit(S),
         lambda: _core.meanshift(S, 2.0, kernel="flat", max_iter=1, threads=1)),
        ("HCA 1000 x 2 uint8, m 8", lambda: parclust.HCA(3, m=8, n_jobs=1).fit(U),
         lambda: _core.hca(U, m=8, clusters=3, threads=1)),
    ]
    print("| tiny fit (1 thread) | estimator fit (us) | parclust._core call (us) | the estimator's own cost (us) |")
    print("| --- | --- | --- | --- |")
    for name, estimator, core in pairs:
        e = timed(estimator, calls)[0] * 1e6
        c = timed(core, calls)[0] * 1e6
        print("| %s | %.1f | %.1f | %.1f |" % (name, e, c, e - c), flush=True)


def workloads(full):
    # (name, algorithm, generator args (dataset, n, dim, clusters, spread, box), algorithm args)
    w = [
        ("ms-agnolucci 10k, gaussian h 2, 10 it", "meanshift", ("agnolucci", 10_000, 3, 3, 1.0, 10.0),
         dict(kernel="gaussian", h=2.0, max_iter=10, eps=0.0)),
        ("ms-bindi 5000 x 3, gaussian h 1, 50 it", "meanshift", ("bindi", 5000, 3, 3, 1.0, 10.0),
         dict(kernel="gaussian", h=1.0, max_iter=50, eps=0.0)),
        ("km-piesiak 100k x 2, k 10, 20 it", "kmeans", ("blobs", 100_000, 2, 10, 1.0, 10.0), dict(k=10, max_iter=20)),
        ("km-piesiak 100k x 2, k 100, 20 it", "kmeans", ("blobs", 100_000, 2, 100, 1.0, 10.0), dict(k=100, max_iter=20)),
        ("km-large 1M x 3, k 100, 20 it", "kmeans", ("blobs", 1_000_000, 3, 100, 1.0, 10.0), dict(k=100, max_iter=20)),
        ("km-large 1M x 16, k 100, 20 it", "kmeans", ("blobs", 1_000_000, 16, 100, 1.0, 10.0),
         dict(k=100, max_iter=20)),
        ("hca-rgb 5 Mpix uint8, m 32", "hca", ("blobs", 5_000_000, 3, 6, 12.0, 100.0), dict(m=32, k=6)),
        ("hca-rgb 12.4 Mpix uint8, m 32", "hca", ("blobs", 12_400_000, 3, 6, 12.0, 100.0), dict(m=32, k=6)),
        ("hca-4band 4 Mpix uint8, m 32", "hca", ("blobs", 4_000_000, 4, 6, 12.0, 100.0), dict(m=32, k=6)),
        ("hca-4band 24 Mpix uint8, m 32", "hca", ("blobs", 24_000_000, 4, 6, 12.0, 100.0), dict(m=32, k=6)),
    ]
    if full:
        w.insert(5, ("km-large 10M x 3, k 100, 20 it", "kmeans", ("blobs", 10_000_000, 3, 100, 1.0, 10.0),
                     dict(k=100, max_iter=20)))
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("floor")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sklearn-reps", type=int, default=1)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--fixed-cost", action="store_true", help="only the estimators' own cost on tiny inputs")
    a = ap.parse_args()
    if a.fixed_cost:
        fixed_cost()
        return
    import sklearn
    from sklearn.metrics import adjusted_rand_score

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    print("# bench_python.py: %s, %d logical CPUs, Python %s, NumPy %s, scikit-learn %s, parclust %s; median of %d"
          % (cpu, os.cpu_count(), platform.python_version(), np.__version__, sklearn.__version__,
             parclust.info()["version"], a.reps))
    print("| workload | C library (s) | Python fit (s) | overhead | C min (s) | Python min (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    compare = []
    for name, algo, gen, p in workloads(a.full):
        if algo == "kmeans":
            X = points(*gen)
            n, k = X.shape[0], p["k"]
            init = X[[c * n // k for c in range(k)]].copy()
            c = floor(a.floor, ["kmeans", *gen, SEED, p["k"], p["max_iter"], 0.0], a.reps)
            fit = lambda: parclust.KMeans(k, init=init, max_iter=p["max_iter"], tol=0.0).fit(X)  # noqa: E731
            fit()  # warm-up, as the floor's first call
            py_t, py_min, model = timed(fit, a.reps)
            assert model.n_iter_ == int(c["iter"]), (model.n_iter_, c)
            compare.append((name, algo, X, p, init, py_t, model))
        elif algo == "meanshift":
            X = points(*gen)
            c = floor(a.floor, ["meanshift", *gen, SEED, p["kernel"], p["h"], p["max_iter"], p["eps"]], a.reps)
            fit = lambda: parclust.MeanShift(p["h"], kernel=p["kernel"], max_iter=p["max_iter"],  # noqa: E731
                                             tol=p["eps"]).fit(X)
            fit()
            py_t, py_min, model = timed(fit, a.reps)
            compare.append((name, algo, X, p, None, None, None))
        else:
            X = pixels(gen[1], gen[2])
            c = floor(a.floor, ["hca", *gen, SEED, p["m"], p["k"]], a.reps)
            fit = lambda: parclust.HCA(p["k"], m=p["m"]).fit(X)  # noqa: E731
            fit()
            py_t, py_min, model = timed(fit, a.reps)
            assert model.n_clusters_ == int(c["k"])
        c_t = float(c["median"])
        print("| %s | %.4f | %.4f | %+.1f%% | %.4f | %.4f |" % (name, c_t, py_t, 100 * (py_t / c_t - 1),
                                                              float(c["min"]), py_min), flush=True)
    if a.no_sklearn:
        return
    from sklearn.cluster import KMeans, MeanShift

    print()
    print("| workload | scikit-learn (s) | parclust (s) | speed-up | same answer |")
    print("| --- | --- | --- | --- | --- |")
    for name, algo, X, p, init, ours_t, model in compare:
        if algo == "kmeans":
            sk_t, _, ref = timed(lambda: KMeans(p["k"], init=init, n_init=1, max_iter=p["max_iter"], tol=0.0,
                                                algorithm="lloyd").fit(X), a.sklearn_reps)
            same = "inertia %.6g vs %.6g, %d vs %d it" % (model.inertia_, ref.inertia_, model.n_iter_, ref.n_iter_)
        else:
            # scikit-learn's kernel is flat; it merges modes within h of a denser one: merge_radius h
            sk_t, _, ref = timed(lambda: MeanShift(bandwidth=p["h"], max_iter=p["max_iter"], n_jobs=-1).fit(X),
                                 a.sklearn_reps)
            fit = lambda: parclust.MeanShift(p["h"], kernel="flat", max_iter=p["max_iter"],  # noqa: E731
                                             merge_radius=p["h"]).fit(X)
            fit()
            ours_t, _, flat = timed(fit, a.reps)
            name = name.replace("gaussian", "flat")
            same = "ARI %.4f, %d vs %d clusters" % (adjusted_rand_score(ref.labels_, flat.labels_),
                                                   len(flat.cluster_centers_), len(ref.cluster_centers_))
        print("| %s | %.3f | %.4f | %.1fx | %s |" % (name, sk_t, ours_t, sk_t / ours_t, same), flush=True)

if __name__ == "__main__":
    main()
