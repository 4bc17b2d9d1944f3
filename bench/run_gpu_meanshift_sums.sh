#!/bin/sh
# Issue 17 item 1 on the GPU machine: the tensor-core mean shift kernel's ways of forming S = W R
# (half hi + lo, tf32 with the weights' bits as they are, tf32 cut by hand) and shares of exp2 on the
# FMA pipe, side by side in one run; their SASS mixes; test_meanshift_cuda. Logs under $OUT.
# usage: [B=build-dir] [PATHS=...] sh bench/run_gpu_meanshift_sums.sh
set -u
OUT=${OUT:-gpu-logs}
B=${B:-build-gpu}
PATHS=${PATHS:-mma:0,tf32s:0,tf32s:1,tf32s:1.5,tf32s:2,tf32s:2.5,tf32s:3,mma:0}
mkdir -p "$OUT"
{
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm --format=csv
    cmake -S . -B "$B" -DPARCLUST_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DPARCLUST_WERROR=ON -DPARCLUST_GDAL=OFF \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) >/dev/null &&
        cmake --build "$B" -j 16 --target bench_meanshift test_meanshift_cuda 2>&1 | grep -E "error|warning"
    true
} >"$OUT/build.log" 2>&1
cat "$OUT/build.log"
for k in "mma_dot_kernelILi3ELi0EE" "mma_tf32_kernelILi3ELi0ELi1ELb1E" "mma_tf32_kernelILi3ELi3ELi1ELb1E"; do
    echo "SASS mix of $k:"
    cuobjdump -sass "$B/libparclust.a" 2>/dev/null |
        awk -v k="$k" 'index($0, "Function : ") && index($0, k) {on=1; next} /Function :/{on=0} on' |
        grep -oE '^ +/\*[0-9a-f]{4}\*/ +[A-Z][A-Z0-9_.]*' | awk '{print $2}' | sed 's/\..*//' |
        sort | uniq -c | sort -rn | head -14 | tr '\n' ' '
    echo
done >"$OUT/sass.log" 2>&1
cat "$OUT/sass.log"
timeout 300 "$B/bench/bench_meanshift" gpu-exp --sizes 250000 --paths "$PATHS" >"$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
(cd "$B" && ctest -R 'meanshift_cuda' --output-on-failure --timeout 200) >"$OUT/ctest.log" 2>&1
tail -15 "$OUT/ctest.log"
