#!/bin/sh
# Builds the fuzz targets (fuzz_all: every fuzz_* program and parclust, all with ASan, UBSan and
# libFuzzer's coverage) with clang into BUILD. Usage: fuzz/build.sh BUILD
set -eu
BUILD=$1
cd "$(dirname "$0")/.."
mkdir -p "$BUILD"
cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DPARCLUST_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPARCLUST_CUDA=OFF -DPARCLUST_TESTS=OFF -DPARCLUST_BENCH=OFF -DPARCLUST_MPI=OFF >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j "${JOBS:-$(nproc 2>/dev/null || echo 2)}" --target fuzz_all
