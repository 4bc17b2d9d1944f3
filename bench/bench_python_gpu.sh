#!/bin/sh
# The Python package on a machine with a GPU (and many cores): builds parclust._core against a CMake
# build folder's libparclust.a (built with -DPARCLUST_CUDA=ON), runs python/tests (the CUDA test among
# them, backend='cuda') and bench_python.py (the CPU workloads: C floor, Python, scikit-learn).
# Usage: sh bench/bench_python_gpu.sh BUILD LOGDIR [PYTHON]   (from the checkout's root)
set -u
build=$(cd "$1" && pwd)
logs=$2
py=${3:-python3}
mkdir -p "$logs"
root=$(pwd)
{
    nvidia-smi -L
    "$py" -c "import sys, numpy, sklearn; print(sys.version.split()[0], numpy.__version__, sklearn.__version__)"
    lscpu | grep -E "Model name|^CPU\(s\)"
} >"$logs/machine.txt" 2>&1
cd "$root/python" && PARCLUST_BUILD=$build "$py" setup.py -q build --build-base "$build/python-build" \
    --build-lib "$build/python" >"$logs/build.txt" 2>&1 || { cat "$logs/build.txt"; exit 1; }
cd "$root"
cuda=/usr/local/cuda/lib64
gcc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude bench/bench_python_floor.c "$build/libparclust.a" -fopenmp \
    -lm -L$cuda -lcudart -lstdc++ -Wl,-rpath,$cuda -o "$build/bench_python_floor" >>"$logs/build.txt" 2>&1 ||
    { cat "$logs/build.txt"; exit 1; }
cd "$build"
PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 timeout "${TEST_TIMEOUT:-120}" "$py" -m pytest -q -p no:cacheprovider -rs \
    "$root/python/tests" >"$logs/tests.txt" 2>&1
echo "tests: exit $?" >>"$logs/tests.txt"
tail -3 "$logs/tests.txt"
PYTHONPATH="$build/python" timeout "${BENCH_TIMEOUT:-150}" "$py" "$root/bench/bench_python.py" \
    "$build/bench_python_floor" --reps 5 >"$logs/bench.txt" 2>&1
echo "bench: exit $?" >>"$logs/bench.txt"
cat "$logs/bench.txt"
