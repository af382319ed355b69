#!/bin/bash
# Second H200 run of the seventh session of 2026-11-30: a program per kernel is now
# NVIDIA's default where the disk cache is on. The NVIDIA suite (its disk-cache cases
# run that way), PoCL 5's disk-cache cases and programs_one beside it, start-up times,
# tools/compare.py against PyTorch (f32, bf16) and `clnorm tune --quick`. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
pocl5_bg 400 tests-pocl5.log -R "(disk_cache|programs_one|tuning_file|warmup).*@pocl"
nv_suite 150
{ startup nvidia; SU_ENV=CLNORM_PROGRAMS=all startup nvidia; } > "$OUT/startup.log" 2>&1
cat "$OUT/startup.log"
stamp startup
wait
pocl5_summary tests-pocl5.log
stamp pocl5
torch_compare 150
CLNORM_CACHE_DIR=/tmp/tune-cache timeout 80 /tmp/gb/tools/clnorm tune --device nvidia --quick \
    > "$OUT/tune.log" 2>&1
tail -n 4 "$OUT/tune.log"
stamp done
