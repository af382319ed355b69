#!/bin/bash
# Third H200 run of the seventh session of 2026-11-30: the floor of a process start
# on each device without clnorm (bench/startup/floor.c: a context and queue, then
# also a one-line kernel), beside the README example's start-up on PoCL 5; and the
# float32 RMSNorm 4096x4096 plans once more. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
gcc -O2 -o /tmp/floor bench/startup/floor.c -lOpenCL
{
for dev in NVIDIA cpu; do
    for kind in context kernel; do
        for i in 1 2 3; do
            rm -rf /tmp/fl-p /tmp/fl-nv
            t0=$(date +%s.%N)
            POCL_CACHE_DIR=/tmp/fl-p CUDA_CACHE_PATH=/tmp/fl-nv /tmp/floor $dev $kind > /dev/null ||
                echo "floor failed on $dev"
            echo "floor $dev $kind empty-caches $(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $t0}") s"
        done
    done
done
} > "$OUT/floor.log" 2>&1
cat "$OUT/floor.log"
stamp floor
startup pocl > "$OUT/startup-pocl5.log" 2>&1
cat "$OUT/startup-pocl5.log"
stamp startup
echo "== rmsnorm f32 4096 4096" > "$OUT/sweep.log"
sweep 4096 4096 f32 rmsnorm >> "$OUT/sweep.log" 2>&1 <<'L'

CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
CLNORM_WORK_GROUP=1024
CLNORM_PAIR_WORD=2
CLNORM_VARIANT=reg

L
cat "$OUT/sweep.log"
stamp done
