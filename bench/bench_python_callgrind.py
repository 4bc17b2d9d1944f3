#!/usr/bin/env python3
"""The binding's cost in instructions (valgrind's callgrind), which a loaded machine cannot blur.

For each workload (smaller instances of BENCHMARKS.md's CPU ones: valgrind runs ~50x slower), one
thread, the same pc_generate points on both sides:
  C       bench_python_floor under callgrind, a profile dumped at entry to and exit from the library
          call (--dump-before/--dump-after): the instructions of the last call;
  Python  this script's child under callgrind: one untimed call of parclust._core's function, then a
          profile dumped around a second by calls to parclust._core.backend_available on either side
          (--dump-before): the instructions of the whole Python call (argument parsing, the views, the
          GIL released and taken back, the result's arrays, the interpreter).
The estimators' own Python (scikit-learn's input checks, attributes) is not in it: scikit-learn imports
SciPy, whose Boost functions fail to initialise under valgrind (80-bit long double); bench_python.py's
--fixed-cost measures that part by the clock.
Usage: bench_python_callgrind.py FLOOR   (with the package importable: PYTHONPATH=BUILD/python)
"""
import glob
import os
import subprocess
import sys
import tempfile

WORKLOADS = [
    # name, floor arguments (before reps / after reps), the same call through parclust._core
    ("km-piesiak 100k x 2, k 10, 20 it", ["kmeans", "blobs", 100_000, 2, 10, 1.0, 10.0, 42], [10, 20, 0.0],
     "X = _core.generate('blobs', 100000, 2, 10, 1.0, 10.0, 42)[0]\n"
     "init = X[[c * len(X) // 10 for c in range(10)]].copy()\n"
     "fit = lambda: _core.kmeans(X, 10, init='given', centers=init, max_iter=20, tol=0.0)\n"),
    ("ms-agnolucci 2000, gaussian h 2, 10 it", ["meanshift", "agnolucci", 2000, 3, 3, 1.0, 10.0, 42],
     ["gaussian", 2.0, 10, 0.0],
     "X = _core.generate('agnolucci', 2000, 3, 3, 1.0, 10.0, 42)[0]\n"
     "fit = lambda: _core.meanshift(X, 2.0, kernel='gaussian', max_iter=10, eps=0.0)\n"),
    ("hca-rgb 1 Mpix uint8, m 32", ["hca", "blobs", 1_000_000, 3, 6, 12.0, 100.0, 42], [32, 6],
     "x = _core.generate('blobs', 1000000, 3, 6, 12.0, 100.0, 42)[0]\n"
     "X = np.clip(np.rint(x.astype(np.float64) + 128.0), 0, 255).astype(np.uint8)\n"
     "fit = lambda: _core.hca(X, m=32, clusters=6)\n"),
]
# parclust._core alone, without the package's __init__ (which imports scikit-learn)
CORE = """import glob, importlib.util, os, sys
import numpy as np
for d in sys.path:
    found = glob.glob(os.path.join(d or '.', 'parclust', '_core*.so'))
    if found:
        break
spec = importlib.util.spec_from_file_location('parclust._core', found[0])
_core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_core)
"""


def totals(prefix):
    """Instructions of each dumped part, in dump order."""
    parts = []
    def order(path):  # PREFIX.1, PREFIX.2, ... then PREFIX itself: the part after the last dump
        suffix = path[len(prefix):].lstrip(".")
        return int(suffix) if suffix.isdigit() else 1 << 30

    for path in sorted(glob.glob(prefix + "*"), key=order):
        with open(path) as f:
            for line in f:
                if line.startswith("summary:") or line.startswith("totals:"):
                    parts.append((path, int(line.split()[1])))
                    break
    return parts


def callgrind(cmd, out, dumps, env):
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + dumps + cmd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return totals(out)


def main():
    floor = os.path.abspath(sys.argv[1])
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    print("| workload (1 thread) | C call (instructions) | the call from Python (instructions) | overhead |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, head, tail, setup) in enumerate(WORKLOADS):
            c_parts = callgrind([floor] + [str(a) for a in head] + ["1"] + [str(a) for a in tail],
                                os.path.join(tmp, "c%d.out" % i),
                                ["--dump-before=pc_" + head[0], "--dump-after=pc_" + head[0]], env)
            # parts: before the warm-up, the warm-up, between, the timed call, after: the 4th is the call
            c = c_parts[3][1]
            script = (CORE + setup +
                      "fit()\n_core.backend_available('seq')\nfit()\n_core.backend_available('seq')\n")
            py_parts = callgrind([sys.executable, "-c", script], os.path.join(tmp, "p%d.out" % i),
                                 ["--dump-before=backend_available"], env)
            py = py_parts[1][1]  # between the two marks
            print("| %s | %.4g | %.4g | %+.3f%% |" % (name, c, py, 100.0 * (py / c - 1)), flush=True)


if __name__ == "__main__":
    main()
