#!/bin/bash
# First H200 run of the sixth session of 2026-11-30: the suites on both devices with
# the fifth session's last changes (CPU long-row plans, PoCL one-kernel programs, the
# probe file), start-up times, and where 16-bit and the 82 % float32 shapes lose time,
# with the knobs that exist. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
# PoCL 5's slowest case runs beside everything else, on one core.
(cd /tmp/gb && ctest -R "rmsnorm_extreme@pocl" --timeout 560 --output-on-failure \
    > "$OUT/tests-pocl5-extreme.log" 2>&1) &
nv_suite 150
{
for shape in "4096 4096" "65536 1024"; do
    echo "== rmsnorm bf16 $shape"
    sweep $shape bf16 rmsnorm <<'L'

CLNORM_ROW_THREADS=16
CLNORM_ROW_THREADS=32
CLNORM_ROW_THREADS=64
CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
CLNORM_VARIANT=reg
CLNORM_VARIANT=stream
L
done
for shape in "16384 1024" "4096 4096"; do
    echo "== softmax bf16 $shape"
    sweep $shape bf16 softmax_three_pass <<'L'

CLNORM_VARIANT=pair
CLNORM_VARIANT=reg
CLNORM_VARIANT=stream
CLNORM_ROW_THREADS=16
CLNORM_ROW_THREADS=64
CLNORM_WORK_GROUP=128
CLNORM_BUILD_OPTIONS=-cl-fast-relaxed-math
CLNORM_BUILD_OPTIONS=-cl-fast-relaxed-math CLNORM_VARIANT=pair
L
    echo "== softmax f32 $shape"
    sweep $shape f32 softmax_three_pass <<'L'

CLNORM_BUILD_OPTIONS=-cl-fast-relaxed-math
CLNORM_WORK_GROUP=128
L
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp swept
{ startup nvidia; startup pocl; } > "$OUT/startup.log" 2>&1
cat "$OUT/startup.log"
stamp startup
pocl5_suite 585
wait
tail -n 4 "$OUT/tests-pocl5-extreme.log"
stamp done
