#!/bin/bash
# Third H200 run of the fifth session of 2026-11-30: short rows fill every register
# slot (teams narrower than a warp), and `clnorm bench --batch` asks for an event only
# on a batch's last call. The PyTorch comparison, the NVIDIA suite, the host cost per
# call, `clnorm tune --quick`, then the PoCL 5 suite for the time left. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
torch_compare 170
nv_suite 100
gcc -O2 -Iinclude bench/hostcost.c -L/tmp/gb -lclnorm -lOpenCL -Wl,-rpath,/tmp/gb \
    -o /tmp/hostcost && /tmp/hostcost nvidia > "$OUT/hostcost.log" 2>&1
tail -n 5 "$OUT/hostcost.log"
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 60 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 22 "$OUT/tune.log"
stamp tuned
pocl5_suite 470
stamp done
