#!/usr/bin/env python3
# Issue 17 item 1 on the CPU, where no GPU run could be made: mma_dot_kernel (src/meanshift/cuda.cu)
# emulated. Part 1, its layout: pack_mma_refs, the query records, each lane's fragment loads, m16n8k16 by
# the PTX fragment layout, the final gather, against the sums computed directly (a wrong index gives
# errors of order 1). Part 2, its arithmetic on mean shift (vectorised): the modes of half, and of half
# hi + lo, weights against float64. usage: /usr/bin/python3 bench/meanshift_mma_emu.py [n, default 3000]
import sys
import numpy as np
rng = np.random.default_rng(1)
h16 = lambda v: np.float32(np.float16(v))
def split2(v):
    hi = h16(v); lo = h16(np.float32(v) - hi); return hi, lo
def split3(v):
    hi, _ = split2(v); lo, lo2 = split2(np.float32(v) - hi); return hi, lo, lo2

def pack(refs):  # refs: (n_pad, 3) float32, rows >= n are padding (None mask)
    n_pad = refs.shape[0]
    out = np.zeros(n_pad // 16 * 384, dtype=np.float32)
    for j in range(n_pad):
        v = refs[j]; e = np.zeros(16, np.float32); c = np.zeros(8, np.float32)
        if not np.isnan(v[0]):
            for k in range(3):
                hi, lo = split2(v[k]); e[3*k] = hi; e[3*k+1] = lo; e[3*k+2] = hi; c[k] = hi; c[4+k] = lo
            e[9] = e[10] = e[11] = 1
            e[12], e[13], e[14] = split3(np.float32(-(v[0]*v[0] + v[1]*v[1] + v[2]*v[2])))
            c[3] = 1
        g0 = (j // 16) * 384; r = j % 16
        b1 = g0 + (r // 8) * 128 + (r % 8) * 16
        for w in range(8):
            at = (w % 4) * 2 + w // 4
            out[b1 + 2*at] = e[2*w]; out[b1 + 2*at + 1] = e[2*w + 1]
        pair = r // 2; at = (pair % 4) * 2 + pair // 4
        for col in range(8):
            out[g0 + 256 + col*16 + 2*at + (r % 2)] = c[col]
    return out

def qrecord(q):
    a = np.zeros(16, np.float32)
    for k in range(3):
        hi, lo = split2(np.float32(2*q[k])); a[3*k] = hi; a[3*k+1] = hi; a[3*k+2] = lo
    a[9], a[10], a[11] = split3(np.float32(8 - (q[0]*q[0] + q[1]*q[1] + q[2]*q[2])))
    a[12] = a[13] = a[14] = 1
    return a.reshape(8, 2)  # word w = halves (2w low, 2w+1 high)

# PTX m16n8k16 layouts. lane = 4 g + t. A regs a0..a3 (2 halves each), B regs b0, b1, C c0..c3.
def mma(A_regs, B_regs, C):  # A_regs[lane][4][2], B_regs[lane][2][2], C[lane][4]
    A = np.zeros((16, 16)); B = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(2):
            A[g, 2*t+i] = A_regs[lane][0][i]; A[g+8, 2*t+i] = A_regs[lane][1][i]
            A[g, 2*t+8+i] = A_regs[lane][2][i]; A[g+8, 2*t+8+i] = A_regs[lane][3][i]
            B[2*t+i, g] = B_regs[lane][0][i]; B[2*t+8+i, g] = B_regs[lane][1][i]
    D = (A.astype(np.float64) @ B.astype(np.float64))
    out = []
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        out.append([np.float32(C[lane][0] + D[g, 2*t]), np.float32(C[lane][1] + D[g, 2*t+1]),
                    np.float32(C[lane][2] + D[g+8, 2*t]), np.float32(C[lane][3] + D[g+8, 2*t+1])])
    return out

def kernel_one_warp_tile(qs, packed, n_pad):  # 16 queries (one m-tile), all references
    rec = [qrecord(q) for q in qs]
    qa = [[rec[(l>>2)][l&3], rec[(l>>2)+8][l&3], rec[(l>>2)][(l&3)+4], rec[(l>>2)+8][(l&3)+4]] for l in range(32)]
    tot = [[0.0]*4 for _ in range(32)]
    for grp in range(n_pad // 16):
        base = grp * 384
        def ld(off, lane):
            g, t = lane >> 2, lane & 3; p = base + off + g*16 + t*4
            return [packed[p:p+2], packed[p+2:p+4]]
        e0 = mma(qa, [ld(0, l) for l in range(32)], [[0]*4]*32)
        e1 = mma(qa, [ld(128, l) for l in range(32)], [[0]*4]*32)
        whi, wlo = [], []
        for l in range(32):
            e = e0[l] + e1[l]
            ww = [np.float32(2.0) ** np.float32(x) for x in e]          # split_half2: hi + lo
            hi = [h16(v) for v in ww]; lo = [h16(np.float32(v - u)) for v, u in zip(ww, hi)]
            whi.append([[hi[0], hi[1]], [hi[2], hi[3]], [hi[4], hi[5]], [hi[6], hi[7]]])
            wlo.append([[lo[0], lo[1]], [lo[2], lo[3]], [lo[4], lo[5]], [lo[6], lo[7]]])
        acc = mma(whi, [ld(256, l) for l in range(32)], [[0]*4]*32)
        acc = mma(wlo, [ld(256, l) for l in range(32)], acc)
        for l in range(32):
            for k in range(4): tot[l][k] = np.float32(tot[l][k] + acc[l][k])
    res = np.zeros((16, 4))
    for l in range(32):
        g, t = l >> 2, l & 3
        if t >= 2: continue
        s = [tot[l][k] + tot[l + 2][k] for k in range(4)]
        for hr in range(2):
            c0, c1 = s[2*hr], s[2*hr+1]
            if t == 0: res[g + 8*hr, 0] = c0; res[g + 8*hr, 1] = c1
            else: res[g + 8*hr, 2] = c0; res[g + 8*hr, 3] = c1
    return res

n = 40; n_pad = 48
pts = rng.normal(0, 1.5, (n, 3)).astype(np.float32) + np.float32(3)
refs = np.full((n_pad, 3), np.nan, np.float32); refs[:n] = pts
packed = pack(refs)
qs = pts[:16] + rng.normal(0, 0.3, (16, 3)).astype(np.float32)
got = kernel_one_warp_tile(qs, packed, n_pad)
d2 = ((qs[:, None, :].astype(np.float64) - pts[None].astype(np.float64))**2).sum(-1)
w = 2.0 ** (8 - d2)
want = np.concatenate([w @ pts.astype(np.float64), w.sum(1, keepdims=True)], 1)
rel = np.abs(got - want).max(0) / np.abs(want).max(0)
print("sums: largest relative difference per column (x, y, z, weight):", rel)
mode_got, mode_want = got[:, :3] / got[:, 3:], want[:, :3] / want[:, 3:]
print("one step's new positions: largest difference (scaled units):", np.abs(mode_got - mode_want).max())

# ---- part 2
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
rng = np.random.default_rng(7)
centres = rng.uniform(-5, 5, (3, 3))
x = centres[rng.integers(0, 3, n)] + rng.normal(0, 1, (n, 3))
h = 2.0
s = np.sqrt(np.log2(np.e) / 2) / h           # scaled units: weight = exp2(-|q' - r'|^2)
r = ((x - x.mean(0)) * s).astype(np.float32)
hs = lambda v: v.astype(np.float16).astype(np.float64)
r_hi = hs(r); r_lo = hs(r - r_hi.astype(np.float32))
q64 = r.astype(np.float64).copy(); qh = q64.copy(); qs = q64.copy()
for it in range(10):
    for q, half in ((q64, None), (qh, 'half'), (qs, 'split')):
        out = np.empty_like(q)
        for a in range(0, n, 1000):
            d2 = ((q[a:a+1000, None, :] - r[None].astype(np.float64))**2).sum(-1)
            w = 2.0 ** (8 - d2)
            if half == 'half':
                w = hs(w.astype(np.float32))
                out[a:a+1000] = (w @ r_hi + w @ r_lo) / w.sum(1, keepdims=True)
            elif half == 'split':
                w32 = w.astype(np.float32); w_hi = hs(w32); w_lo = hs(w32 - w_hi.astype(np.float32))
                num = w_hi @ r_hi + w_hi @ r_lo + w_lo @ r_hi + w_lo @ r_lo
                out[a:a+1000] = num / (w_hi.sum(1, keepdims=True) + w_lo.sum(1, keepdims=True))
            else:
                out[a:a+1000] = (w @ r.astype(np.float64)) / w.sum(1, keepdims=True)
        q[:] = out
print(f"n {n}: largest mode difference against float64: half weights {np.abs(qh - q64).max() / s / h:.2e} h, half hi + lo weights {np.abs(qs - q64).max() / s / h:.2e} h")
