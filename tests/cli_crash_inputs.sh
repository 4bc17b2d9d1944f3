#!/bin/sh
# Inputs read within bounds (issue 18, item 3): text is parsed as it streams in, a block at a time, so
# binary content is refused at its first block and an input that never ends stops at the memory limit
# with a message naming it, instead of growing until the kernel kills the run. FIFOs are fed forever
# (or fed a first block and then held open): a reader that read its input whole would never return,
# and `timeout` would end it (exit 124, a failure here).
# Usage: cli_crash_inputs.sh PARCLUST DIR
set -u
BIN=$1
DIR=$2
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR" || exit 1
failures=0
writers=""
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
stop_writers() {
    for w in $writers; do kill "$w" 2>/dev/null; done
    writers=""
}
trap stop_writers EXIT

# expect NAME RC PATTERN CMD...: the run ends (within 120 s: sanitizers on a loaded machine) with exit RC and PATTERN in its stderr.
expect() {
    name=$1 want_rc=$2 pattern=$3
    shift 3
    timeout 120 "$@" >out.txt 2>err.txt
    rc=$?
    if [ "$rc" != "$want_rc" ] || ! cat err.txt out.txt | grep -q -- "$pattern"; then
        fail "$name: exit $rc (expected $want_rc), stderr: $(head -c 400 err.txt)"
    else
        echo "  $name: $(cat err.txt)"
    fi
}

# A FIFO fed forever with rows of 2 values: the values' memory limit (16 MiB from the environment)
# is reached at the row after 16 MiB / (2 x 4 bytes) rows: line 2097153.
mkfifo rows.csv
yes 1.5,2.25 >rows.csv 2>/dev/null &
writers="$writers $!"
expect "rows fed forever" 1 "line 2097153: the points read so far exceed the memory limit, 16.0 MiB (from PARCLUST_MAX_MEMORY)" \
    env PARCLUST_MAX_MEMORY=16M "$BIN" kmeans rows.csv -k 2
stop_writers

# Comments fed forever hold nothing, yet end: at 4 x the limit of text read.
mkfifo comments.csv
yes '# nothing here' >comments.csv 2>/dev/null &
writers="$writers $!"
expect "comments fed forever" 1 "the bytes of text read so far (4 times the values' limit) exceed the memory limit, 4.0 MiB" \
    env PARCLUST_MAX_MEMORY=4M "$BIN" meanshift comments.csv --bandwidth 1
stop_writers

# One line that never ends: refused at 64 MiB of it.
mkfifo long.csv
yes 1, | tr -d '\n' >long.csv 2>/dev/null &
writers="$writers $!"
expect "a line that never ends" 1 "line 1 is longer than 64 MiB" "$BIN" hca long.csv
stop_writers

# /dev/zero, and the labels of score: binary at the first block.
expect "/dev/zero" 1 "/dev/zero: line 1 contains a NUL byte (offset 0): a binary file" "$BIN" kmeans /dev/zero -k 2
printf '0\n1\n' >labels.csv
expect "/dev/zero as labels" 1 "line 1 contains a NUL byte" "$BIN" score --truth labels.csv --pred /dev/zero

# A first block of binary, then the writer holds the FIFO open: refused from that block alone.
/usr/bin/python3 -c "import sys; sys.stdout.buffer.write(b'x,y\n1,2\n' + bytes(range(256)) * 8192)" >binary.bin
mkfifo binary.csv
{
    cat binary.bin
    sleep 60
} >binary.csv 2>/dev/null &
writers="$writers $!"
expect "binary then held open" 1 "line 3 contains a NUL byte (offset 8): a binary file" "$BIN" kmeans binary.csv -k 2
stop_writers

# .npy labels fed forever: a header, then data without end (the memory limit), or no header (at once).
/usr/bin/python3 -c "
import sys
h = \"{'descr': '<i4', 'fortran_order': False, 'shape': (10,), }\"
h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\n'
sys.stdout.buffer.write(b'\x93NUMPY\x01\x00' + len(h).to_bytes(2, 'little') + h.encode())" >header.bin
mkfifo endless.npy
{
    cat header.bin
    cat /dev/zero
} >endless.npy 2>/dev/null &
writers="$writers $!"
expect ".npy labels fed forever" 1 "endless.npy: the file's bytes exceed the memory limit, 4.0 MiB (from PARCLUST_MAX_MEMORY)" \
    env PARCLUST_MAX_MEMORY=4M "$BIN" score --truth labels.csv --pred endless.npy
stop_writers
mkfifo zeros.npy
cat /dev/zero >zeros.npy 2>/dev/null &
writers="$writers $!"
expect ".npy labels of zeros" 1 "zeros.npy: not a NumPy .npy file" "$BIN" score --truth labels.csv --pred zeros.npy
stop_writers

# .npy points are mapped: a FIFO or device is refused before any read.
mkfifo points.npy
expect ".npy points from a FIFO" 1 "points.npy: not a regular file" "$BIN" kmeans points.npy -k 2

# The limit's setting is checked, never ignored.
printf '1,2\n3,4\n' >small.csv
expect "PARCLUST_MAX_MEMORY not a size" 1 "PARCLUST_MAX_MEMORY='lots' is not a size" \
    env PARCLUST_MAX_MEMORY=lots "$BIN" kmeans small.csv -k 1
# ... and a file within it is read as before.
expect "within the limit" 0 "k-means: 2 points" env PARCLUST_MAX_MEMORY=1M "$BIN" kmeans small.csv -k 1

if [ $failures -ne 0 ]; then
    echo "cli_crash_inputs: $failures failure(s)"
    exit 1
fi
echo "cli_crash_inputs: passed"
