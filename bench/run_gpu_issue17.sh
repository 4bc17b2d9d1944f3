#!/bin/sh
# Issue 17 items 1 and 4 on the GPU machine: builds for sm_90 (unless B already holds a build), runs
# the GPU tests of mean shift and HCA, compute-sanitizer memcheck on quick runs of the two changed
# tests, then the benchmarks: mean shift 250k x 3D x 10 iterations through each exp2 path (round
# one's kernel first, in the same run), and HCA host to host on the 115-Mpix RGB image with the
# copies overlapped against round one's way, beside the PCIe floor measured in the same run.
# Logs go to $OUT (or ./gpu-logs). usage: [B=build-dir] sh bench/run_gpu_issue17.sh [--no-bench]
set -u
OUT=${OUT:-gpu-logs}
B=${B:-build-gpu}
mkdir -p "$OUT"
{
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm --format=csv
    lscpu | grep -E "Model name|^CPU\(s\)"
    if [ ! -f "$B/bench/bench_hca" ]; then
        cmake -S . -B "$B" -DPARCLUST_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON \
            -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) >/dev/null &&
            cmake --build "$B" -j 16 2>&1 | grep -E "error|warning" ; true
    fi
} >"$OUT/build.log" 2>&1
cat "$OUT/build.log"
(cd "$B" && ctest -R 'meanshift_cuda|hca_cuda|hca_stream|heca_cuda|hca_progress_cuda|scale_cuda' --output-on-failure --timeout 300) >"$OUT/ctest.log" 2>&1
tail -12 "$OUT/ctest.log"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for t in meanshift hca; do
    PC_CUDA_TEST_QUICK=1 PC_TEST_SEED=1 timeout 300 $CS --tool memcheck --error-exitcode 9 "$B/tests/test_${t}_cuda" \
        >"$OUT/memcheck-$t.log" 2>&1
    echo "compute-sanitizer memcheck on $t: exit $? ($(tail -1 "$OUT/memcheck-$t.log"))"
done
[ "${1:-}" = "--no-bench" ] && exit 0
{
    "$B/bench/bench_meanshift" gpu-exp --sizes 250000
    echo
    "$B/bench/bench_hca" --gpu-io --mpix 115 --bands 3 --repeats 5
} >"$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
