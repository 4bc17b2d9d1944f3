#!/bin/sh
# The Python package's tests in a CMake build: builds parclust._core against BUILD's libparclust.a
# into BUILD/python (never into the source tree), then runs pytest on python/tests with that copy.
# Usage: run.sh PYTHON BUILD. Exits 77 (skipped) only when PYTHON lacks what the package needs
# (Python's headers, NumPy, scikit-learn, pytest: Debian's python3-dev, python3-numpy,
# python3-sklearn, python3-pytest), saying which.
set -eu
py=$1
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
for module in numpy sklearn scipy pytest setuptools; do
    "$py" -c "import $module" 2>/dev/null || { echo "python tests: $py cannot import $module: skipped"; exit 77; }
done
"$py" -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" ||
    { echo "python tests: no Python.h for $py (Debian: python3-dev): skipped"; exit 77; }
cd "$src"
PARCLUST_BUILD=$build PARCLUST_WERROR=1 "$py" setup.py -q build --build-base "$build/python-build" \
    --build-lib "$build/python" 2>&1 | grep -v "byte-compiling is disabled" || true
test -f "$build"/python/parclust/_core*.so || { echo "python tests: the extension did not build"; exit 1; }
if grep -q "^PARCLUST_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
    # The library in the extension is instrumented: the sanitizers' runtimes must come first.
    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export LD_PRELOAD ASAN_OPTIONS=detect_leaks=0
fi
cd "$build"
PYTHONPATH="$build/python" PYTHONDONTWRITEBYTECODE=1 exec "$py" -m pytest -q -p no:cacheprovider "$src/tests"
