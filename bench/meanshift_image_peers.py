"""OpenCV's pyrMeanShiftFiltering beside parclust's image mean shift, on the same pixels.

bench_meanshift_image --raw scene.rgb --modes modes.f32 writes the scene (packed RGB uint8) and
parclust's filtered values (float32); this times OpenCV (single level, sp = hs, sr = hr) on the scene
and reports how far the two filtered images are apart, so a speed ratio never hides another answer.
OpenCV's filter differs by design: a square window, positions and colours rounded to integers each
step, and its own stop rule (default 5 steps, eps 1).

usage: /usr/bin/python3 bench/meanshift_image_peers.py SCENE.rgb MODES.f32 WIDTH HEIGHT [HS HR]
"""
import statistics
import sys
import time

import cv2
import numpy as np


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    scene, modes_path = sys.argv[1], sys.argv[2]
    w, h = int(sys.argv[3]), int(sys.argv[4])
    hs = float(sys.argv[5]) if len(sys.argv) > 5 else 8.0
    hr = float(sys.argv[6]) if len(sys.argv) > 6 else 16.0
    img = np.fromfile(scene, dtype=np.uint8).reshape(h, w, 3)
    ours = np.fromfile(modes_path, dtype=np.float32).reshape(h, w, 3)
    print(f"OpenCV {cv2.__version__}, threads {cv2.getNumThreads()}")
    print("| program | steps / eps | time (s), median of 3 | mean abs diff to parclust (band units) | pixels within hr/2 |")
    print("|---|---|---|---|---|")
    for steps, eps in ((5, 1.0), (20, 1.0)):
        crit = (cv2.TERM_CRITERIA_MAX_ITER | cv2.TERM_CRITERIA_EPS, steps, eps)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            out = cv2.pyrMeanShiftFiltering(img, hs, hr, maxLevel=0, termcrit=crit)
            times.append(time.perf_counter() - t0)
        diff = out.astype(np.float64) - ours
        dist = np.sqrt((diff ** 2).sum(axis=2))
        print(f"| cv2.pyrMeanShiftFiltering sp={hs:g} sr={hr:g} | {steps} / {eps:g} | "
              f"{statistics.median(times):.3f} | {np.abs(diff).mean():.2f} | {100 * (dist <= hr / 2).mean():.1f}% |")
    noise = np.abs(img.astype(np.float64) - ours).mean()
    print(f"(for scale: mean abs diff between the unfiltered scene and parclust's modes: {noise:.2f})")


if __name__ == "__main__":
    main()
