#!/bin/bash
# Second H200 run of the sixth session of 2026-11-30: the NVIDIA suite with the new
# register kernels (16-bit softmax half form, one exp in the online register form,
# bf16 through cvt.rn.bf16x2, paired words of 2 or 4); the PyTorch comparison with
# words of 2 and of 4; what the bf16 conversion and the softmax forms each give;
# `clnorm tune --quick`. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 100
torch_compare 120 compare-h200-word2
CLNORM_PAIR_WORD=4 torch_compare 120 compare-h200-word4
{
for shape in "16384 1024" "4096 4096" "32768 8192"; do
    echo "== softmax bf16 $shape"
    sweep $shape bf16 softmax_three_pass <<'L'

CLNORM_BUILD_OPTIONS=-DCLN_PORTABLE_CVT
CLNORM_PAIR_WORD=4
CLNORM_VARIANT=reg
L
done
echo "== softmax bf16 16384 1024, full paired form"
sweep 16384 1024 bf16 softmax_three_pass <<'L'
CLNORM_ROW_THREADS=16
CLNORM_ROW_THREADS=16 CLNORM_PAIR_WORD=4
L
echo "== softmax bf16 4096 4096, full paired form"
sweep 4096 4096 bf16 softmax_three_pass <<'L'
CLNORM_ROW_THREADS=64
CLNORM_ROW_THREADS=64 CLNORM_PAIR_WORD=4
L
for shape in "4096 4096" "65536 1024"; do
    echo "== rmsnorm bf16 $shape"
    sweep $shape bf16 rmsnorm <<'L'

CLNORM_BUILD_OPTIONS=-DCLN_PORTABLE_CVT
CLNORM_PAIR_WORD=4
CLNORM_PAIR_WORD=4 CLNORM_WORK_GROUP=128
L
done
for shape in "256 4096" "1024 4096"; do
    echo "== softmax online f32 $shape"
    sweep $shape f32 softmax_online <<'L'

CLNORM_VARIANT=stream
L
done
} > "$OUT/sweep.log" 2>&1
cat "$OUT/sweep.log"
stamp swept
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 100 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 22 "$OUT/tune.log"
stamp done
