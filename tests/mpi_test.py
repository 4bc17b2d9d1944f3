#!/usr/bin/python3
"""parclust-mpi against the single-process parclust on the same files.

Usage: mpi_test.py MPIEXEC PARCLUST PARCLUST_MPI WORKDIR kmeans|hca|meanshift|segment|fail [SANITIZED [HAVE_GDAL]]

For P = 1..4 ranks (the file's rows not divisible by P; splits where a rank, rank 0 included, holds no
rows), each command's outputs are compared with `parclust CMD` on the same input, which runs the
in-memory algorithm (pc_kmeans, pc_hca), not the streams the ranks use:
  kmeans: labels and centres identical (same initial centres: the sample holds every point), inertia
          within 1e-6 relative; also text input (read by rank 0, scattered) and --init FILE;
  hca:    labels, dendrogram and components identical, centres within float rounding;
  meanshift: (gaussian: gathered, modes identical; flat with its radius and gaussian with one: slabs;
          blurring: the ring; --backend cuda where there are GPUs, else its one-message failure) labels
          identical, modes and centres within 1e-4 h;
  segment: the label raster's values equal `parclust segment`'s (GeoTIFF: type, nodata, georeferencing
          too, read back with GDAL), HCA and k-means, each rank its rows, a rank whose rows are all nodata;
          --preview's picture byte for byte, --truth's scores as parclust segment prints them;
  fail:   a slice no rank can cluster (a NaN in one rank's rows), a truncated file and an output
          folder that cannot be written each end the run with a non-zero exit, one error line
          (from rank 0, naming the file), and no output or staging file left behind.
"""
import os
import shutil
import subprocess
import sys

import numpy as np

MPIEXEC, P1, PM, WORK, WHAT = sys.argv[1:6]
SANITIZED = len(sys.argv) > 6 and sys.argv[6] in ("1", "ON", "TRUE", "true")
HAVE_GDAL = len(sys.argv) > 7 and sys.argv[7] == "1"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
# Under the sanitizers' build: no leak check at exit in MPI processes. Open MPI keeps its own
# allocations until exit and unloads its components first, so LeakSanitizer reports them from
# "<unknown module>", which no suppression can name (thousands of lines, minutes of symbolising).
ENV["ASAN_OPTIONS"] = (ENV.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(args, np_=None, env=None, mpi_args=()):
    cmd = ([MPIEXEC, "-q", "--oversubscribe", *mpi_args, "-np", str(np_), PM] if np_ else [P1]) + [str(a) for a in args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env or ENV)
    # Open MPI's hwloc says "[hwloc/linux] failed to find sysfs cpu topology directory" where /sys is
    # not mounted (a chroot, as fresh-debian.sh's): the machine's, not the program's output.
    err = "".join(l for l in r.stderr.splitlines(True) if not l.startswith("[hwloc/"))
    return r.returncode, r.stdout, err


def inertia(out):
    return float(out.split("inertia ")[1].split(",")[0])


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
os.chdir(WORK)
# mpirun's session directory under this test's own folder: ctest runs the mpi tests side by side, and
# one mpirun removing the shared /tmp/ompi.HOST.UID as it ends while another is creating its job's
# folder in it ends the second with "ORTE_ERROR_LOG ... session_dir.c" (seen once in CI).
os.makedirs("t")
ENV["TMPDIR"] = os.path.abspath("t")
rng = np.random.default_rng(14)
N = 2003  # divisible by none of 2, 3, 4
centres = rng.uniform(-10, 10, (5, 3))
x = (centres[rng.integers(0, 5, N)] + rng.normal(0, 1.2, (N, 3))).astype(np.float32)
np.save("x.npy", x)
SPLITS = [(1, None), (2, None), (3, None), (4, None), (3, "1000,0,1003"), (4, "0,700,0,1303")]
if SANITIZED:  # every launch is several times slower there: the uneven splits and the extremes only
    SPLITS = [(1, None), (3, "1000,0,1003"), (4, "0,700,0,1303")]


def tag(p, split):
    return f"P={p}" + (f" --split {split}" if split else "")


def split_args(split):
    return ["--split", split] if split else []


if WHAT == "kmeans":
    rc, out1, err = run(["kmeans", "x.npy", "-k", 5, "--labels", "l1.npy", "--centers", "c1.csv"])
    check(rc == 0, f"parclust kmeans: {err.strip()}")
    ref = np.load("l1.npy")
    for p, split in SPLITS:
        rc, out, err = run(["kmeans", "x.npy", "-k", 5, "--labels", "lm.npy", "--centers", "cm.csv"]
                           + split_args(split), p)
        check(rc == 0 and err == "", f"kmeans {tag(p, split)} ran: {err.strip()}")
        if rc:
            continue
        check(np.array_equal(np.load("lm.npy"), ref) and same_bytes("lm.npy", "l1.npy"),
              f"kmeans {tag(p, split)}: labels identical (.npy byte for byte)")
        check(same_bytes("cm.csv", "c1.csv"), f"kmeans {tag(p, split)}: centres identical")
        check(abs(inertia(out) - inertia(out1)) <= 1e-6 * inertia(out1),
              f"kmeans {tag(p, split)}: inertia {inertia(out)} vs {inertia(out1)}")
    # 200 clusters: labels as int16, each rank's rows packed at their offset as the one-process file.
    rc, out, err = run(["kmeans", "x.npy", "-k", 200, "--labels", "w1.npy"])
    rc2, out, err2 = run(["kmeans", "x.npy", "-k", 200, "--labels", "wm.npy", "--split", "1000,0,1003"], 3)
    check(rc == 0 and rc2 == 0 and np.load("w1.npy").dtype == np.int16 and same_bytes("w1.npy", "wm.npy"),
          f"kmeans -k 200 P=3: int16 labels identical (.npy byte for byte) {err.strip()} {err2.strip()}")
    # One GPU a rank (--backend cuda): each rank's rows held on its GPU, where a pass runs whole; the
    # same numbers as the CPU's pass, so the same labels and centres, byte for byte.
    rc, info, _ = run(["info"])
    if "CUDA devices: 0" not in info and "CUDA" in info:
        for p, split in SPLITS:
            rc, out, err = run(["kmeans", "x.npy", "-k", 5, "--labels", "lg.npy", "--centers", "cg.csv", "--backend",
                                "cuda"] + split_args(split), p)
            check(rc == 0 and err == "" and same_bytes("lg.npy", "l1.npy") and same_bytes("cg.csv", "c1.csv"),
                  f"kmeans --backend cuda {tag(p, split)}: labels and centres identical {err.strip()}")
        rc, out, err = run(["kmeans", "x.npy", "-k", 200, "--labels", "wg.npy", "--split", "1000,0,1003", "--backend",
                            "cuda"], 3)
        check(rc == 0 and same_bytes("w1.npy", "wg.npy"), f"kmeans -k 200 --backend cuda P=3: labels identical {err.strip()}")
    # --n-init: pc_kmeans's runs from its seeds, the lowest inertia kept (random starts: runs differ).
    for seed in (1, 2):
        opts = ["-k", 5, "--init", "random", "--n-init", 4, "--seed", seed]
        rc, out1, err = run(["kmeans", "x.npy", "--labels", "n1.npy"] + opts)
        rc2, out, err2 = run(["kmeans", "x.npy", "--labels", "nm.npy"] + opts, 3)
        check(rc == 0 and rc2 == 0 and same_bytes("n1.npy", "nm.npy")
              and abs(inertia(out) - inertia(out1)) <= 1e-6 * inertia(out1),
              f"kmeans --n-init 4 --init random --seed {seed}, P=3: labels identical, inertia {err.strip()} {err2.strip()}")
    # k-means|| across the ranks (Spark's, --kpar-*): its draws follow the points' indices, so every P
    # gives the same centres and labels; its clustering is as good as pc_kmeans's k-means|| on the
    # sample (inertia within 2%: well separated blobs).
    z = (rng.uniform(-30, 30, (12, 3))[rng.integers(0, 12, 6007)] + rng.normal(0, 1, (6007, 3))).astype(np.float32)
    np.save("z.npy", z)
    rc, out1, err = run(["kmeans", "z.npy", "-k", 12, "--init", "kmeans-par"])
    kp = ["kmeans", "z.npy", "-k", 12, "--init", "kmeans-par", "--kpar-rounds", 3, "--kpar-oversampling", 2]
    rc1, outp, err1 = run(kp + ["--labels", "kp1.npy"], 1)
    check(rc == 0 and rc1 == 0 and inertia(outp) <= 1.02 * inertia(out1),
          f"k-means|| across ranks: inertia {inertia(outp) if rc1 == 0 else None} vs pc_kmeans's {inertia(out1) if rc == 0 else None}")
    for p in (2, 3) if SANITIZED else (2, 3, 4):
        rc, out, err = run(kp + ["--labels", "kpm.npy"], p)
        check(rc == 0 and same_bytes("kp1.npy", "kpm.npy"), f"k-means|| across ranks P={p}: the labels of P=1 {err.strip()}")
    rc, out, err = run(["kmeans", "z.npy", "-k", 12, "--kpar-rounds", 3], 2)
    check(rc == 2 and len(err.strip().splitlines()) == 1, f"--kpar-rounds without --init kmeans-par: exit {rc}, {err.strip()}")
    # Text input: read by rank 0 and scattered; --init FILE: the same given centres on every rank.
    np.savetxt("x.csv", x, delimiter=",", fmt="%.9g")
    init = x[[3, 500, 1000, 1500, 2000]]
    np.savetxt("init.csv", init, delimiter=",", fmt="%.9g")
    rc, out1, err = run(["kmeans", "x.csv", "-k", 5, "--init", "init.csv", "--labels", "t1.csv"])
    rc2, out, err2 = run(["kmeans", "x.csv", "-k", 5, "--init", "init.csv", "--labels", "tm.csv"], 3)
    check(rc == 0 and rc2 == 0 and same_bytes("t1.csv", "tm.csv"),
          f"kmeans text input, --init FILE, P=3: labels identical {err.strip()} {err2.strip()}")
    # OpenMP threads a rank: OMP_NUM_THREADS as given; without it, ranks left unbound share the cores
    # this process may use, one left to MPI and CUDA from 8 a rank up.
    cores = len(os.sched_getaffinity(0))
    for p, threads in [(1, None), (2, None), (3, None), (2, 3)]:
        env = {k: v for k, v in ENV.items() if k != "OMP_NUM_THREADS"}
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        for k in ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"):
            env.pop(k, None)
        rc, out, err = run(["kmeans", "x.npy", "-k", 5, "--verbose"], p, env=env, mpi_args=("--bind-to", "none"))
        share = cores // p
        n = max(1, share - 1 if share >= 8 else share)
        want = (f"; {threads} threads a rank (OMP_NUM_THREADS)" if threads else
                f"; {n} thread{'s' if n != 1 else ''} a rank ({cores} core{'s' if cores != 1 else ''} shared by {p} rank")
        line = [l for l in out.splitlines() if "ranks (slowest)" in l]
        if line and "built without OpenMP" in line[0]:
            want = "; 1 thread a rank (built without OpenMP)"
        ok = rc == 0 and len(line) == 1 and want in line[0]
        check(ok, f"threads a rank, P={p}, OMP_NUM_THREADS {threads}, {cores} cores: '{want}' in {line} {err.strip()}")
elif WHAT == "hca":
    outs = ["--labels", "{}l.npy", "--centers", "{}c.npy", "--dendrogram", "{}d.npy", "--components", "{}k.csv"]
    rc, out, err = run(["hca", "x.npy", "-m", 16] + [o.format("s") for o in outs])
    check(rc == 0, f"parclust hca: {err.strip()}")
    for p, split in SPLITS:
        rc, out, err = run(["hca", "x.npy", "-m", 16] + [o.format("m") for o in outs] + split_args(split), p)
        check(rc == 0 and err == "", f"hca {tag(p, split)} ran: {err.strip()}")
        if rc:
            continue
        check(same_bytes("sl.npy", "ml.npy"), f"hca {tag(p, split)}: labels identical")
        check(same_bytes("sd.npy", "md.npy"), f"hca {tag(p, split)}: dendrogram identical")
        check(same_bytes("sk.csv", "mk.csv"), f"hca {tag(p, split)}: components identical")
        check(np.allclose(np.load("sc.npy"), np.load("mc.npy"), rtol=1e-6, atol=1e-6),
              f"hca {tag(p, split)}: centres equal to rounding")
    # One GPU a rank (--backend cuda): each rank's rows held on its GPU for the box, the counting and
    # the labels; the same cells, so the same bytes.
    rc, info, _ = run(["info"])
    if "CUDA devices: 0" not in info and "CUDA" in info:
        for p, split in SPLITS:
            rc, out, err = run(["hca", "x.npy", "-m", 16, "--backend", "cuda"] + [o.format("g") for o in outs]
                               + split_args(split), p)
            check(rc == 0 and err == "" and all(same_bytes(f"s{f}", f"g{f}") for f in ("l.npy", "d.npy", "k.csv")),
                  f"hca --backend cuda {tag(p, split)}: labels, dendrogram and components identical {err.strip()}")
    # uint8 rows (pixels), binned as they are.
    np.save("u.npy", rng.integers(0, 256, (3001, 3)).astype(np.uint8))
    for m in ([], ["-m", 8]):  # the default m (auto, from all the points) and a given one
        rc, out, err = run(["hca", "u.npy", "--labels", "ul1.npy", "--dendrogram", "ud1.npy"] + m)
        rc2, out, err2 = run(["hca", "u.npy", "--labels", "ulm.npy", "--dendrogram", "udm.npy"] + m, 4)
        check(rc == 0 and rc2 == 0 and same_bytes("ul1.npy", "ulm.npy") and same_bytes("ud1.npy", "udm.npy"),
              f"hca uint8 {m or 'default m'} P=4: labels and dendrogram identical {err.strip()} {err2.strip()}")
        if "CUDA devices: 0" not in info and "CUDA" in info:
            rc2, out, err2 = run(["hca", "u.npy", "--labels", "ulg.npy", "--dendrogram", "udg.npy", "--backend", "cuda"]
                                 + m, 4)
            check(rc2 == 0 and same_bytes("ul1.npy", "ulg.npy") and same_bytes("ud1.npy", "udg.npy"),
                  f"hca uint8 {m or 'default m'} --backend cuda P=4: labels and dendrogram identical {err2.strip()}")
elif WHAT == "meanshift":
    # Separated blobs: the slabs' and the ring's double-precision sums and pc_meanshift's float32 ones
    # reach the same modes to within the stopping tolerance (eps 1e-6 h here), and so the same labels;
    # the gathered way (all pairs, one rank) climbs with pc_meanshift's own code: the same modes.
    y = (np.array([[0, 0], [8, 0], [0, 8]])[rng.integers(0, 3, N)] + rng.normal(0, 0.7, (N, 2))).astype(np.float32)
    np.save("y.npy", y)
    # Gaussian: gathered; a finite radius (flat's h, gaussian's --radius) on 2 or more ranks: slabs with
    # halos, points crossing from slab to slab as they climb (the blobs straddle the cuts).
    # (--backend openmp: auto would take the GPUs' path on a host with GPUs, tested below.)
    for kernel in (["--bandwidth", 1, "--eps", 1e-6], ["--kernel", "flat", "--bandwidth", 1.5, "--eps", 1e-6],
                   ["--bandwidth", 1, "--radius", 2.5, "--eps", 1e-6]):
        kernel = kernel + ["--backend", "openmp"]
        h = float(kernel[kernel.index("--bandwidth") + 1])
        rc, out, err = run(["meanshift", "y.npy", "--labels", "l1.npy", "--modes", "m1.npy", "--centers", "c1.npy"]
                           + kernel)
        check(rc == 0, f"parclust meanshift {kernel}: {err.strip()}")
        splits = SPLITS if kernel[0] == "--bandwidth" else [(3, None)]
        finite = "--radius" in kernel or kernel[0] == "--kernel"
        for p, split in splits:
            rc, out, err = run(["meanshift", "y.npy", "--labels", "lm.npy", "--modes", "mm.npy", "--centers", "cm.npy"]
                               + kernel + split_args(split), p)
            check(rc == 0 and err == "", f"meanshift {kernel[:2]} {tag(p, split)} ran: {err.strip()}")
            if rc:
                continue
            way = "slabs" if finite and p > 1 else "gathered"
            check(f"({way}, {p} rank{'s' if p > 1 else ''})" in out, f"meanshift {kernel[:2]} {tag(p, split)}: ran as {way}: {out.strip()}")
            check(same_bytes("l1.npy", "lm.npy"), f"meanshift {kernel[:2]} {tag(p, split)}: labels identical")
            if way == "gathered":  # the core library's climbs and merge of the same points: the same modes
                check(same_bytes("m1.npy", "mm.npy") and same_bytes("c1.npy", "cm.npy"),
                      f"meanshift {kernel[:2]} {tag(p, split)}: modes and centres identical")
            dm = np.abs(np.load("m1.npy") - np.load("mm.npy")).max()
            dc = np.abs(np.load("c1.npy") - np.load("cm.npy")).max()
            check(dm <= 1e-4 * h and dc <= 1e-4 * h,
                  f"meanshift {kernel[:2]} {tag(p, split)}: modes within {dm / h:.2g} h, centres {dc / h:.2g} h")
    # Blurring: the references move, so every rank's block is its points as the last iteration left
    # them (the ring, also with a finite radius).
    for kernel in (["--bandwidth", 1, "--blurring", "--eps", 1e-6], ["--kernel", "flat", "--bandwidth", 1.5,
                                                                       "--blurring", "--eps", 1e-6]):
        kernel = kernel + ["--backend", "openmp"]
        h = float(kernel[kernel.index("--bandwidth") + 1])
        rc, out, err = run(["meanshift", "y.npy", "--labels", "l1.npy", "--modes", "m1.npy"] + kernel)
        check(rc == 0, f"parclust meanshift {kernel}: {err.strip()}")
        for p, split in [(1, None), (3, None), (4, "0,700,0,1303")]:
            rc, out, err = run(["meanshift", "y.npy", "--labels", "lm.npy", "--modes", "mm.npy"] + kernel + split_args(split),
                               p)
            check(rc == 0 and err == "" and f"(ring, {p} rank{'s' if p > 1 else ''})" in out,
                  f"meanshift {kernel[:3]} {tag(p, split)} ran as the ring: {out.strip()} {err.strip()}")
            if rc:
                continue
            dm = np.abs(np.load("m1.npy") - np.load("mm.npy")).max()
            check(same_bytes("l1.npy", "lm.npy") and dm <= 1e-4 * h,
                  f"meanshift {kernel[:3]} {tag(p, split)}: labels identical, modes within {dm / h:.2g} h")
    # One GPU a rank (--backend cuda, the local rank modulo the devices): every rank all the points,
    # its own climbing on its GPU with parclust's kernels; the same labels as parclust --backend cuda,
    # modes to rounding (the kernels split the sums by the number of climbing points). Without a GPU the
    # run ends with one message; blurring is refused on GPUs either way.
    rc, info, _ = run(["info"])
    gpus = "CUDA devices: 0" not in info
    for kernel in (["--bandwidth", 1, "--eps", 1e-6], ["--kernel", "flat", "--bandwidth", 1.5, "--eps", 1e-6]):
        kernel = kernel + ["--backend", "cuda"]
        h = float(kernel[kernel.index("--bandwidth") + 1])
        if gpus:
            rc, out, err = run(["meanshift", "y.npy", "--labels", "l1.npy", "--modes", "m1.npy", "--centers",
                                "c1.npy"] + kernel)
            check(rc == 0, f"parclust meanshift {kernel}: {err.strip()}")
        for p, split in (SPLITS if gpus else [(2, None)]):
            for f in ("lm.npy", "mm.npy", "cm.npy"):
                if os.path.exists(f):
                    os.remove(f)
            rc, out, err = run(["meanshift", "y.npy", "--labels", "lm.npy", "--modes", "mm.npy", "--centers", "cm.npy"]
                               + kernel + split_args(split), p)
            if not gpus:
                check(rc != 0 and len(err.strip().splitlines()) == 1 and "CUDA" in err
                      and not any(os.path.exists(f) for f in ("lm.npy", "mm.npy", "cm.npy")),
                      f"meanshift --backend cuda without a GPU {tag(p, split)}: one message, no output: {err.strip()}")
                continue
            check(rc == 0 and err == "" and f"(gathered, {p} rank{'s' if p > 1 else ''})" in out,
                  f"meanshift {kernel[:2]} cuda {tag(p, split)} ran on the GPUs: {out.strip()} {err.strip()}")
            if rc:
                continue
            dm = np.abs(np.load("m1.npy") - np.load("mm.npy")).max()
            dc = np.abs(np.load("c1.npy") - np.load("cm.npy")).max()
            check(same_bytes("l1.npy", "lm.npy") and dm <= 1e-4 * h and dc <= 1e-4 * h,
                  f"meanshift {kernel[:2]} cuda {tag(p, split)}: labels identical, modes within {dm / h:.2g} h, "
                  f"centres {dc / h:.2g} h")
    rc, out, err = run(["meanshift", "y.npy", "--labels", "lb.npy", "--blurring", "--backend", "cuda"], 2)
    check(rc != 0 and "blurring" in err and len(err.strip().splitlines()) == 1 and not os.path.exists("lb.npy"),
          f"meanshift --blurring --backend cuda across ranks: refused in one message: {err.strip()}")
elif WHAT == "segment":
    # A float32 .npy image whose middle third of rows is nodata (NaN): rank 1 of 3 has no valid pixel.
    img = np.zeros((60, 50, 3), np.float32)
    yy, xx = np.mgrid[0:60, 0:50]
    img[..., 0] = (xx // 17) * 10 + rng.normal(0, 0.5, (60, 50))
    img[..., 1] = (yy // 13) * 10 + rng.normal(0, 0.5, (60, 50))
    img[..., 2] = rng.normal(0, 0.5, (60, 50))
    img[20:40] = np.nan
    np.save("img.npy", img)
    # --preview (24 x 28 of the 50 x 60: subsampled) painted in the clusters' mean colours, the bands'
    # ranges over every rank's rows: parclust segment's picture, byte for byte. --truth: the fields the
    # image was made of (int16, a few pixels of noise -1), scored from every rank's pair counts: parclust
    # segment's line of scores.
    truth = ((xx // 17) * 5 + yy // 13).astype(np.int16)
    truth[rng.random((60, 50)) < 0.02] = -1
    np.save("truth.npy", truth)

    def scores(out):
        return [l for l in out.splitlines() if l.startswith("accuracy ")]

    for alg in (["--algorithm", "hca", "--clusters", 4], ["--algorithm", "kmeans", "-k", 4]):
        pv = ["--preview", "p1.png", "--preview-size", 28, "--truth", "truth.npy"]
        rc, out, err = run(["segment", "img.npy", "-o", "s1.npy"] + alg + pv)
        check(rc == 0 and len(scores(out)) == 1, f"parclust segment img.npy {alg[1]}: {err.strip()}")
        for p in (3,) if SANITIZED else (1, 3, 4):
            pv[1] = "pm.png"
            rc, outm, err = run(["segment", "img.npy", "-o", "sm.npy"] + alg + pv, p)
            check(rc == 0 and err == "" and np.array_equal(np.load("s1.npy"), np.load("sm.npy")),
                  f"segment .npy {alg[1]} P={p} (rank 1 of 3 all nodata): labels equal {err.strip()}")
            check(rc == 0 and same_bytes("p1.png", "pm.png"), f"segment .npy {alg[1]} P={p}: --preview equal")
            check(rc == 0 and scores(outm) == scores(out),
                  f"segment .npy {alg[1]} P={p}: --truth scores {scores(outm)}, parclust's {scores(out)}")
    np.save("truth_short.npy", truth[:59])
    rc, out, err = run(["segment", "img.npy", "-o", "st.npy", "-k", 4, "--algorithm", "kmeans", "--truth",
                        "truth_short.npy"], 3)
    check(rc != 0 and "truth_short.npy" in err and len(err.strip().splitlines()) == 1 and not os.path.exists("st.npy"),
          f"segment --truth of the wrong shape across ranks: one message, no output: {err.strip()}")
    if HAVE_GDAL:
        from osgeo import gdal

        gdal.UseExceptions()
        rc, out, err = run(["generate", "scene", "-o", "scene.tif", "--width", 200, "--height", 131])
        check(rc == 0, f"parclust generate scene: {err.strip()}")

        def raster(path):
            d = gdal.Open(path)
            b = d.GetRasterBand(1)
            return b.ReadAsArray(), b.DataType, b.GetNoDataValue(), d.GetGeoTransform(), d.GetProjection()

        for alg in (["--algorithm", "hca", "--clusters", 6], ["--algorithm", "kmeans", "-k", 6]):
            rc, out, err = run(["segment", "scene.tif", "-o", "t1.tif"] + alg)
            check(rc == 0, f"parclust segment scene.tif {alg[1]}: {err.strip()}")
            ref = raster("t1.tif")
            for p, split in ((2, None), (3, "0,100,31")):
                rc, out, err = run(["segment", "scene.tif", "-o", "tm.tif"] + alg + split_args(split), p)
                if rc:
                    check(False, f"segment GeoTIFF {alg[1]} {tag(p, split)}: {err.strip()}")
                    continue
                got = raster("tm.tif")
                check(np.array_equal(ref[0], got[0]) and ref[1:] == got[1:],
                      f"segment GeoTIFF {alg[1]} {tag(p, split)}: labels, type, nodata, georeferencing equal")
elif WHAT == "fail":
    def no_leftovers(folder="."):
        return [f for f in os.listdir(folder) if f.startswith(".pc-") or f.startswith("out")]

    bad = x.copy()
    bad[1800, 1] = np.nan  # in rank 2's rows of 3
    np.save("bad.npy", bad)
    with open("x.npy", "rb") as f:
        data = f.read()
    with open("cut.npy", "wb") as f:
        f.write(data[:-100])
    for cmd in (["kmeans", "-k", 5], ["hca"], ["meanshift"]):
        for name, why in (("bad.npy", "rank 2"), ("cut.npy", "truncated")):
            rc, out, err = run([cmd[0], name] + cmd[1:] + ["--labels", "out.npy", "--centers", "out_c.csv"], 3)
            lines = [l for l in err.splitlines() if l.strip()]
            check(rc != 0 and len(lines) == 1 and lines[0].startswith(f"parclust-mpi {cmd[0]}: error: {name}")
                  and why in lines[0], f"{cmd[0]} {name}: exit {rc}, one message: {lines}")
            check(no_leftovers() == [], f"{cmd[0]} {name}: no output left: {no_leftovers()}")
    # segment: an image cut short is refused by every rank's reader; one message, no output.
    np.save("img.npy", rng.normal(0, 1, (40, 30, 3)).astype(np.float32))
    with open("img.npy", "rb") as f:
        data = f.read()
    with open("imgcut.npy", "wb") as f:
        f.write(data[:-500])
    rc, out, err = run(["segment", "imgcut.npy", "-o", "out.npy", "--clusters", 3], 3)
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc != 0 and len(lines) == 1 and lines[0].startswith("parclust-mpi segment: error:") and "imgcut.npy" in lines[0],
          f"segment of a truncated image: exit {rc}, one message: {lines}")
    check(no_leftovers() == [], f"segment of a truncated image: no output left: {no_leftovers()}")
    # An output folder that disappears is refused before any work, once.
    rc, out, err = run(["kmeans", "x.npy", "-k", 5, "--labels", "nofolder/out.npy"], 2)
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc != 0 and len(lines) == 1 and "nofolder" in lines[0], f"kmeans to a missing folder: one message: {lines}")
    # A wrong command line: exit 2, one message.
    rc, out, err = run(["kmeans", "x.npy", "-k", 5, "--split", "1,2"], 3)
    lines = [l for l in err.splitlines() if l.strip()]
    check(rc != 0 and len(lines) == 1 and "--split" in lines[0], f"kmeans --split of 2 counts for 3 ranks: {lines}")
else:
    sys.exit(f"unknown test {WHAT}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
