#!/bin/sh
# HCA on the GPU machine: builds the library, its GPU tests (pc_hca and plans, streams) and benchmark
# for sm_90, runs the tests (hca_cuda, hca_stream_cuda, and hca_stream, which then makes a CUDA stream),
# compute-sanitizer memcheck and racecheck on a quick run of each GPU test, then the
# benchmarks: the six images on the GPU (bench_hca --gpu) and on all CPU cores beside them.
# Logs go to $OUT (or ./gpu-logs). usage: sh bench/run_gpu_hca.sh [--no-bench]
set -u
OUT=${OUT:-gpu-logs}
mkdir -p "$OUT"
B=build-gpu
{
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv
    cmake -S . -B $B -DPARCLUST_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON \
        -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) >/dev/null &&
        cmake --build $B -j 16 --target test_hca_cuda test_hca_stream_cuda test_hca_stream bench_hca 2>&1 | grep -E "error|warning" ; true
} >"$OUT/build-hca.log" 2>&1
cat "$OUT/build-hca.log"
(cd $B && ctest -R 'hca_cuda|hca_stream' --output-on-failure --timeout 240) >"$OUT/ctest-hca.log" 2>&1
tail -40 "$OUT/ctest-hca.log"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in hca hca_stream; do
    for tool in memcheck racecheck; do
        PC_CUDA_TEST_QUICK=1 PC_TEST_SEED=1 $CS --tool $tool --error-exitcode 9 $B/tests/test_${t}_cuda \
            >"$OUT/sanitizer-$t-$tool.log" 2>&1
        echo "compute-sanitizer $tool on $t: exit $? ($(tail -1 "$OUT/sanitizer-$t-$tool.log"))"
    done
done
[ "${1:-}" = "--no-bench" ] && exit 0
{
    $B/bench/bench_hca --gpu --mpix 5,12.4,115 --bands 3 --repeats 5
    $B/bench/bench_hca --gpu --mpix 4,24,100 --bands 4 --repeats 5
    $B/bench/bench_hca --mpix 5,12.4,115 --bands 3 --repeats 1
    $B/bench/bench_hca --mpix 4,24,100 --bands 4 --repeats 1
} >"$OUT/bench-hca.log" 2>&1
cat "$OUT/bench-hca.log"
