#!/bin/bash
# Second H200 run of the seventh session of 2026-11-30: a program per kernel is now
# NVIDIA's default where the disk cache is on. The NVIDIA suite (its disk-cache cases
# run that way), PoCL 5's disk-cache cases and programs_one beside it, start-up times,
# tools/compare.py against PyTorch (f32, bf16) and `clnorm tune --quick`. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
(cd /tmp/gb && timeout 400 ctest -R "(disk_cache|programs_one|tuning_file|warmup).*@pocl" -j8 \
    --timeout 380 --output-on-failure > "$OUT/tests-pocl5.log" 2>&1) &
nv_suite 150
{ startup nvidia; SU_ENV=CLNORM_PROGRAMS=all startup nvidia; } > "$OUT/startup.log" 2>&1
cat "$OUT/startup.log"
stamp startup
wait
grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/tests-pocl5.log" | tail -12
stamp pocl5
torch_compare 150
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 80 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 4 "$OUT/tune.log"
stamp done
