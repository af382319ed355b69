#!/bin/bash
# First H200 run of the fifth session of 2026-11-30: the suite on the NVIDIA GPU with
# the fourth session's last changes; forced plans for the short-row softmax
# (4096x128 at 0.49x PyTorch) and the 76 % shapes; `clnorm tune --quick` against the
# built-in plans; then the suite on PoCL 5 for the time left. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 150
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 5"
sweep() { # rows cols dtype op-pattern, then env settings per line on stdin
    while read -r envs; do
        printf '%-60s ' "${envs:-built-in}"
        env $envs CLNORM_TRACE=0 timeout 20 $R --rows $1 --cols $2 --dtype $3 2>&1 |
            grep -E "^$4 " | cut -c1-100 | tr -s ' ' | head -1
    done
}
{
for shape in "4096 128" "16384 128" "65536 128" "4096 256"; do
    echo "== softmax f32 $shape"
    sweep $shape f32 softmax_three_pass <<'L'

CLNORM_ROW_THREADS=4
CLNORM_ROW_THREADS=8
CLNORM_ROW_THREADS=32
CLNORM_VARIANT=reg
CLNORM_VARIANT=stream
CLNORM_WORK_GROUP=64
CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
CLNORM_WORK_GROUP=64 CLNORM_ROW_THREADS=8
CLNORM_WORK_GROUP=128 CLNORM_ROW_THREADS=8
CLNORM_REDUCTION=local
L
done
echo "== rmsnorm f32 4096 128"
sweep 4096 128 f32 rmsnorm <<'L'

CLNORM_ROW_THREADS=8
CLNORM_WORK_GROUP=64
L
for shape in "16384 1024" "4096 4096"; do
    echo "== softmax f32 $shape"
    sweep $shape f32 softmax_three_pass <<'L'

CLNORM_ROW_THREADS=64
CLNORM_ROW_THREADS=256
CLNORM_VARIANT=reg
CLNORM_VARIANT=stream
CLNORM_WORK_GROUP=512
CLNORM_WORK_GROUP=1024
L
    echo "== rmsnorm f32 $shape"
    sweep $shape f32 rmsnorm <<'L'

CLNORM_ROW_THREADS=64
CLNORM_ROW_THREADS=256
CLNORM_VARIANT=reg
CLNORM_VARIANT=stream
CLNORM_WORK_GROUP=512
L
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp swept
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 150 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 25 "$OUT/tune.log"
stamp tuned
pocl5_suite 570
stamp done
