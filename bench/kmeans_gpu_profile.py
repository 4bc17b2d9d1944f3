#!/usr/bin/env python3
"""Where a GPU k-means iteration spends its time: runs `bench_kmeans gpu --iterations 2` under Nsight
Compute (kernel durations and active warps only, clocks left alone) and prints each kernel's launches,
mean time and occupancy in run order; then the instruction mix of the GEMM and fused D = 3 kernels
from cuobjdump. usage: python3 bench/kmeans_gpu_profile.py BUILD_DIR (on the GPU machine)"""
import collections
import csv
import io
import re
import subprocess
import sys


def kernels(build):
    cmd = ["ncu", "--clock-control", "none", "--csv", "--print-units", "base", "--metrics",
           "gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active",
           f"{build}/bench/bench_kmeans", "gpu", "--iterations", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    table = list(csv.reader(io.StringIO(out[out.find('"ID"'):])))
    if not table:
        print("ncu gave no table:", out[-2000:])
        return
    col = {name: i for i, name in enumerate(table[0])}
    stats = collections.OrderedDict()  # (kernel, grid) -> [times (ns)], [active warps (%)]
    for r in table[1:]:
        if len(r) != len(table[0]):
            continue
        name = re.sub(r"\(anonymous namespace\)::", "", r[col["Kernel Name"]])
        name = re.sub(r"\(.*", "", name)
        s = stats.setdefault((name, r[col["Grid Size"]]), [[], []])
        value = float(r[col["Metric Value"]].replace(",", ""))
        (s[0] if r[col["Metric Name"]].startswith("gpu__time") else s[1]).append(value)
    print("| kernel | grid | launches | mean time (us) | warps active (% of peak) |\n|---|---|---|---|---|")
    for (name, grid), (t, occ) in stats.items():
        print(f"| {name} | {grid} | {len(t)} | {sum(t) / max(1, len(t)) / 1e3:.1f} | "
              f"{sum(occ) / max(1, len(occ)):.0f} |")


def sass_mix(build, pattern):
    out = subprocess.run(["cuobjdump", "-sass", f"{build}/libparclust.a"], capture_output=True, text=True).stdout
    mix = collections.Counter()
    inside = False
    for line in out.splitlines():
        if "Function :" in line:
            inside = re.search(pattern, line) is not None
        elif inside:
            m = re.match(r"\s*/\*[0-9a-f]{4}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
            if m:
                mix[m.group(2)] += 1
    print(f"SASS of {pattern}: " + ", ".join(f"{op} {n}" for op, n in mix.most_common(14)))


if __name__ == "__main__":
    build = sys.argv[1] if len(sys.argv) > 1 else "build-gpu"
    kernels(build)
    sass_mix(build, "gemm_assign_kernel")
    sass_mix(build, "assign_kernelILi3ELb1")
    sass_mix(build, "group_sums_kernel")
