#!/bin/sh
# The GPU's limits on the CLI path (issue 18, item 4). Always: `parclust info` states mean shift's point
# limits, and one line per GPU (free memory, the shared memory a block may use) or none without one.
# With GPU_HOG (tests/gpu_hog.c; label cuda): k x d beyond that shared memory is refused by kmeans
# --backend cuda naming the KiB info lists, and --backend auto runs it on the CPU with a line saying
# why; with all but KEEP MiB of the GPU held by gpu_hog, a run needing more is refused on --backend cuda
# with what it needed and what was free, and --backend auto says so in one line and gives the CPU's
# labels (the same file as --backend openmp's).
# Usage: cli_gpu_limits.sh PARCLUST DIR [GPU_HOG [KEEP_MIB]]
set -u
BIN=$1
DIR=$2
HOG=${3:-}
KEEP=${4:-768}
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR" || exit 1
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
"$BIN" info >info.txt || fail "parclust info: exit $?"
grep -q "^  meanshift: up to 2147483647 points (CUDA: 268435455)" info.txt || fail "info: no mean shift limits"
devices=$(grep -c "^CUDA device [0-9]*:" info.txt)
gpus=$(grep -c "^  GPU [0-9]*: [0-9]* of [0-9]* MiB free now; .* [0-9]* KiB of shared memory" info.txt)
[ "$devices" = "$gpus" ] || fail "info: $devices CUDA devices but $gpus GPU limit lines"

if [ -n "$HOG" ]; then
    if [ "$devices" = 0 ]; then
        echo "cli_gpu_limits: no CUDA device: skipped"
        exit 77
    fi
    shared=$(sed -n 's/^  GPU 0: .* the \([0-9]*\) KiB of shared memory.*/\1/p' info.txt)
    # k x d beyond the shared memory: d = 3, float32 centres and sums of k x 4 values each
    k=$((shared * 1024 / 16 + 64))
    "$BIN" generate blobs --n $((2 * k)) --dim 3 --clusters 5 --seed 3 -o wide.npy >/dev/null || fail "generate"
    "$BIN" kmeans wide.npy -k $k --init random --max-iter 2 --backend cuda >out.txt 2>err.txt
    rc=$?
    { [ $rc = 1 ] && grep -q "error: .*$shared KiB" err.txt; } ||
        fail "kmeans -k $k --backend cuda: exit $rc, expected a refusal naming $shared KiB: $(head -c 300 err.txt)"
    echo "  k x d beyond shared memory, cuda: $(cat err.txt)"
    "$BIN" kmeans wide.npy -k $k --init random --max-iter 2 --backend auto >out.txt 2>err.txt ||
        fail "kmeans -k $k --backend auto: exit $?: $(head -c 300 err.txt)"
    grep -q "the GPU could not run this (.*$shared KiB.*): ran on the CPU" err.txt ||
        fail "kmeans -k $k --backend auto: no line saying it ran on the CPU: $(head -c 300 err.txt)"
    echo "  k x d beyond shared memory, auto: $(cat err.txt)"

    # A GPU out of memory: 50M x 3 float32 points (572 MiB) with all but $KEEP MiB of the card held
    "$BIN" generate blobs --n 50000000 --dim 3 --clusters 5 --seed 4 -o big.npy >/dev/null || fail "generate big"
    "$HOG" "$KEEP" "$BIN" info >hog_info.txt 2>&1
    echo "  under gpu_hog: $(grep '^gpu_hog\|^  GPU 0' hog_info.txt | tr '\n' ' ')"
    "$HOG" "$KEEP" "$BIN" kmeans big.npy -k 4 --init random --max-iter 3 --backend cuda >out.txt 2>err.txt
    rc=$?
    { [ $rc = 1 ] && grep -q "error: .*[0-9]* MiB.*[0-9]* of [0-9]* MiB free" err.txt; } ||
        fail "kmeans --backend cuda out of GPU memory: exit $rc, expected what was needed and free: $(cat err.txt)"
    echo "  out of GPU memory, cuda: $(grep error err.txt)"
    "$HOG" "$KEEP" "$BIN" kmeans big.npy -k 4 --init random --max-iter 3 --backend auto --labels auto.npy \
        >out.txt 2>err.txt || fail "kmeans --backend auto out of GPU memory: exit $?: $(cat err.txt)"
    grep -q "parclust kmeans: the GPU could not run this (.*MiB.*free.*): running it on the CPU" err.txt ||
        fail "kmeans --backend auto out of GPU memory: no line saying so: $(cat err.txt)"
    echo "  out of GPU memory, auto: $(grep 'parclust kmeans' err.txt)"
    "$BIN" kmeans big.npy -k 4 --init random --max-iter 3 --backend openmp --labels cpu.npy >/dev/null 2>&1 ||
        fail "kmeans --backend openmp"
    cmp -s auto.npy cpu.npy || fail "kmeans: --backend auto's labels after the fallback differ from openmp's"
    # HCA: the plan finds the card too small (its reserve) and takes the CPU itself; the CLI says why
    "$HOG" "$KEEP" "$BIN" hca big.npy --clusters 5 -m 32 --backend auto --labels hauto.npy >out.txt 2>err.txt ||
        fail "hca --backend auto out of GPU memory: exit $?: $(cat err.txt)"
    grep -q "parclust hca: the GPU could not run this (.*MiB.*): ran on the CPU" err.txt ||
        fail "hca --backend auto out of GPU memory: no line saying so: $(cat err.txt) $(cat out.txt)"
    echo "  out of GPU memory, hca auto: $(grep 'parclust hca' err.txt)"
    "$BIN" hca big.npy --clusters 5 -m 32 --backend openmp --labels hcpu.npy >/dev/null 2>&1 || fail "hca --backend openmp"
    cmp -s hauto.npy hcpu.npy || fail "hca: --backend auto's labels after the fallback differ from openmp's"
fi
if [ $failures -ne 0 ]; then
    echo "cli_gpu_limits: $failures failure(s)"
    exit 1
fi
echo "cli_gpu_limits: passed"
