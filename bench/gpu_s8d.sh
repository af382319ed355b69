#!/bin/bash
# Fourth H200 run of the eighth session (2026-12-01): the unguarded slot loops, kept for
# float32 only in teams of 512 or more (run 3: 1-2 % slower in smaller teams). The
# NVIDIA suite, tools/compare.py (f32 and bf16 against PyTorch, the copy at each
# shape's size), and the softmax grid in both dtypes. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 120
torch_compare 150
for dt in f32 bf16; do
    /tmp/gb/tools/clnorm bench --device nvidia --op softmax --batch 10 --dtype $dt 2>/dev/null |
        grep -E "^softmax|copy:"
done > "$OUT/softmax-grid.log" 2>&1
cat "$OUT/softmax-grid.log"
stamp done
