#!/bin/bash
# Last H200 run of the fourth session of 2026-11-30: the suite on the NVIDIA GPU and
# the PyTorch comparison with every change of the session (16-byte GPU loads, split
# scratch bound to in-order queues, NVIDIA groups up to 1024, 16-bit softmax long rows
# streaming), then the suite on PoCL 5 for the time left. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 120
/tmp/gb/tools/clnorm bench --device nvidia --batch 10 --dtype f32 --op rmsnorm 2>/dev/null |
    grep -E "copy|empty kernel" > "$OUT/launch.log"
cat "$OUT/launch.log"
torch_compare 150
pocl5_suite 300
stamp done
