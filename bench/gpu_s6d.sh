#!/bin/bash
# Last H200 run of the sixth session of 2026-11-30: the NVIDIA suite, the PyTorch
# comparison and `clnorm tune --quick` with this session's plans, then the PoCL 5
# cases that force the changed kernels (words of 4, the half forms, the online
# register form). Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 100
torch_compare 130
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 70 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 4 "$OUT/tune.log"
stamp tuned
(cd /tmp/gb && timeout 230 ctest -R "(variants|add_rmsnorm_views|add_rmsnorm_values|lowp_special|values_softmax_online|values_lowp)@pocl" \
    -j16 --timeout 220 --output-on-failure > "$OUT/tests-pocl5.log" 2>&1)
grep -E "tests passed|Failed|\*\*\*|Passed" "$OUT/tests-pocl5.log" | tail -12
stamp done
