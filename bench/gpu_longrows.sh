#!/bin/bash
# Third H200 run of the fourth session of 2026-11-30: why the register plans of the
# long rows re-plan to streaming (CLNORM_TRACE, register counts from -cl-nv-verbose),
# whether streaming groups of 512 or 1024 (fewer rows in flight, so the second read
# finds the row in L2) beat groups of 256 there, then the suite on PoCL 5 for the
# time left. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 3"
for dt in f32 bf16; do
    for shape in "1024 32768" "8192 16384"; do
        CLNORM_TRACE=1 timeout 25 $R --dtype $dt --rows ${shape% *} --cols ${shape#* } 2>&1 |
            grep "^clnorm:" | sort -u
    done
done > "$OUT/trace.log" 2>&1
cat "$OUT/trace.log"
CLNORM_CACHE_DIR=off CLNORM_BUILD_OPTIONS=-cl-nv-verbose CLNORM_BUILD_LOG=1 \
    timeout 60 $R --rows 4 --cols 64 --repeats 1 > "$OUT/verbose.log" 2>&1
grep -A4 "Compiling entry function" "$OUT/verbose.log" | grep -E "entry|Used|spill" |
    sed 's/ptxas info    : //; s/ptxas         .//' | paste - - - | cut -c1-160
stamp trace
for dt in f32 bf16; do
    for shape in "1024 32768" "8192 16384" "64 128256"; do
        for cfg in "" "CLNORM_VARIANT=stream CLNORM_WORK_GROUP=512 CLNORM_ROW_THREADS=512" \
                   "CLNORM_VARIANT=stream CLNORM_WORK_GROUP=1024 CLNORM_ROW_THREADS=1024"; do
            echo "== $dt $shape $cfg"
            env $cfg timeout 25 $R --dtype $dt --rows ${shape% *} --cols ${shape#* } 2>&1 |
                grep -E "^(rmsnorm|softmax)|rror"
        done
    done
done > "$OUT/stream-wg.log" 2>&1
cut -c1-20,21-75,76-130 "$OUT/stream-wg.log"
stamp stream-wg
pocl5_suite 560
stamp done
