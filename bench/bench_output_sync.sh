#!/bin/sh
# What writing outputs out to disk costs (issue 18 item 2): hca writes the labels of 10^8 uint8 points
# (a 400 MB int32 .npy) through the staging commit; strace times the phase from the staging file's
# creation to the end of the last rename or fsync, and the time spent waiting in fsync.
# Usage: sh bench/bench_output_sync.sh PARCLUST [RUNS] [DIR]   (needs strace and /usr/bin/python3 with NumPy)
set -eu
BIN=$1
RUNS=${2:-3}
DIR=${3:-bench-output-sync}
mkdir -p "$DIR"
cd "$DIR"
[ -f pts.npy ] || /usr/bin/python3 -c "
import numpy as np
np.save('pts.npy', np.random.default_rng(1).integers(0, 255, size=(100_000_000, 1), dtype=np.uint8))"
i=0
while [ $i -lt "$RUNS" ]; do
    rm -f labels.npy
    sync
    strace -f -ttt -T -e trace=openat,write,fsync,sync_file_range,rename,renameat2 -o trace.log \
        "$BIN" hca pts.npy -m 32 --clusters 5 --labels labels.npy >/dev/null
    /usr/bin/python3 - <<'P'
import re
t0 = t1 = None
fs = 0.0
for l in open('trace.log'):
    f = l.split()
    ts = float(f[1])
    m = re.search(r'<([0-9.]+)>\s*$', l)
    d = float(m.group(1)) if m else 0
    if 'openat' in l and '.pc-' in l and t0 is None:
        t0 = ts
    if t0 is not None and re.search(r'fsync|rename', l):
        t1 = ts + d
    if 'fsync(' in l:
        fs += d
print("labels written and committed in %.3f s, %.3f s of it waiting in fsync" % (t1 - t0, fs))
P
    i=$((i + 1))
done
rm -f trace.log labels.npy
