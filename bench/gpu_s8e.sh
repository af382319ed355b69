#!/bin/bash
# Fifth H200 run of the eighth session (2026-12-01): float32's half paired kernel has no
# unguarded copy at all (-run6-: one never taken cost 3 %). The NVIDIA suite, the
# float32 softmax grid, then tools/compare.py. Results to $OUT.
# Not run in the eighth session: too little device time was left to start a machine.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 100
/tmp/gb/tools/clnorm bench --device nvidia --op softmax --batch 10 --dtype f32 2>/dev/null |
    grep -E "^softmax|copy:" > "$OUT/softmax-grid.log" 2>&1
cat "$OUT/softmax-grid.log"
stamp grid
torch_compare 90
stamp done
