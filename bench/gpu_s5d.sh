#!/bin/bash
# Fourth H200 run of the fifth session of 2026-11-30: the NVIDIA suite with the online
# register softmax taking each work-item's maximum first; 16-bit softmax with exp
# against exp2 of the scaled difference (-DCLN_EXP2=1), its 16-bit tests on NVIDIA;
# `clnorm tune --quick` again. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 110
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10 --op softmax --repeats 10"
for dt in bf16 f16; do
    $B --dtype $dt 2>/dev/null | grep -E "^softmax|copy" > "$OUT/bench-$dt-exp.log"
    CLNORM_BUILD_OPTIONS=-DCLN_EXP2=1 $B --dtype $dt 2>/dev/null | grep -E "^softmax|copy" \
        > "$OUT/bench-$dt-exp2.log"
done
for f in "$OUT"/bench-*.log; do echo "== $f"; awk '{print $1,$2,$3,$(NF-2),$(NF-1),$NF}' "$f"; done
stamp benched
(cd /tmp/gb && CLNORM_BUILD_OPTIONS=-DCLN_EXP2=1 CLNORM_CACHE_DIR=off timeout 100 ctest \
    -R "lowp|special_values|values_softmax" -L nvidia --output-on-failure > "$OUT/exp2-tests.log" 2>&1)
grep -E "tests passed|Failed|\*\*\*|FAIL" "$OUT/exp2-tests.log" | head
stamp exp2-tested
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 40 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 19 "$OUT/tune.log" | cut -c1-130
stamp done
