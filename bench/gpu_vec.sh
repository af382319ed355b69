#!/bin/bash
# First H200 run of the fourth session of 2026-11-30: 16-byte vector loads in the GPU
# streaming and split loops (cl/rows.cl). The suite on the NVIDIA GPU; the bench grid
# with the old scalar loops (CLN_VEC=1) against the vector ones; split and stream
# plans on the long and the few-row shapes; the split online softmax of 16x262144
# that the tuner once timed at 41 ms on the shuffle path. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 180
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10"
for run in "f32 -UCLN_VEC -DCLN_VEC=1" "f32" "bf16"; do
    set -- $run
    dt=$1; shift
    echo "== $dt build options '$*'"
    CLNORM_BUILD_OPTIONS="$*" timeout 70 $B --dtype $dt 2>/dev/null | grep -E "^(softmax|rmsnorm|add_) "
done > "$OUT/vec.log" 2>&1
cut -c1-40,92-130 "$OUT/vec.log"
stamp vec
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 3"
long='"" CLNORM_VARIANT=stream "CLNORM_VARIANT=split CLNORM_SPLIT=2" "CLNORM_VARIANT=split CLNORM_SPLIT=4"'
few='"" "CLNORM_VARIANT=split CLNORM_SPLIT=16" "CLNORM_VARIANT=split CLNORM_SPLIT=128" "CLNORM_VARIANT=split CLNORM_SPLIT=1024"'
for job in "1024 32768|$long" "8192 16384|$long" "8 262144|$few" "1 1048576|$few" "64 128256|$few" \
           '16 262144|"" CLNORM_REDUCTION=local'; do
    shape=${job%%|*}
    eval "set -- ${job#*|}"
    for cfg in "$@"; do
        echo "== $shape $cfg"
        env $cfg timeout 25 $R --rows ${shape% *} --cols ${shape#* } 2>&1 | grep -E "^(rmsnorm|softmax)|rror"
    done
done > "$OUT/shapes.log" 2>&1
cut -c1-20,21-75,76-130 "$OUT/shapes.log"
stamp done
