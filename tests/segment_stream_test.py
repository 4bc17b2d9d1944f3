#!/usr/bin/python3
"""parclust segment --max-memory: runs that do not fit are streamed over windows of rows, in bounded
memory, with the labels of the in-memory run (issue 13, items 2 and 3).

Usage: segment_stream_test.py PATH_TO_parclust WORKDIR HAVE_GDAL(0|1) [SANITIZED(0|1)]

The image: a generated scene (parclust generate scene, 1000 x 1000 x 4 uint8, nodata 0 on a border)
tiled 4 x 4 with flips into 4000 x 4000 x 4 = 64 MB, as a GeoTIFF (strips, nodata 0) and a .npy.
Each streamed run must give the in-memory run's labels pixel for pixel (HCA, box from a first pass
or from the bands' exact statistics), and its peak resident memory (wait4's ru_maxrss of that run
alone) must stay below --max-memory plus the fixed overhead README.md states (64 MiB), far below the
in-memory run's. Failures (a file cut short, before the labels or while they are written) leave no
output. Without GDAL only the .npy cases run; under the sanitizers (SANITIZED 1) the scene is 2 x 2
tiles (2000 x 2000, still streamed) and the peak memory, which is then mostly theirs, is not checked.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from checks import Checks, raster_test_args, require

require("segment_stream", ["numpy"], "python3-numpy")
import numpy as np

P, W, HAVE_GDAL = raster_test_args("segment_stream")
if HAVE_GDAL:
    from osgeo import gdal, osr

    gdal.UseExceptions()
check = Checks("segment_stream")
MIB = 1 << 20
OVERHEAD = 64 * MIB  # README.md: what a streamed run holds beyond --max-memory
CUDA_RUNTIME = 130 * MIB  # README.md: the CUDA runtime and driver's own, on an H100 (175 MiB in 16 MiB seen)
SANITIZED = len(sys.argv) > 4 and sys.argv[4] == "1"


def peak_ok(desc, peak, cap, other=None, out=""):
    """peak <= cap + the fixed overhead (and below `other`, the in-memory run's peak, when given); a run
    whose output (`out`) names the cuda backend (auto on a machine with a GPU) also holds the CUDA
    runtime's own host memory, which README.md states beside the overhead."""
    overhead = OVERHEAD + (CUDA_RUNTIME if "(cuda backend)" in out else 0)
    desc = "%s: peak %.0f MiB <= %.0f MiB + %d MiB%s" % (desc, peak / MIB, cap / MIB, overhead // MIB,
                                                         "" if other is None else " (in memory %.0f MiB)" % (other / MIB))
    if SANITIZED:
        print("skip " + desc + " (sanitizers)")
        return True
    return check(peak <= cap + overhead and (other is None or peak < other), desc)


def w(name):
    return os.path.join(W, name)


# The peak resident memory of one run: wait4's ru_maxrss of a child forked by a small Python (a child
# forked by this one, which holds the scene, would inherit its high-water mark across the exec).
PEAK = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write("\\npeak-rss %d\\n" % (usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(*args):
    """(exit code, stdout, stderr, peak resident bytes of this run, seconds)."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", PEAK, P] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=300)
    m = re.search(r"\npeak-rss (\d+)\n$", r.stderr)
    err = r.stderr[: m.start()] if m else r.stderr
    return r.returncode, r.stdout, err, int(m.group(1)) if m else 0, time.monotonic() - t0


def leftovers(outputs):
    return [o for o in outputs if os.path.exists(o)] + [f for f in os.listdir(W) if f.startswith(".pc-")]


def labels_of(path):
    """Labels with nodata as -1 (.npy as written, with its type; GeoTIFF: its nodata value mapped)."""
    if path.endswith(".npy"):
        lab = np.load(path)
        return lab.astype(np.int32), (lab.dtype.str,)
    ds = gdal.Open(path)  # kept alive: a band outliving its dataset crashes the bindings
    band = ds.GetRasterBand(1)
    lab = band.ReadAsArray().astype(np.int32)
    lab[lab == band.GetNoDataValue()] = -1
    return lab, (gdal.GetDataTypeName(band.DataType), band.GetNoDataValue(), ds.GetGeoTransform(),
                 ds.GetProjection())


def same_labels(desc, path, ref, info_ref=None):
    if not os.path.exists(path):
        return check(False, desc, "no output %s" % path)
    lab, info = labels_of(path)
    ok = lab.shape == ref.shape and np.array_equal(lab, ref) and (info_ref is None or info == info_ref)
    return check(ok, desc, "%d pixels differ; %s vs %s" % (int((lab != ref).sum()) if lab.shape == ref.shape else -1,
                                                           info and info[:3], info_ref and info_ref[:3]))


# ------------------------------------------------------------------ the scene
rc, out, err, _, _ = run("generate", "scene", "--width", 1000, "--height", 1000, "--bands", 4, "--seed", 7,
                         "-o", w("tile.npy"))
if not check(rc == 0, "generate scene 1000 x 1000 x 4", err):
    check.finish()
tile = np.load(w("tile.npy"))
T = 2 if SANITIZED else 4  # tiles a side (the sanitizers' run, 4x slower, on a quarter of the scene)
rows = [np.concatenate([tile[:: 1 - 2 * ((i + j) % 2), :: 1 - 2 * (i % 2)] for j in range(T)], axis=1)
        for i in range(T)]
scene = np.ascontiguousarray(np.concatenate(rows, axis=0))  # 4000 x 4000 x 4, nodata 0 on each tile's border
S = scene.shape[0]
np.save(w("scene.npy"), scene)
del rows, tile
nodata = (scene == 0).any(axis=2)
check(scene.shape == (S, S, 4) and 0 < nodata.sum() < nodata.size, "the scene: %d MB with nodata pixels" % (S * S * 4 >> 20),
      "%s, %d nodata" % (scene.shape, nodata.sum()))
GT = (500000.0, 10.0, 0.0, 4000000.0, 0.0, -10.0)
if HAVE_GDAL:
    ds = gdal.GetDriverByName("GTiff").Create(w("scene.tif"), S, S, 4, gdal.GDT_Byte, ["INTERLEAVE=PIXEL"])
    ds.SetGeoTransform(GT)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    ds.SetProjection(srs.ExportToWkt())
    for b in range(4):
        ds.GetRasterBand(b + 1).WriteArray(scene[:, :, b])
        ds.GetRasterBand(b + 1).SetNoDataValue(0)
    ds = None
del scene

# ------------------------------------------------------------------ the reference: in memory
src = w("scene.tif") if HAVE_GDAL else w("scene.npy")
ref_out = w("ref.tif") if HAVE_GDAL else w("ref.npy")
rc, out, err, ref_peak, ref_t = run("segment", src, "--nodata", 0, "-k", 6, "-o", ref_out, "--preview", w("ref.png"),
                                    "--preview-size", 400)
check(rc == 0 and "streaming" not in out, "in memory (the default limit, half of the physical memory): no streaming",
      out + err)
ref, ref_info = labels_of(ref_out)
check(np.array_equal(ref < 0, nodata) and ref.max() == 5, "the reference: 6 clusters, -1 exactly at the nodata pixels",
      "%d mismatches" % int(((ref < 0) != nodata).sum()))
print("in memory: %.2f s, peak %.0f MiB" % (ref_t, ref_peak / MIB))

# ------------------------------------------------------------------ HCA streamed in 8 MiB, the box from a first pass
if HAVE_GDAL:
    rc, out, err, peak, t = run("segment", src, "-k", 6, "-o", w("scan.tif"), "--preview", w("scan.png"),
                                "--preview-size", 400, "--max-memory", "8M", "--box", "scan")
    check(rc == 0 and re.search(r"streaming: the run would hold [\d.]+ MiB .*more than --max-memory 8 MiB: HCA in 3 "
                                r"passes over \d+-row windows, the box from a first pass", out) is not None,
          "--max-memory 8M: streamed, saying why and how (3 passes)", out + err)
    check(re.search(r"time pass .*\(box, \d+-row windows\)\n.*time pass .*\(histogram, \d+-row windows, last first\)"
                    r"\n.*time pass .*\(labels, \d+-row windows\)", out) is not None,
          "a time line per pass, the second read last window first", out)
    same_labels("--box scan: the in-memory run's labels, type, nodata value, geotransform and projection",
                w("scan.tif"), ref, ref_info)
    check(os.path.exists(w("scan.png")) and open(w("scan.png"), "rb").read() == open(w("ref.png"), "rb").read(),
          "--preview: the same picture as the in-memory run's, byte for byte")
    peak_ok("HCA in 8 MiB", peak, 8 * MIB, ref_peak, out)
    print("streamed in 8 MiB: %.2f s, peak %.0f MiB" % (t, peak / MIB))

    # the box from the bands' exact statistics: 2 passes, the same labels (nodata is all bands at once here)
    shutil.copy(w("scene.tif"), w("stats.tif"))
    ds = gdal.Open(w("stats.tif"), gdal.GA_Update)
    for b in range(4):
        ds.GetRasterBand(b + 1).ComputeStatistics(False)
    ds = None
    rc, out, err, peak, t = run("segment", w("stats.tif"), "-k", 6, "-o", w("stats_l.tif"), "--max-memory", "24M")
    check(rc == 0 and re.search(r"HCA in 2 passes .*the box from the bands' statistics", out) is not None,
          "exact statistics (--box auto): 2 passes, the box from them", out + err)
    same_labels("--box stats: the in-memory run's labels", w("stats_l.tif"), ref, ref_info)
    peak_ok("HCA in 24 MiB", peak, 24 * MIB, out=out)

    shutil.copy(w("scene.tif"), w("approx.tif"))
    ds = gdal.Open(w("approx.tif"), gdal.GA_Update)
    for b in range(4):
        ds.GetRasterBand(b + 1).SetMetadata({"STATISTICS_MINIMUM": "1", "STATISTICS_MAXIMUM": "200",
                                             "STATISTICS_MEAN": "50", "STATISTICS_STDDEV": "10",
                                             "STATISTICS_APPROXIMATE": "YES"})
    ds = None
    rc, out, err, _, _ = run("segment", w("approx.tif"), "-k", 6, "-o", w("approx_l.tif"), "--max-memory", "24M",
                             "--box", "stats")
    check(rc == 1 and re.search(r"--box stats: .*approx\.tif: band 1 has approximate statistics only", err) is not None
          and not leftovers([w("approx_l.tif")]), "approximate statistics: not taken for the box", err)
    rc, out, err, _, _ = run("segment", src, "-k", 6, "-o", w("nostats.tif"), "--max-memory", "24M", "--box", "stats")
    check(rc == 1 and re.search(r"--box stats: .*scene\.tif: band 1 has no statistics", err) is not None and
          not leftovers([w("nostats.tif")]), "--box stats without statistics: refused before any pass", err)

    # Other layouts: tiles, big-endian (GDAL reads them), strips of 48 rows (read straight from the
    # file, windows across strips)
    gdal.Translate(w("tiled.tif"), w("scene.tif"), creationOptions=["TILED=YES", "ENDIANNESS=BIG"])
    gdal.Translate(w("strips48.tif"), w("scene.tif"), creationOptions=["BLOCKYSIZE=48"])
    for name, cap in (("tiled", "24M"), ("strips48", "16M")):
        rc, out, err, _, _ = run("segment", w(name + ".tif"), "-k", 6, "-o", w(name + "_l.tif"), "--max-memory", cap,
                                 "--box", "scan")
        check(rc == 0 and "streaming" in out, "%s.tif in %s: streamed" % (name, cap), out + err)
        same_labels("%s.tif streamed: the in-memory run's labels" % name, w(name + "_l.tif"), ref)
    # Int16 (held as uint16 + 32768) and Float32 (NaN as nodata) images: streamed as in memory
    tile = np.load(w("tile.npy"))[:500, :600]
    for name, img, gtype, nd in (("i16", tile.astype(np.int16) * 40 - 3000, gdal.GDT_Int16, -32768),
                                 ("f32", tile.astype(np.float32) / 255, gdal.GDT_Float32, None)):
        border = (tile == 0).any(axis=2)
        img[border] = nd if nd is not None else np.nan
        ds = gdal.GetDriverByName("GTiff").Create(w(name + ".tif"), 600, 500, 4, gtype)
        for b in range(4):
            ds.GetRasterBand(b + 1).WriteArray(img[:, :, b])
            if nd is not None:
                ds.GetRasterBand(b + 1).SetNoDataValue(nd)
        ds = None
        rc, out, err, _, _ = run("segment", w(name + ".tif"), "-k", 5, "-o", w(name + "_m.tif"))
        rc2, out2, err2, _, _ = run("segment", w(name + ".tif"), "-k", 5, "-o", w(name + "_s.tif"), "--max-memory",
                                    "32M")
        check(rc == 0 and rc2 == 0 and "streaming" in out2 and "streaming" not in out,
              "%s GeoTIFF: in memory, and streamed in 32 MiB" % name, err + err2)
        if rc == 0 and rc2 == 0:
            m = labels_of(w(name + "_m.tif"))[0]
            same_labels("%s GeoTIFF streamed: the in-memory run's labels, -1 at nodata" % name, w(name + "_s.tif"), m)
            check(np.array_equal(m < 0, border), "%s GeoTIFF: nodata where the border is" % name)
        check(re.search(r"cluster 0: .*mean \(([-\d.e]+), ", out2) is not None and
              re.search(r"cluster 0: .*mean \(([-\d.e]+), ", out2).group(1) ==
              re.search(r"cluster 0: .*mean \(([-\d.e]+), ", out).group(1),
              "%s GeoTIFF: the same means, in the file's units" % name, out + out2)

    # the type's range: 2 passes, other cells, the same nodata
    rc, out, err, _, _ = run("segment", src, "-k", 6, "-o", w("type.tif"), "--max-memory", "24M", "--box", "type")
    check(rc == 0 and re.search(r"HCA in 2 passes .*the type's range 0-255", out) is not None,
          "--box type: 2 passes, the box 0-255", out + err)
    if os.path.exists(w("type.tif")):
        lab, _ = labels_of(w("type.tif"))
        check(np.array_equal(lab < 0, nodata) and lab.max() <= 5, "--box type: labels on every valid pixel, k <= 6")

# ------------------------------------------------------------------ .npy windows (mapped), bands chosen
rc, out, err, peak, t = run("segment", w("scene.npy"), "--nodata", 0, "-k", 6, "-o", w("npy_l.npy"), "--max-memory",
                            "16M")
check(rc == 0 and "HCA in 3 passes" in out, ".npy in 16 MiB: streamed", out + err)
same_labels(".npy streamed: the in-memory run's labels (-1 at nodata)", w("npy_l.npy"), ref)
check(np.load(w("npy_l.npy")).dtype == np.int8, ".npy streamed, 6 clusters: int8, as in memory")
peak_ok(".npy HCA in 16 MiB", peak, 16 * MIB, ref_peak, out)
rc, out, err, _, _ = run("segment", w("scene.npy"), "--nodata", 0, "--bands", "3,1", "-k", 4, "-o", w("b31.npy"))
rc2, out2, err2, _, _ = run("segment", w("scene.npy"), "--nodata", 0, "--bands", "3,1", "-k", 4, "-o",
                            w("b31_s.npy"), "--max-memory", "8M")
check(rc == 0 and rc2 == 0 and "streaming" in out2 and "streaming" not in out, "--bands 3,1: in memory and in 8 MiB",
      err + err2)
if rc == 0 and rc2 == 0:
    same_labels("--bands 3,1 streamed: the in-memory run's labels and type", w("b31_s.npy"), *labels_of(w("b31.npy")))

# ------------------------------------------------------------------ k-means: one pass per iteration
# On the scene's top-left quarter (2000 x 2000; in memory it would hold 190 MiB). From the same initial
# centres (--init FILE, in the image's units) the in-memory run's labels.
quarter = np.ascontiguousarray(np.load(w("scene.npy"))[: S // 2, : S // 2])
np.save(w("km.npy"), quarter)
km_src = w("km.npy")
if HAVE_GDAL:
    km_src = w("km.tif")
    ds = gdal.GetDriverByName("GTiff").Create(km_src, S // 2, S // 2, 4, gdal.GDT_Byte, ["INTERLEAVE=PIXEL"])
    for b in range(4):
        ds.GetRasterBand(b + 1).WriteArray(quarter[:, :, b])
        ds.GetRasterBand(b + 1).SetNoDataValue(0)
    ds = None
with open(w("init.csv"), "w") as f:
    f.write("30,50,45,150\n35,30,20,10\n25,50,35,248\n15,30,20,176\n50,70,100,135\n70,75,85,105\n")
rc, out, err, km_peak, km_t = run("segment", w("km.npy"), "--nodata", 0, "--algorithm", "kmeans", "-k", 6,
                                  "--init", w("init.csv"), "-o", w("km_ref.npy"))
check(rc == 0 and "streaming" not in out, "k-means --init FILE in memory", out + err)
km_ref = labels_of(w("km_ref.npy"))[0] if rc == 0 else None
o = w("km_s.tif" if HAVE_GDAL else "km_s.npy")
rc, out, err, peak, t = run("segment", km_src, "--nodata", 0, "--algorithm", "kmeans", "-k", 6, "--init",
                            w("init.csv"), "-o", o, "--max-memory", "8M")
m = re.search(r"time passes .*\(iterations: (\d+) passes", out)
check(rc == 0 and re.search(r"streaming: .*more than --max-memory 8 MiB: k-means in 2 passes and one per "
                            r"iteration \(at most 300\) over \d+-row windows, starting from the centres of "
                            r".*init\.csv", out) is not None and m is not None,
      "k-means (%s) in 8 MiB: streamed, a pass per iteration (%s)" % (os.path.basename(km_src), m and m.group(1)),
      out + err)
if km_ref is not None:
    same_labels("k-means streamed from --init FILE: the in-memory run's labels", o, km_ref)
peak_ok("k-means in 8 MiB", peak, 8 * MIB, km_peak, out)
rc, out, err, _, _ = run("segment", w("km.npy"), "--nodata", 0, "--algorithm", "kmeans", "-k", 6, "--seed", 3,
                         "-o", w("km_pp.npy"), "--max-memory", "16M")
check(rc == 0 and re.search(r"starting from k-means\+\+ on a sample of \d+ valid pixels", out) is not None,
      "k-means++ streamed: its sample said", out + err)
if rc == 0:
    lab = labels_of(w("km_pp.npy"))[0]
    check(np.array_equal(lab < 0, (quarter == 0).any(axis=2)) and set(np.unique(lab[lab >= 0])) == set(range(6)),
          "k-means++ streamed: 6 clusters, -1 exactly at the nodata pixels")
rc, out, err, _, _ = run("segment", w("scene.npy"), "--nodata", 0, "--algorithm", "kmeans", "-k", 6, "--init",
                         w("nope.csv"), "-o", w("x.npy"), "--max-memory", "8M")
check(rc == 2 and "--init '%s' is neither an initialisation" % w("nope.csv") in err, "--init of no file: usage", err)
with open(w("init5.csv"), "w") as f:
    f.write("1,2,3,4\n5,6,7,8\n")
rc, out, err, _, _ = run("segment", w("scene.npy"), "--nodata", 0, "--algorithm", "kmeans", "-k", 6, "--init",
                         w("init5.csv"), "-o", w("x.npy"), "--max-memory", "8M")
check(rc == 1 and re.search(r"--init .*init5\.csv: 2 centres of 4 values, expected 6 of 4", err) is not None and
      not leftovers([w("x.npy")]), "--init of the wrong shape: refused, nothing written", err)

# ------------------------------------------------------------------ mean shift by strips
# A 600 x 500 part of the scene: uint8 with nodata 0, and float32 with NaN (its range bandwidth from a
# pass over the bands' ranges, 3 passes), in 8 MiB: the in-memory labels and picture.
part = np.load(w("scene.npy"))[:500, :600]
np.save(w("ms8.npy"), np.ascontiguousarray(part))
f = part.astype(np.float32) / 255
f[(part == 0).any(axis=2)] = np.nan
np.save(w("msf.npy"), f)
for name, extra in (("ms8", ["--nodata", 0]), ("msf", [])):
    rc, out, err, _, _ = run("segment", w(name + ".npy"), "--algorithm", "meanshift", "-o", w(name + "_m.npy"),
                             "--preview", w(name + "_m.png"), *extra)
    rc2, out2, err2, peak, _ = run("segment", w(name + ".npy"), "--algorithm", "meanshift", "-o", w(name + "_s.npy"),
                                   "--preview", w(name + "_s.png"), "--max-memory", "8M", *extra)
    check(rc == 0 and rc2 == 0 and "streaming" not in out and
          re.search(r"streaming: .*more than --max-memory 8 MiB: mean shift in %s pass(es)? over strips of \d+ rows" %
                    ("1" if name == "ms8" else "3"), out2) is not None,
          "mean shift %s: in memory, and by strips in 8 MiB" % name, out2 + err + err2)
    if rc == 0 and rc2 == 0:
        same_labels("mean shift %s by strips: the in-memory run's labels" % name, w(name + "_s.npy"),
                    labels_of(w(name + "_m.npy"))[0])
        check(open(w(name + "_m.png"), "rb").read() == open(w(name + "_s.png"), "rb").read(),
              "mean shift %s by strips: the in-memory run's picture" % name)
        peak_ok("mean shift %s by strips" % name, peak, 8 * MIB, out=out2)

# ------------------------------------------------------------------ refusals and failures leave nothing
rc, out, err, _, t = run("segment", src, "-k", 6, "-o", w("x.tif" if HAVE_GDAL else "x.npy"), "--max-memory", "12X")
check(rc == 2 and "--max-memory: expected a size such as 512M" in err, "--max-memory 12X: a usage error", err)
rc, out, err, _, t = run("segment", w("scene.npy"), "--nodata", 0, "-k", 6, "-o", w("x.npy"), "--max-memory", "1M")
check(rc == 1 and re.search(r"--max-memory is too small to stream this image: 1\.0 MiB allowed, at least", err) and
      not leftovers([w("x.npy")]), "--max-memory 1M: too small, said, nothing written", err)
rc, out, err, _, t = run("segment", w("scene.npy"), "--nodata", 0, "-k", 6, "-o", w("x.npy"), "--max-memory", "8M",
                         "--truth", ref_out)
check(rc == 1 and "--truth: scoring needs every valid pixel's label" in err and not leftovers([w("x.npy")]),
      "--truth in a streamed run: refused at once", err)

if HAVE_GDAL:
    # A file cut short: the first pass fails, nothing is written.
    shutil.copy(w("scene.tif"), w("cut.tif"))
    os.truncate(w("cut.tif"), os.path.getsize(w("cut.tif")) * 6 // 10)
    rc, out, err, _, _ = run("segment", w("cut.tif"), "-k", 6, "-o", w("cut_l.tif"), "--max-memory", "8M")
    check(rc == 1 and re.search(r"cut\.tif: read error in rows \d+-\d+", err) is not None and
          not leftovers([w("cut_l.tif")]), "a file cut short: the read error named, no output", err)
    # Cut short while the labels are written (after the histogram pass, which prints the valid pixels).
    shutil.copy(w("scene.tif"), w("cut2.tif"))
    p = subprocess.Popen([P, "segment", w("cut2.tif"), "-k", "6", "-o", w("cut2_l.tif"), "--preview", w("cut2.png"),
                          "--preview-size", "100", "--max-memory", "24M"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = ""
    for line in p.stdout:
        seen += line
        if line.startswith("segment:"):
            os.truncate(w("cut2.tif"), os.path.getsize(w("cut2.tif")) // 2)
            break
    rest, err = p.communicate(timeout=120)
    check(p.returncode == 1 and re.search(r"cut2\.tif: read error in rows", err) is not None and
          not leftovers([w("cut2_l.tif"), w("cut2.png")]),
          "a file cut short during the label pass: no labels, no preview, no staging file left", seen + rest + err)

check.finish()
