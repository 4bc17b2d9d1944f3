#!/bin/sh
# Issue 14's HCA across GPUs with each rank's pixels and labels in its GPU's memory (pc_mpi_hca_device),
# on a host of several GPUs: builds with CUDA and MPI (sm_90) into $B, runs the tests of the device
# path (test_mpi_hca_device at P = 1..4, test_hca_stream_cuda, compute-sanitizer on the latter's quick
# run), then bench_mpi_gpu's HCA (4-gigapixel 4-band uint8 scene, made by each rank and copied to its
# GPU before the timed calls) for P = 1, 2, 4 (one rank a GPU), pixels in GPU memory (median of 5
# calls) and, for the baseline, in host memory (1 call). Logs under $OUT (or ./gpu-mpi-out).
# usage: [B=build] [GPUS=4] sh bench/run_gpu_mpi_hca_device.sh
set -u
OUT=${OUT:-gpu-mpi-out}
B=${B:-build-gpu}
GPUS=${GPUS:-4}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
if [ ! -x "$B/bench/bench_mpi_gpu" ]; then
    { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DPARCLUST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DPARCLUST_GDAL=OFF -DPARCLUST_MPI=ON && cmake --build "$B" -j "$(nproc)"; } >"$OUT/build-mpi.log" 2>&1 ||
        { tail -30 "$OUT/build-mpi.log"; exit 1; }
fi
if [ "${TESTS:-1}" = 1 ]; then
    (cd "$B" && timeout 300 ctest --output-on-failure -R "^(mpi_hca_device|hca_stream_cuda)$") >"$OUT/tests.log" 2>&1
    tail -4 "$OUT/tests.log"
    PC_CUDA_TEST_QUICK=1 timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$B/tests/test_hca_stream_cuda" >"$OUT/memcheck.log" 2>&1
    echo "memcheck test_hca_stream_cuda: exit $?; $(grep -c "CHECK failed" "$OUT/memcheck.log") failed checks"
    tail -2 "$OUT/memcheck.log"
fi
P=1
while [ "$P" -le "$GPUS" ]; do
    for device in 1 0; do
        repeats=5
        [ "$device" = 0 ] && repeats=1
        # shellcheck disable=SC2086 # MPIRUN_OPTS is a list of options
        OMP_NUM_THREADS=${THREADS:-15} timeout 200 mpirun -q ${MPIRUN_OPTS:---map-by slot:PE=16 --bind-to core} \
            -np "$P" "$B/bench/bench_mpi_gpu" hca --backend cuda --device "$device" --repeats "$repeats" \
            2>>"$OUT/mpi-gpu.err"
    done
    P=$((P * 2))
done | tee "$OUT/mpi-hca.log"
[ -s "$OUT/mpi-gpu.err" ] && tail -5 "$OUT/mpi-gpu.err"
exit 0
