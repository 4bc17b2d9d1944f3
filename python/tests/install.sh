#!/bin/sh
# The README's install commands for the Python package, offline, against a CMake build:
#   pip install --no-build-isolation --target DIR ./python, and in a venv made with
#   --system-site-packages; each copy then imported and run once, outside the checkout.
# Usage: install.sh PYTHON BUILD. pip builds in the source folder it is given: it gets a copy of
# python/ and include/ in BUILD, so the checkout is never written to. --no-index: no download.
# Exits 77 (skipped) where pip, wheel or venv is missing (Debian: python3-pip, python3-wheel, python3-venv).
set -eu
py=$1
build=$(cd "$2" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
for module in pip wheel venv setuptools numpy sklearn; do
    "$py" -c "import $module" 2>/dev/null || { echo "python install: $py cannot import $module: skipped"; exit 77; }
done
work=$build/python-install
rm -rf "$work"
mkdir -p "$work/src"
cp -r "$src/python" "$src/include" "$work/src/"
rm -rf "$work/src/python/build" "$work/src/python"/*.egg-info
smoke='import numpy as np, parclust, sys
X = np.random.default_rng(0).normal(size=(500, 2)) + np.repeat([[0, 0], [8, 8]], 250, axis=0)
labels = parclust.KMeans(2, random_state=0).fit(X).labels_
assert len(set(labels[:250])) == 1 and len(set(labels[250:])) == 1 and labels[0] != labels[-1], labels
print("parclust from", parclust.__file__)'
PARCLUST_BUILD=$build "$py" -m pip install -q --no-build-isolation --no-index --target "$work/target" \
    "$work/src/python" 2>&1 | grep -v "Running pip as the 'root' user" || true
cd "$work"
preload=""
if grep -q "^PARCLUST_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then  # as run.sh
    preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS=detect_leaks=0
fi
PYTHONPATH=$work/target LD_PRELOAD=$preload "$py" -c "$smoke"
"$py" -m venv --system-site-packages "$work/venv"
PARCLUST_BUILD=$build "$work/venv/bin/python" -m pip install -q --no-build-isolation --no-index \
    "$work/src/python"
LD_PRELOAD=$preload "$work/venv/bin/python" -c "$smoke"
rm -rf "$work"
echo "python install: --target and venv installs work"
