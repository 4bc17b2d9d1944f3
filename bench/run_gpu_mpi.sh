#!/bin/sh
# Issue 14's multi-GPU strong scaling on a host of several GPUs (nvidia-h200-x2 or -x4): builds with
# CUDA and MPI (sm_90) into $B, then per P = 1 .. GPUS (one rank a GPU) bench_mpi_gpu's k-means
# (100M x 16, k 1000, 10 iterations from the same random centres), HCA (4-gigapixel 4-band uint8
# scene made by each rank in memory) and mean shift (1M x 3, 10 iterations, all pairs), then k-means
# on the host's CPU cores (bench_mpi.sh: 1M points a rank, ranks 1 .. 16). Logs under $OUT (or
# ./gpu-mpi-out).
# MPIRUN_OPTS (default "--map-by slot:PE=16 --bind-to core": 16 cores a rank) and THREADS (OpenMP
# threads a rank, default 15: one core left to MPI's and CUDA's threads, as parclust-mpi leaves it)
# set how ranks sit on the cores (2026-11-26: 16 threads on 16 cores made k-means 1.7x slower at P 4).
# usage: [B=build] [GPUS=2] sh bench/run_gpu_mpi.sh
set -u
OUT=${OUT:-gpu-mpi-out}
B=${B:-build-gpu}
GPUS=${GPUS:-2}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)"
if [ ! -x "$B/bench/bench_mpi_gpu" ]; then
    { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DPARCLUST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DPARCLUST_GDAL=OFF -DPARCLUST_MPI=ON && cmake --build "$B" -j "$(nproc)"; } >"$OUT/build-mpi.log" 2>&1 ||
        { tail -30 "$OUT/build-mpi.log"; exit 1; }
fi
echo "| run | data | P | backend | iterations / clusters | make data (s) | wall (s) | setup (s) | compute (s) | communication (s) | per iteration (s) | inertia / sizes' hash |"
P=1
while [ "$P" -le "$GPUS" ]; do
    for what in kmeans hca meanshift; do
        # shellcheck disable=SC2086 # MPIRUN_OPTS is a list of options
        OMP_NUM_THREADS=${THREADS:-15} timeout 200 mpirun -q ${MPIRUN_OPTS:---map-by slot:PE=16 --bind-to core} -np "$P" "$B/bench/bench_mpi_gpu" "$what" --backend cuda \
            2>>"$OUT/mpi-gpu.err"
    done
    P=$((P * 2))
done | tee "$OUT/mpi-gpu.log"
[ -s "$OUT/mpi-gpu.err" ] && tail -5 "$OUT/mpi-gpu.err"
[ "${CPU_RANKS:-1 2 4 8 16}" = none ] && exit 0
RANKS=${CPU_RANKS:-"1 2 4 8 16"} WORK=/tmp/bench_mpi timeout 240 sh bench/bench_mpi.sh "$B/parclust" "$B/tools/parclust-mpi/parclust-mpi" \
    >"$OUT/mpi-cpu.log" 2>&1
grep -E "^==|iterations|setup|compute|seconds" "$OUT/mpi-cpu.log" | head -60
