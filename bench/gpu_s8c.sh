#!/bin/bash
# Third H200 run of the eighth session (2026-12-01): the paired softmax kernels take an
# unguarded branch where the row fills every slot of the group (cl/softmax.cl,
# CLN_REG_FULL). bench/lmprobe.c found a plain kernel of the same form 11 % faster than
# the library's on f32 1024x32768. The NVIDIA suite, the registers the kernels use, then
# clnorm bench --op softmax --batch 10 with and without the branch (-DCLN_NO_FULL), and
# PoCL 5's variants case in the background. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 150
CLNORM_CACHE_DIR=/tmp/verbose-cache CLNORM_BUILD_LOG=1 CLNORM_BUILD_OPTIONS=-cl-nv-verbose \
    /tmp/gb/tools/clnorm run --device nvidia --repeats 1 --rows 1024 --cols 32768 --dtype f32 \
    > "$OUT/verbose.log" 2>&1
grep -B1 -A3 "softmax_pair" "$OUT/verbose.log" | grep -E "Function properties|Used|spill" | head -20
for round in 1 2; do
    for dt in f32 bf16; do
        for opt in "" "-DCLN_NO_FULL"; do
            echo "== round $round $dt ${opt:-full branch}"
            CLNORM_BUILD_OPTIONS="$opt" /tmp/gb/tools/clnorm bench --device nvidia --op softmax \
                --batch 10 --dtype $dt 2>/dev/null | grep -E "^softmax"
        done
    done
done > "$OUT/full-branch.log" 2>&1
cat "$OUT/full-branch.log"
stamp bench
pocl5_bg 300 tests-pocl5.log -R "variants@pocl"
wait
pocl5_summary tests-pocl5.log
stamp done
