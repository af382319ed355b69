#!/bin/bash
# The paired register variant on the H200 (third session of 2026-11-30): the suite on
# the NVIDIA GPU, the bench grid with the plain and paired register forms forced, the
# registers each kernel uses, the host time per call at a launch-bound shape, and the
# PyTorch comparison. Results to $OUT (the device tool's folder), or ./gpu-out.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 240
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10"
for dt in f32 bf16; do
    for v in reg pair; do
        echo "== $dt CLNORM_VARIANT=$v"
        CLNORM_VARIANT=$v timeout 90 $B --dtype $dt 2>/dev/null | grep -E "^(softmax|rmsnorm) "
    done
done > "$OUT/variants.log" 2>&1
cut -c1-130 "$OUT/variants.log"
stamp variants
CLNORM_CACHE_DIR=off CLNORM_BUILD_LOG=1 CLNORM_BUILD_OPTIONS=-cl-nv-verbose timeout 60 \
    /tmp/gb/tools/clnorm run --device nvidia --rows 256 --cols 4096 --dtype ${VERBOSE_DTYPE:-f32} --repeats 1 \
    > "$OUT/nv-verbose.log" 2>&1
grep -B1 -E "Used|spill" "$OUT/nv-verbose.log" | grep -E "Compiling|Used|spill" | paste - - - | \
    sed -E 's/ptxas info *: //g' | cut -c1-200 | head -40
for shape in "4096 128" "16384 1024"; do
    set -- $shape
    timeout 60 /tmp/gb/tools/clnorm run --device nvidia --rows $1 --cols $2 2>&1 | tail -7
done > "$OUT/run-host-time.log"
cat "$OUT/run-host-time.log"
stamp diag
torch_compare 200
