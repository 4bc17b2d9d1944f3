#!/usr/bin/python3
"""Seed corpora for the fuzz targets (fuzz/*.c), made here from scratch (no third-party files):
real-looking points, labels, centres and rasters in every format the readers take, and command lines
of every subcommand. Usage: make_corpus.py OUT_DIR [PARCLUST]  (PARCLUST, built with GDAL, makes
GeoTIFF seeds; GDAL's Python bindings, where present, add other band types and PNG).
Writes OUT_DIR/<target>/<seed> for each target; the standard library is enough."""
import os
import random
import struct
import subprocess
import sys
import tempfile

out = sys.argv[1]
parclust = sys.argv[2] if len(sys.argv) > 2 else None
rng = random.Random(18)


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def npy(descr, shape, payload, version=1, fortran=False, pad_to=64):
    shape_text = "(%d,)" % shape[0] if len(shape) == 1 else "(" + ", ".join(str(s) for s in shape) + ")"
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, "True" if fortran else "False", shape_text)
    pre = 10 if version == 1 else 12
    total = pre + len(d) + 1
    d += " " * ((pad_to - total % pad_to) % pad_to) + "\n"
    head = b"\x93NUMPY" + bytes([version, 0])
    head += struct.pack("<H", len(d)) if version == 1 else struct.pack("<I", len(d))
    return head + d.encode("latin-1") + payload


FORMATS = {"<f4": "f", "<f8": "d", "|u1": "B", "<u2": "H", "|i1": "b", "<i2": "h", "<i4": "i", "<u4": "I",
           "<i8": "q", "<u8": "Q"}


def values(descr, n):
    c = FORMATS[descr]
    if c in "fd":
        return [rng.uniform(-50, 50) for _ in range(n)]
    lo, hi = {"B": (0, 255), "H": (0, 65535), "b": (-128, 127), "h": (-32768, 32767), "i": (-10**6, 10**6),
              "I": (0, 10**6), "q": (-10**6, 10**6), "Q": (0, 10**6)}[c]
    return [rng.randint(lo, hi) for _ in range(n)]


def npy_of(descr, shape, **kw):
    n = 1
    for s in shape:
        n *= s
    return npy(descr, shape, struct.pack("<%d%s" % (n, FORMATS[descr]), *values(descr, n)), **kw)


def blobs_text(n, d, sep=",", header=None, eol="\n"):
    lines = [] if header is None else [sep.join(header)]
    for _ in range(n):
        c = rng.randrange(3) * 5.0
        lines.append(sep.join("%.6g" % (c + rng.gauss(0, 1)) for _ in range(d)))
    return eol.join(lines) + eol


# ---- text points: first byte = extension (bits 0-1: csv tsv txt dat) | header mode << 2 (auto yes no)
texts = {
    "csv_header": (0, blobs_text(30, 2, ",", ["x", "y"])),
    "csv_plain": (0, blobs_text(25, 3)),
    "tsv": (1, blobs_text(20, 4, "\t", ["a", "b", "c", "d"])),
    "spaces": (2, blobs_text(20, 2, "   ")),
    "semicolon": (3, blobs_text(15, 2, ";", ["u", "v"])),
    "crlf": (0, blobs_text(15, 2, ",", ["x", "y"], "\r\n")),
    "cr": (0, blobs_text(15, 2, ",", None, "\r")),
    "bom_comments": (0, "\ufeff# exported\nx,y # names\n1,2\n# note\n3.5e-3,-4E+2\n\n5,6\n"),
    "quoted": (0, '"x","y"\n"1.5","2"\n"3","4"\n'),
    "inf_nan": (0, "1,inf\n2,nan\n3,-Infinity\n"),
    "mixed_row": (0, "x,1\n2,3\n"),
    "ragged": (0, "1,2\n3\n4,5,6\n"),
    "hex_underscore": (0, "0x10,1_000\n"),
    "empty": (0, ""),
    "header_only": (0, "x,y,z\n"),
    "pandas_index": (0, ",x,y\n0,1,2\n1,3,4\n"),
    "huge_values": (0, "1e39,1\n-3.5e38,2\n1e-50,3\n"),
    "header_yes": (0 | 1 << 2, "1,2\n3,4\n"),
    "header_no": (0 | 2 << 2, "a,b\n1,2\n"),
}
for name, (sel, body) in texts.items():
    put("fuzz_points_text", name, bytes([sel]) + body.encode("utf-8"))
put("fuzz_points_text", "utf16", bytes([0]) + "x,y\n1,2\n".encode("utf-16"))
put("fuzz_points_text", "binary_nul", bytes([0]) + b"1,2\n\x00\x01\x02\x03,4\n")

# ---- .npy points: the whole file
for descr in FORMATS:
    put("fuzz_npy", "v1_" + descr[1:], npy_of(descr, (12, 3)))
put("fuzz_npy", "1d_f4", npy_of("<f4", (10,)))
put("fuzz_npy", "v2_f8", npy_of("<f8", (5, 2), version=2))
put("fuzz_npy", "v3_u1", npy_of("|u1", (8, 4), version=3))
put("fuzz_npy", "fortran", npy_of("<f4", (4, 2), fortran=True))
put("fuzz_npy", "big_endian", npy(">f4", (2, 2), struct.pack(">4f", 1, 2, 3, 4)))
put("fuzz_npy", "bool", npy("|b1", (4,), b"\x00\x01\x01\x00"))
put("fuzz_npy", "truncated", npy_of("<f4", (10, 3))[:-7])
put("fuzz_npy", "lying_header", npy("<f4", (100, 3), struct.pack("<6f", *range(6))))
put("fuzz_npy", "unaligned", npy_of("<f8", (3, 2), pad_to=3))
put("fuzz_npy", "zero_rows", npy("<f4", (0, 3), b""))
put("fuzz_npy", "3d", npy_of("|u1", (2, 2, 2)))
put("fuzz_npy", "double_quotes", npy_of("<f4", (2, 2)).replace(b"'", b'"'))
put("fuzz_npy", "structured", npy("[('a', '<f4')]", (2,), b"\0" * 8))

# ---- labels: first byte bit 0 = .npy, header mode << 1
put("fuzz_labels", "text", bytes([0]) + "\n".join(str(rng.randrange(5)) for _ in range(40)).encode() + b"\n")
put("fuzz_labels", "text_header", bytes([0]) + b"label\n0\n1\n2\n-1\n3.0\n")
put("fuzz_labels", "text_bad", bytes([0]) + b"1\n2.5\n1e10\n")
for descr in ("<i4", "<i8", "<f4", "<f8", "|u1"):
    body = npy(descr, (20,), struct.pack("<20" + FORMATS[descr], *[rng.randrange(4) for _ in range(20)]))
    put("fuzz_labels", "npy_" + descr[1:], bytes([1]) + body)
put("fuzz_labels", "npy_n1", bytes([1]) + npy("<i4", (6, 1), struct.pack("<6i", *range(6))))
put("fuzz_labels", "npy_nonint", bytes([1]) + npy("<f8", (3,), struct.pack("<3d", 0.5, 1e300, float("nan"))))

# ---- k-means initial centres: bit 0 .npy, header << 1, k - 1 << 3 (0-3), d - 1 << 5 (0-7)
for k in (1, 2, 4):
    for d in (1, 2, 3):
        sel = ((k - 1) << 3) | ((d - 1) << 5)
        put("fuzz_centres", "text_k%d_d%d" % (k, d), bytes([sel]) + blobs_text(k, d, ",", ["c%d" % i for i in range(d)]).encode())
        put("fuzz_centres", "npy_k%d_d%d" % (k, d), bytes([sel | 1]) + npy_of("<f4", (k, d)))
put("fuzz_centres", "wrong_shape", bytes([(1 << 3) | (1 << 5)]) + b"1,2,3\n4,5,6\n")

# ---- rasters: first byte 0/1 .tif, 2 .png, 3 .npy
put("fuzz_raster", "npy_hw_u1", bytes([3]) + npy_of("|u1", (8, 9)))
put("fuzz_raster", "npy_hwb_u2", bytes([3]) + npy_of("<u2", (6, 5, 3)))
put("fuzz_raster", "npy_hwb_f4", bytes([3]) + npy_of("<f4", (4, 4, 2)))
put("fuzz_raster", "empty_tif", bytes([0]))
put("fuzz_raster", "not_tiff", bytes([0]) + b"II*\x00garbage")
with tempfile.TemporaryDirectory() as tmp:
    if parclust and os.access(parclust, os.X_OK):
        for dtype in ("uint8", "uint16", "float32"):
            path = os.path.join(tmp, "scene_%s.tif" % dtype)
            r = subprocess.run([parclust, "generate", "scene", "--width", "24", "--height", "16", "--bands", "3",
                                "--classes", "3", "--dtype", dtype, "-o", path], capture_output=True)
            if r.returncode == 0:
                with open(path, "rb") as f:
                    put("fuzz_raster", "scene_" + dtype, bytes([0]) + f.read())
    try:
        from osgeo import gdal
        gdal.UseExceptions()
        types = {"Int16": gdal.GDT_Int16, "Int32": gdal.GDT_Int32, "UInt32": gdal.GDT_UInt32,
                 "Float64": gdal.GDT_Float64, "Byte": gdal.GDT_Byte}
        for name, t in types.items():
            path = os.path.join(tmp, name + ".tif")
            ds = gdal.GetDriverByName("GTiff").Create(path, 12, 10, 2, t)
            ds.SetGeoTransform([500000, 10, 0, 4000000, 0, -10])
            for b in (1, 2):
                band = ds.GetRasterBand(b)
                band.SetNoDataValue(0)
                band.Fill(b * 7)
            ds = None
            with open(path, "rb") as f:
                put("fuzz_raster", "gdal_" + name, bytes([1]) + f.read())
        png = os.path.join(tmp, "p.png")
        mem = gdal.GetDriverByName("MEM").Create("", 9, 7, 3, gdal.GDT_Byte)
        for b in (1, 2, 3):
            mem.GetRasterBand(b).Fill(40 * b)
        gdal.GetDriverByName("PNG").CreateCopy(png, mem)
        with open(png, "rb") as f:
            put("fuzz_raster", "png", bytes([2]) + f.read())
    except ImportError:
        pass

# ---- command lines: arguments separated by '\n' (the input file is given by the target)
cli = {
    "meanshift": ["--bandwidth\n1.5", "--kernel\nflat\n--bandwidth=2\n--radius\n3\n--labels\nl.csv",
                  "--bandwidth\n0.5\n--backend\nseq\n--threads\n2\n--max-iter\n10\n--eps\n1e-4\n--blurring=no",
                  "--bandwidth\n1\n--merge-radius\n0.4\n--centers\nc.npy\n--plot\np.png\n--header\nyes\n--verbose",
                  "--help"],
    "kmeans": ["-k\n4", "-k\n3\n--init\nkmeans-par\n--n-init\n3\n--max-iter\n50\n--tol\n1e-6\n--seed\n7",
               "-k\n2\n--init\ncentres.csv\n--labels\nl.npy\n--centers\nc.csv", "-k=5\n--backend\ncuda\n--cuda-variant\ngemm",
               "--help"],
    "hca": ["-m\n32\n--clusters\n5", "-m\n16\n--threshold\n0.3\n--noise\n--min-cluster-size\n10",
            "--clusters\n3\n--dendrogram\nd.npy\n--components\nc.csv\n--labels\nl.tsv", "--help"],
    "heca": ["--m-list\n16,24,32\n-k\n4", "--m-list\n8,12\n--shifts\n--reference\n2\n--threshold\n0.4\n--noise",
             "-k\n3\n--min-cluster-size\n5\n--dendrogram\nd.npy\n--components\nc.csv\n--labels\nl.csv", "--help"],
    "segment": ["-k\n6\n-o\nlabels.tif", "--algorithm\nkmeans\n-k\n4\n--bands\n3,1\n-o\nl.npy\n--preview\np.png",
                "--algorithm\nmeanshift\n--spatial-bandwidth\n8\n--range-bandwidth\n16\n-o\nr.tif",
                "-k\n3\n-o\nl.tif\n--co\nCOMPRESS=ZSTD\n--ot\nUInt16\n--nodata\nnan\n--max-memory\n512M",
                "-k\n3\n-o\nl.tif\n--truth\nt.tif\n--threads\n2\n--box\ntype", "--help"],
    "score": ["--truth\nt.csv\n--pred\np.csv", "--truth\nt.npy\n--pred\np.npy\n--header\nno", "--help"],
    "generate": ["blobs\n--n\n100\n--dim\n3\n--clusters\n4\n--seed\n1", "rings\n--n\n50\n--spread\n0.1\n--box\n2",
                 "scene\n--width\n20\n--height\n10\n--bands\n4\n--classes\n3", "hca5\n--n\n1000", "--help"],
}
for cmd, lines in cli.items():
    for i, text in enumerate(lines):
        put("fuzz_cli_" + cmd, "args%d" % i, text)
