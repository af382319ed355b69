#!/bin/bash
# Fifth H200 run of the seventh session of 2026-11-30: 16-bit softmax rows that need a
# register team over 256 now stay paired (src/plan.c). The NVIDIA suite with that
# plan, then the long 16-bit rows, built-in against streaming. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 150
{
for dt in bf16 f16; do
    for shape in "1024 32768" "512 65536" "2048 20000"; do
        for op in softmax_three_pass softmax_online softmax_auto; do
            echo "== $op $dt $shape"
            sweep $shape $dt $op <<'L'

CLNORM_VARIANT=stream
L
        done
    done
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp done
