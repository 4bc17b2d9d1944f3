#!/bin/sh
# Issue 17 item 3, GPU part, on the GPU machine: k-means with Hamerly's bounds on the GPU against
# Lloyd's kernels. Builds the three programs for sm_90 unless B holds them, runs the CUDA cases of
# test_kmeans_hamerly (two seeds; every iteration's labels and centres against Lloyd's) and
# test_kmeans_cuda (Lloyd's kernels, whose shared helpers moved to cuda_direct.cuh),
# compute-sanitizer memcheck and racecheck on the first, then bench_kmeans gpu-converge (Lloyd fast, Lloyd direct
# and Hamerly to convergence, same run) and bench_kmeans gpu --variant 0 (round one's per-iteration
# figure, same run). Logs go to $OUT (or ./gpu-logs). usage: [B=build-dir] sh bench/run_gpu_hamerly.sh
set -u
OUT=${OUT:-gpu-logs}
B=${B:-build-gpu}
mkdir -p "$OUT"
{
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)"
    if [ ! -x "$B/tests/test_kmeans_hamerly" ] || [ ! -x "$B/tests/test_kmeans_cuda" ] || [ ! -x "$B/bench/bench_kmeans" ]; then
        cmake -S . -B "$B" -DPARCLUST_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON -DPARCLUST_GDAL=OFF \
            -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) >/dev/null &&
            cmake --build "$B" -j 16 --target test_kmeans_hamerly test_kmeans_cuda bench_kmeans 2>&1 | grep -E "error|warning"
    fi
} >"$OUT/build.log" 2>&1
cat "$OUT/build.log"
for seed in 1 7; do
    PC_TEST_SEED=$seed timeout 600 "$B/tests/test_kmeans_hamerly" cuda >"$OUT/hamerly-cuda-$seed.log" 2>&1
    echo "test_kmeans_hamerly cuda, seed $seed: exit $? ($(tail -1 "$OUT/hamerly-cuda-$seed.log"))"
done
timeout 600 "$B/tests/test_kmeans_cuda" >"$OUT/kmeans-cuda.log" 2>&1
echo "test_kmeans_cuda: exit $? ($(tail -1 "$OUT/kmeans-cuda.log"))"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
PC_TEST_SEED=3 timeout 400 $CS --tool memcheck --error-exitcode 9 "$B/tests/test_kmeans_hamerly" cuda \
    >"$OUT/memcheck-hamerly.log" 2>&1
echo "compute-sanitizer memcheck on test_kmeans_hamerly cuda: exit $? ($(tail -1 "$OUT/memcheck-hamerly.log"))"
PC_TEST_SEED=3 timeout 400 $CS --tool racecheck --error-exitcode 9 "$B/tests/test_kmeans_hamerly" cuda \
    >"$OUT/racecheck-hamerly.log" 2>&1
echo "compute-sanitizer racecheck on test_kmeans_hamerly cuda: exit $? ($(tail -1 "$OUT/racecheck-hamerly.log"))"
{
    PC_KMEANS_CUDA_STATS=1 "$B/bench/bench_kmeans" gpu-converge
    echo
    "$B/bench/bench_kmeans" gpu --variant 0
} >"$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
