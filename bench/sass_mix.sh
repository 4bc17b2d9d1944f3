#!/bin/sh
# What limits the fast mean shift kernel: the compiler's resource report (registers, shared memory,
# spills) and the SASS instruction mix of fast_dot_kernel<3, false> (the D = 3 gaussian path), whose
# unrolled inner loop dominates the count. usage: sh bench/sass_mix.sh BUILD_DIR
LIB=${1:-build-gpu}/libparclust.a
echo "resource usage (cuobjdump -res-usage):"
cuobjdump -res-usage "$LIB" 2>/dev/null | grep -A1 -E "fast_dot_kernel|fast_direct_kernelILi3ELi0E|tiled_kernelILi3ELi0E|naive_kernelILi3ELi0E" |
    grep -E "Function|REG" | sed 's/^ *//' | paste - - | sed 's/Function \([^ ]*\):/\1/' | cut -c1-200
echo
echo "SASS instruction mix of fast_dot_kernel<3, false>:"
cuobjdump -sass "$LIB" 2>/dev/null |
    awk '/Function : .*fast_dot_kernelILi3ELb0E/{on=1; next} /Function :/{on=0} on' |
    grep -oE '^ +/\*[0-9a-f]{4}\*/ +[A-Z][A-Z0-9_.]*' | awk '{print $2}' | sed 's/\..*//' |
    sort | uniq -c | sort -rn | head -20
