#!/bin/bash
# Third H200 run of the sixth session of 2026-11-30: the NVIDIA suite with words of 4
# by default, then forced shapes for the float32 shapes at 83-84 % of copy and the
# 16-bit softmax at 65 %, and the launch-bound split shapes twice. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 100
{
echo "== softmax f32 4096 4096"
sweep 4096 4096 f32 softmax_three_pass <<'L'

CLNORM_ROW_THREADS=256
CLNORM_ROW_THREADS=256 CLNORM_WORK_GROUP=512
CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
L
echo "== softmax f32 16384 1024"
sweep 16384 1024 f32 softmax_three_pass <<'L'

CLNORM_ROW_THREADS=64
CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
L
echo "== rmsnorm f32 4096 4096"
sweep 4096 4096 f32 rmsnorm <<'L'

CLNORM_ROW_THREADS=128
CLNORM_ROW_THREADS=256 CLNORM_WORK_GROUP=512
CLNORM_WORK_GROUP=1024
L
for shape in "16384 1024" "4096 4096"; do
echo "== softmax bf16 $shape"
sweep $shape bf16 softmax_three_pass <<'L'

CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
CLNORM_BUILD_OPTIONS=-cl-fast-relaxed-math
L
done
echo "== rmsnorm bf16 4096 4096"
sweep 4096 4096 bf16 rmsnorm <<'L'

CLNORM_ROW_THREADS=256
CLNORM_WORK_GROUP=128
CLNORM_WORK_GROUP=512
L
for shape in "8 262144" "1 1048576"; do
echo "== softmax f32 $shape"
sweep $shape f32 softmax_online <<'L'


CLNORM_REDUCTION=local
L
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp done
