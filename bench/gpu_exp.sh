#!/bin/bash
# The H200 run after the paired form became the default and NVIDIA's exp became
# ex2.approx with a split product (third session of 2026-11-30): the suite on the
# NVIDIA GPU, the bench grid against the exact exp and against lower register caps,
# accuracy at two shapes, the PyTorch comparison, then the suite on PoCL 5 for the
# time left. Results to $OUT (the device tool's folder), or ./gpu-out. (The
# ex2.approx exp and its CLN_EXACT_EXP switch were removed after this run.)
. "$(dirname "$0")/gpu_common.sh"
nv_suite 240
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10"
for dt in f32 bf16; do
    for opt in "" "-DCLN_EXACT_EXP" "-cl-nv-maxrregcount=40" "-cl-nv-maxrregcount=48"; do
        echo "== $dt build options '$opt'"
        CLNORM_BUILD_OPTIONS="$opt" timeout 90 $B --dtype $dt 2>/dev/null | grep -E "^(softmax|rmsnorm) "
    done
done > "$OUT/options.log" 2>&1
cut -c1-40,92-130 "$OUT/options.log"
stamp options
for dt in f32 bf16 f16; do
    timeout 60 /tmp/gb/tools/clnorm run --device nvidia --rows 1000 --cols 4097 --dtype $dt --repeats 1 2>&1 | tail -7
done > "$OUT/run-accuracy.log"
cat "$OUT/run-accuracy.log"
stamp accuracy
torch_compare 200
pocl5_suite 570
stamp done
