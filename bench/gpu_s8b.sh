#!/bin/bash
# Second H200 run of the eighth session (2026-12-01): the word-of-4 bf16 pack now built
# from the two-element pack (cl/dtype.cl), the NVIDIA suite and PoCL 5's four cases
# the first run's time limit cut; long rows in both softmax algorithms (is the online
# register form, whose exp needs no group barrier first, faster where one group fills
# an SM?); then tools/compare.py with the copy of each shape's own bytes. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
pocl5_bg 280 tests-pocl5.log -R "(lowp_special|rmsnorm_extreme|tuning_file|variants)@pocl"
nv_suite 150
{
for s in "f32 1024 32768" "f32 2048 16384" "f32 4096 8192" "f32 512 65536" "bf16 1024 32768" "f16 1024 32768" "bf16 2048 16384"; do
    set -- $s
    echo "== $1 $2x$3"
    timeout 60 /tmp/gb/tools/clnorm run --device nvidia --repeats 9 --rows $2 --cols $3 --dtype $1 2>&1 | grep -E "^softmax"
done
} > "$OUT/longrows.log" 2>&1
cat "$OUT/longrows.log"
stamp longrows
wait
pocl5_summary tests-pocl5.log
stamp pocl5
torch_compare 260
stamp done
