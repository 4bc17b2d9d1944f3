"""Points in their own type (issue 12): the same integer-valued points saved as float32, float64,
uint8, uint16, int16, int32 .npy and as CSV give identical labels from hca, kmeans and meanshift;
the run names the type and says whether the file was mapped; a .npy whose header lies about its
size, dtype or order is refused with one line before any work.

usage: /usr/bin/python3 cli_dtypes_test.py PATH_TO_parclust WORKDIR
"""
import os
import shutil
import subprocess
import sys

import numpy as np

P, W = sys.argv[1], sys.argv[2]
shutil.rmtree(W, ignore_errors=True)
os.makedirs(W)
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    failures += 0 if ok else 1


def run(*args):
    return subprocess.run([P, *args], capture_output=True, text=True)


# Four blobs of pixel-like integer values in 0..255, 3 bands.
rng = np.random.default_rng(5)
centres = np.array([[30, 40, 50], [200, 60, 90], [90, 210, 120], [160, 150, 230]])
pts = np.clip(np.repeat(centres, 250, axis=0) + rng.normal(0, 8, (1000, 3)).round(), 0, 255)
files = {}
for dtype in ["float32", "float64", "uint8", "uint16", "int16", "int32"]:
    files[dtype] = os.path.join(W, f"p_{dtype}.npy")
    np.save(files[dtype], pts.astype(dtype))
files["csv"] = os.path.join(W, "p.csv")
np.savetxt(files["csv"], pts, fmt="%d", delimiter=",")

commands = {
    "hca": ["-m", "16", "--clusters", "4"],
    "kmeans": ["-k", "4", "--seed", "3"],
    "meanshift": ["--bandwidth", "30", "--kernel", "flat"],
}
seen_as = {"float32": "float32, mapped", "float64": "float64, mapped", "uint8": "uint8, mapped",
           "uint16": "uint16, mapped", "int16": "float32, converted", "int32": "float64, converted"}
for cmd, opts in commands.items():
    reference = None
    for kind, path in files.items():
        out = os.path.join(W, f"{cmd}_{kind}.npy")
        r = run(cmd, path, *opts, "--labels", out)
        if r.returncode != 0:
            check(False, f"{cmd} on {kind}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        labels = np.load(out)
        if reference is None:
            reference = labels
        check(np.array_equal(labels, reference), f"{cmd} on {kind}: the same labels as on {list(files)[0]}")
        if kind in seen_as:
            check(f"({seen_as[kind]}" in r.stdout, f"{cmd} on {kind}: the run says '{seen_as[kind]}'")
    check(reference is not None and len(np.unique(reference)) == 4, f"{cmd}: four clusters")

# Lying headers: refused in one line, before any work (no output file, no summary line).
good = open(files["float64"], "rb").read()
hlen = int.from_bytes(good[8:10], "little")
header = good[10:10 + hlen].decode("latin1")


def with_header(text):
    text = text.ljust(hlen - 1) + "\n"
    return good[:8] + len(text).to_bytes(2, "little") + text.encode("latin1") + good[10 + hlen:]


lies = {
    "dtype": (header.replace("'<f8'", "'<f4'"), "header does not match"),
    "size": (header.replace("(1000, 3)", "(1001, 3)"), "truncated"),
    "shape": (header.replace("(1000, 3)", "(999, 3)"), "header does not match"),
    "order": (header.replace("False", "True"), "Fortran"),
}
for name, (text, words) in lies.items():
    path = os.path.join(W, f"lie_{name}.npy")
    with open(path, "wb") as f:
        f.write(with_header(text))
    out = os.path.join(W, f"lie_{name}_labels.npy")
    r = run("hca", path, "--clusters", "4", "--labels", out)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 1 and len(lines) == 1 and words in lines[0] and r.stdout == ""
          and not os.path.exists(out), f"a header lying about its {name}: one line naming '{words}' ({lines})")

print(f"cli_dtypes: {failures} failed")
sys.exit(1 if failures else 0)
