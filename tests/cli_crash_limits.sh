#!/bin/sh
# Limits stated and enforced (issue 18, item 4): every number `parclust info` lists as a limit is read
# from its listing, and a run just beyond it must be refused (exit 1 or 2) with that same number in its
# message; one at the limit, where cheap, must not be refused for it.
# Usage: cli_crash_limits.sh PARCLUST DIR
set -u
BIN=$1
DIR=$2
PY=/usr/bin/python3
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR" || exit 1
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
"$BIN" info >info.txt || fail "parclust info: exit $?"
# number LINE_PREFIX REGEX: the number the listing gives (the regex's \(group\))
number() {
    grep "^  $1:" info.txt | sed -n "s/$2/\1/p" | head -n 1
}
# refused NAME NUMBER ARGS...: exit 1 or 2 and NUMBER in the one-line message
refused() {
    name=$1 num=$2
    shift 2
    "$BIN" "$@" >out.txt 2>err.txt
    rc=$?
    if [ -z "$num" ] || { [ $rc != 1 ] && [ $rc != 2 ]; } || ! grep -q "error: .*$num" err.txt; then
        fail "$name: limit '$num' from info, exit $rc, stderr: $(head -c 300 err.txt)"
    else
        echo "  $name ($num): $(cat err.txt)"
    fi
}
accepted() {
    name=$1
    shift
    "$BIN" "$@" >out.txt 2>err.txt || fail "$name: refused at the limit: $(head -c 300 err.txt)"
}

# memory: the listing's bytes; one value more than they hold is refused, as many as they hold are not
PARCLUST_MAX_MEMORY=64K "$BIN" info >info.txt
mem=$(number memory '^  memory: \([0-9]*\) bytes.*')
[ "$mem" = 65536 ] || fail "memory: PARCLUST_MAX_MEMORY=64K listed as '$mem' bytes"
awk -v n=$((mem / 4)) 'BEGIN { for (i = 0; i < n; i++) print i % 7 }' >at.csv
awk -v n=$((mem / 4 + 1)) 'BEGIN { for (i = 0; i < n; i++) print i % 7 }' >beyond.csv
export PARCLUST_MAX_MEMORY=64K
refused "memory" "64.0 KiB" kmeans beyond.csv -k 2
accepted "memory" kmeans at.csv -k 2
unset PARCLUST_MAX_MEMORY
"$BIN" info >info.txt

hca_dim=$(number hca '^  hca: 1 to \([0-9]*\) dimensions.*')
hca_m=$(number hca '.*-m 2 to \([0-9]*\).*')
km_k=$(number kmeans '.*-k 1 to \([0-9]*\).*')
km_dim=$(number kmeans '.*up to \([0-9]*\) dimensions.*')
gen_n=$(number generate '.*--n 1 to \([0-9]*\),.*')
gen_dim=$(number generate '.*--dim 1 to \([0-9]*\),.*')
seg_bands=$(number segment '^  segment: up to \([0-9]*\) bands.*')
seg_hca=$(number segment '.*(HCA: \([0-9]*\)).*')
seg_byte=$(number segment '.*--ot Byte up to \([0-9]*\) clusters.*')

refused "hca -m" "$hca_m" hca at.csv -m $((hca_m + 1))
refused "kmeans -k" "$km_k" kmeans at.csv -k $((km_k + 1))
refused "generate --n" "$gen_n" generate blobs --n $((gen_n + 1)) -o g.csv
refused "generate --dim" "$gen_dim" generate blobs --dim $((gen_dim + 1)) -o g.csv
refused "generate --n x --dim" "2^31" generate blobs --n 2000000 --dim 1074 -o g.csv
gen_cd=$(number generate '.*--clusters x --dim up to \([0-9]*\).*')
refused "generate --clusters x --dim" "$gen_cd" generate blobs --n 3 --clusters 2 --dim "$gen_cd" -o g.npy
accepted "generate --dim" generate blobs --n 3 --clusters 1 --dim "$gen_dim" -o g.npy

if $PY -c "import numpy" 2>/dev/null; then
    $PY - "$hca_dim" "$km_dim" "$seg_bands" "$seg_hca" <<'EOF'
import sys
import numpy as np
hd, kd, sb, sh = (int(v) for v in sys.argv[1:5])
rng = np.random.default_rng(1)
np.save('hca_at.npy', rng.random((40, hd), dtype=np.float32))
np.save('hca_beyond.npy', rng.random((40, hd + 1), dtype=np.float32))
np.save('hca_m5.npy', rng.random((40, 5), dtype=np.float32))
np.save('km_at.npy', rng.random((4, kd), dtype=np.float32))
np.save('km_beyond.npy', rng.random((4, kd + 1), dtype=np.float32))
np.save('img_bands.npy', rng.integers(0, 255, (3, 3, sb + 1), dtype=np.uint8))
np.save('img_hca.npy', rng.integers(0, 255, (3, 3, sh + 1), dtype=np.uint8))
np.save('img.npy', rng.integers(0, 255, (20, 20, 2), dtype=np.uint8))
EOF
    refused "hca dimensions" "1 to $hca_dim dimensions" hca hca_beyond.npy
    accepted "hca dimensions" hca hca_at.npy --clusters 2
    # m^d beyond 64-bit cell indices: 65536^5 = 2^80
    refused "hca m^d" "64-bit" hca hca_m5.npy -m "$hca_m"
    refused "kmeans dimensions" "up to $km_dim dimensions" kmeans km_beyond.npy -k 2
    accepted "kmeans dimensions" kmeans km_at.npy -k 2
    refused "segment bands" "at most $seg_bands" segment img_bands.npy -k 2 -o l.npy
    refused "segment HCA bands" "at most $seg_hca bands" segment img_hca.npy -k 2 -o l.npy
    refused "segment --ot Byte" "at most $seg_byte clusters" segment img.npy --algorithm kmeans -k $((seg_byte + 1)) \
        --ot Byte -o l.tif
else
    echo "  (.npy cases skipped: no NumPy for $PY)"
fi

if [ $failures -ne 0 ]; then
    echo "cli_crash_limits: $failures failure(s)"
    exit 1
fi
echo "cli_crash_limits: passed"
