#!/bin/bash
# Fourth H200 run of the fourth session of 2026-11-30: every kernel's work-group limit
# as NVIDIA reports it (CLNORM_TRACE showed 256 for all of them, so the 512- and
# 1024-wide register plans never ran), with a lower register cap and on the
# local-memory path; the long rows on the local path, where a limit above 256 lets the
# register plans run; then the PyTorch comparison. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
D="/tmp/gb/tools/clnorm devices --kernels"
$D 2>&1 | sed -n '/NVIDIA H200/,/^platform/p' > "$OUT/kernels.log"
CLNORM_BUILD_OPTIONS=-cl-nv-maxrregcount=32 $D 2>&1 | sed -n '/NVIDIA H200/,/^platform/p' \
    > "$OUT/kernels-r32.log"
grep -E "kernels,|pair |_3pass|stats " "$OUT/kernels.log" "$OUT/kernels-r32.log" | cut -c1-120
stamp kernels
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 3"
for dt in f32 bf16; do
    for shape in "1024 32768" "8192 16384"; do
        echo "== $dt $shape local"
        CLNORM_REDUCTION=local CLNORM_TRACE=1 timeout 25 $R --dtype $dt --rows ${shape% *} \
            --cols ${shape#* } 2>&1 | grep -E "^(rmsnorm|softmax)|rror|re-planned" | sort -u
    done
done > "$OUT/local.log" 2>&1
cut -c1-20,21-75,76-200 "$OUT/local.log"
stamp local
torch_compare 170
