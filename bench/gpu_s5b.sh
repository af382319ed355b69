#!/bin/bash
# Second H200 run of the fifth session of 2026-11-30: where a small call's host time
# goes on NVIDIA (bench/hostcost.c), and short-row plans with 16 elements per
# work-item. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
gcc -O2 -Iinclude bench/hostcost.c -L/tmp/gb -lclnorm -lOpenCL -Wl,-rpath,/tmp/gb \
    -o /tmp/hostcost && /tmp/hostcost nvidia > "$OUT/hostcost.log" 2>&1
cat "$OUT/hostcost.log"
stamp hostcost
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 5"
sweep() { # rows cols dtype op-pattern, then env settings per line on stdin
    while read -r envs; do
        printf '%-48s ' "${envs:-built-in}"
        env $envs timeout 20 $R --rows $1 --cols $2 --dtype $3 2>&1 |
            grep -E "^$4 " | cut -c20-200 | tr -s ' ' | head -1
    done
}
{
for shape in "8192 128" "65536 128" "16384 256" "65536 256" "16384 512"; do
  for op in softmax_three_pass rmsnorm; do
    echo "== $op f32 $shape"
    sweep $shape f32 $op <<'L'

CLNORM_ROW_THREADS=4
CLNORM_ROW_THREADS=8
CLNORM_ROW_THREADS=16
CLNORM_ROW_THREADS=8 CLNORM_VARIANT=stream
CLNORM_ROW_THREADS=16 CLNORM_VARIANT=stream
CLNORM_ROW_THREADS=8 CLNORM_WORK_GROUP=128
CLNORM_ROW_THREADS=8 CLNORM_REDUCTION=local
L
  done
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp swept
