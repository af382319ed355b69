#!/bin/bash
# Fifth H200 run of the fourth session of 2026-11-30: NVIDIA reports 256 as every
# kernel's work-group limit but runs 1024 (bench/wgprobe.c), and clnorm now takes the
# device's limit there. The suite on the NVIDIA GPU; the bench grid with groups up to
# 1024 against CLNORM_MAX_WORK_GROUP=256 (what ran before); the PyTorch comparison.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 150
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10"
for dt in f32 bf16; do
    for cap in 256 ""; do
        echo "== $dt CLNORM_MAX_WORK_GROUP=$cap"
        env ${cap:+CLNORM_MAX_WORK_GROUP=$cap} timeout 70 $B --dtype $dt 2>/dev/null | grep -E "^(softmax|rmsnorm) "
    done
done > "$OUT/wide.log" 2>&1
cut -c1-40,50-140 "$OUT/wide.log"
stamp wide
torch_compare 170
