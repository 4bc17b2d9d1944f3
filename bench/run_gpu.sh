#!/bin/sh
# On the GPU machine: builds with CUDA for sm_90, runs the cuda-labelled tests, compute-sanitizer
# (memcheck, racecheck) on a quick run of them, then the GPU benchmarks and the PyTorch peer.
# Logs go to $OUT (or ./gpu-logs). usage: sh bench/run_gpu.sh [--no-bench | --kmeans]
# --kmeans: k-means alone (its targets, test, sanitizer runs and benchmarks, kernel times from Nsight
# Compute and the instruction mix of the GEMM kernel).
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
B=build-gpu
TARGETS= TESTS= PROGRAMS="meanshift kmeans"
if [ "${1:-}" = "--kmeans" ]; then
    TARGETS="--target test_kmeans_cuda bench_kmeans" TESTS="-R kmeans_cuda" PROGRAMS=kmeans
fi
{
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv
    cmake -S . -B $B -DPARCLUST_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON \
        -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) >/dev/null &&
        cmake --build $B -j 16 $TARGETS 2>&1 | grep -E "error|warning|ptxas" ; true
} >"$OUT/build.log" 2>&1
(cd $B && ctest -L cuda $TESTS --output-on-failure) >"$OUT/ctest.log" 2>&1
tail -3 "$OUT/ctest.log"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in $PROGRAMS; do
    for tool in memcheck racecheck; do
        PC_CUDA_TEST_QUICK=1 PC_TEST_SEED=1 timeout ${PC_SANITIZER_TIMEOUT:-600} $CS --tool $tool --error-exitcode 9 $B/tests/test_${t}_cuda \
            >"$OUT/sanitizer-$t-$tool.log" 2>&1
        echo "compute-sanitizer $tool on $t: exit $? ($(tail -1 "$OUT/sanitizer-$t-$tool.log"))"
    done
done
[ "${1:-}" = "--no-bench" ] && exit 0
if [ "${1:-}" = "--kmeans" ]; then
    { $B/bench/bench_kmeans gpu; echo; python3 bench/peers_kmeans_gpu.py; } >"$OUT/bench-kmeans.log" 2>&1
    cat "$OUT/bench-kmeans.log"
    python3 bench/kmeans_gpu_profile.py $B >"$OUT/profile-kmeans.log" 2>&1
    cat "$OUT/profile-kmeans.log"
    exit 0
fi
{
    $B/bench/bench_meanshift gpu
    echo
    $B/bench/bench_meanshift gpu-tile
    echo
    $B/bench/bench_meanshift gpu-bindi
    echo
    python3 bench/peers_gpu.py $B/parclust
    echo
    sh bench/sass_mix.sh $B
} >"$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
