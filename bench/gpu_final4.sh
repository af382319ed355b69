#!/bin/bash
# Last H200 run of the fourth session of 2026-11-30: the suite on the NVIDIA GPU and
# the PyTorch comparison with every change of the session (16-byte GPU loads, split
# scratch bound to in-order queues, NVIDIA groups up to 1024, 16-bit softmax long rows
# streaming), then the suite on PoCL 5 for the time left. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 120
/tmp/gb/tools/clnorm bench --device nvidia --batch 10 --dtype f32 2>/dev/null | head -3 > "$OUT/launch.log"
cat "$OUT/launch.log"
PYTHONUNBUFFERED=1 timeout 150 python3 tools/compare.py --clnorm /tmp/gb/tools/clnorm --device nvidia \
    --torch-device cuda --dtype f32,bf16 --batch 10 --out "$OUT/compare-h200" \
    > "$OUT/compare-h200.log" 2>&1
tail -n 34 "$OUT/compare-h200.log"
stamp compared
left=$(( 300 - ($(date +%s) - S) ))
(cd /tmp/gb && timeout $left ctest -L pocl -j16 --timeout 300 --output-on-failure \
    > "$OUT/tests-pocl5.log" 2>&1)
grep -E "tests passed|Failed|\*\*\*|Timeout|Passed" "$OUT/tests-pocl5.log" | tail -30
stamp done
