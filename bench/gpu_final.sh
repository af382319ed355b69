#!/bin/bash
# Last H200 run of the third session of 2026-11-30: the suite on the NVIDIA GPU with
# RMSNorm's two paired kernel sizes, split and streaming plans forced on the two
# long-row shapes the register forms serve worst, and the PyTorch comparison.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 150
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 3"
for shape in "1024 32768" "8192 16384"; do
    set -- $shape
    for cfg in "" "CLNORM_VARIANT=split CLNORM_SPLIT=2" "CLNORM_VARIANT=split CLNORM_SPLIT=4" \
               "CLNORM_VARIANT=split CLNORM_SPLIT=8" "CLNORM_VARIANT=stream"; do
        echo "== $1x$2 $cfg"
        env $cfg timeout 40 $R --rows $1 --cols $2 2>&1 | grep -E "^(rmsnorm|softmax)"
    done
done > "$OUT/long-rows.log" 2>&1
cut -c1-20,21-75,76-130 "$OUT/long-rows.log"
stamp long-rows
torch_compare 150
