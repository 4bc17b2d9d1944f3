#!/usr/bin/env python3
"""PyTorch peer of the GPU k-means: one Lloyd iteration (cdist, argmin, index_add) on the same sizes as
`bench_kmeans gpu`, median of 5 after a warm-up, CUDA-synchronised. usage: python3 bench/peers_kmeans_gpu.py"""
import time

import torch


def lloyd_iteration(x, c, chunk=1 << 21):
    k, d = c.shape
    sums = torch.zeros(k, d, device=x.device)
    counts = torch.zeros(k, device=x.device)
    for s in range(0, len(x), chunk):
        xc = x[s:s + chunk]
        labels = torch.cdist(xc, c).argmin(1)
        sums.index_add_(0, labels, xc)
        counts.index_add_(0, labels, torch.ones_like(labels, dtype=torch.float32))
    return sums / counts.clamp(min=1)[:, None]


def main():
    print(f"| N x D, k | PyTorch {torch.__version__}: one Lloyd iteration (ms) |\n|---|---|")
    g = torch.Generator(device="cuda").manual_seed(0)
    for n, d, k in ((10_000_000, 3, 100), (1_000_000, 16, 1000), (10_000_000, 16, 1000)):
        x = torch.randn(n, d, device="cuda", generator=g) * 10
        c = x[torch.randperm(n, device="cuda", generator=g)[:k]].clone()
        lloyd_iteration(x, c)
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            lloyd_iteration(x, c)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        print(f"| {n // 1_000_000}M x {d}, k = {k} | {1e3 * sorted(times)[2]:.2f} |")
        del x, c
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
