#!/usr/bin/env python3
"""The PyTorch brute-force peer of the GPU mean shift, timed in the same run as parclust's CUDA backend:
chunked cdist, exp and a matrix product per iteration (what a hand-written GPU script does).

usage: python3 bench/peers_gpu.py PARCLUST [--n 250000] [--iterations 10]
"""
import argparse
import os
import subprocess
import tempfile
import time

import numpy as np
import torch


def torch_meanshift(x, h, iterations, chunk=8192):
    q = x.clone()
    inv = 1.0 / (2.0 * h * h)
    for _ in range(iterations):
        out = torch.empty_like(q)
        for s in range(0, len(q), chunk):
            w = torch.exp(-torch.cdist(q[s:s + chunk], x).square_() * inv)
            out[s:s + chunk] = (w @ x) / w.sum(1, keepdim=True)
        q = out
    return q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("parclust")
    ap.add_argument("--n", type=int, default=250000)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "points.npy")
        modes_path = os.path.join(work, "modes.npy")
        subprocess.run([args.parclust, "generate", "agnolucci", "--n", str(args.n), "-o", data], check=True,
                       capture_output=True)
        t0 = time.perf_counter()
        line = subprocess.run([args.parclust, "meanshift", data, "--backend", "cuda", "--bandwidth", "2",
                               "--max-iter", str(args.iterations), "--eps", "0", "--modes", modes_path, "--verbose"],
                              check=True, capture_output=True, text=True).stdout
        t_parclust = time.perf_counter() - t0
        shift = [l for l in line.splitlines() if "stage shift" in l][0].split()[-2]
        x = torch.from_numpy(np.load(data)).cuda()
        torch_meanshift(x[:1000], 2.0, 1)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        modes = torch_meanshift(x, 2.0, args.iterations)
        torch.cuda.synchronize()
        t_torch = time.perf_counter() - t0
        gap = float(np.abs(modes.cpu().numpy() - np.load(modes_path)).max())
    print(f"| program (N = {args.n}, 3D, h = 2, {args.iterations} iterations) | time (s) |")
    print("|---|---|")
    print(f"| parclust CUDA fast, iterations on the GPU | {float(shift):.4f} |")
    print(f"| parclust CLI end to end (process start, file I/O, copies, merge) | {t_parclust:.3f} |")
    print(f"| PyTorch {torch.__version__} chunked brute force (cdist, exp, matmul) | {t_torch:.3f} |")
    print(f"\nlargest difference between the two programs' modes: {gap:.3g}")


if __name__ == "__main__":
    main()
