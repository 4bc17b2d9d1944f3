#!/bin/sh
# k-means across CPU ranks (issue 14): weak scaling, PER points per rank (default 1M) of DIM values
# (16), k = K (100), ITERS iterations (10, --tol 0: fewer only if no label changes), one thread a rank,
# ranks bound to cores. Per P: the run's line (iterations, seconds), the slowest rank's setup (scan,
# merged sample, k-means++), compute (its points' passes and steps) and communication (the reductions,
# waiting included), and read/cluster/write. The peer: `parclust kmeans --backend seq` on the 1-rank
# file (the in-memory pc_kmeans, one thread).
#
# MPIRUN_OPTS places the ranks (default --bind-to core: packed on the first cores; on a VM whose
# neighbouring vCPUs may share a physical core, "--map-by slot:PE=4 --bind-to core" spreads them).
#
# usage: bench/bench_mpi.sh PARCLUST PARCLUST_MPI [MPIRUN]     (env: RANKS PER DIM K ITERS WORK MPIRUN_OPTS)
set -eu
P1=$1
PM=$2
MPIRUN=${3:-mpirun}
RANKS=${RANKS:-"1 2 4 8 16"}
PER=${PER:-1000000}
DIM=${DIM:-16}
K=${K:-100}
ITERS=${ITERS:-10}
W=${WORK:-/tmp/bench_mpi}
mkdir -p "$W"
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for P in $RANKS; do
    N=$((P * PER))
    "$P1" generate blobs -o "$W/x.npy" --n "$N" --dim "$DIM" --clusters "$K" --seed 1 > /dev/null
    if [ "$P" = 1 ]; then
        echo "== peer: parclust kmeans --backend seq, $N x $DIM, k $K"
        "$P1" kmeans "$W/x.npy" -k "$K" --max-iter "$ITERS" --tol 0 --init random --backend seq --verbose
    fi
    echo "== parclust-mpi kmeans, $P ranks, $N x $DIM, k $K"
    # shellcheck disable=SC2086 # MPIRUN_OPTS is a list of options
    "$MPIRUN" -q ${MPIRUN_OPTS:---bind-to core} -np "$P" "$PM" kmeans "$W/x.npy" -k "$K" --max-iter "$ITERS" --tol 0 --init random \
        --backend seq --verbose
    rm -f "$W/x.npy"
done
