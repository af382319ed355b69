#!/bin/bash
# Second H200 run of the ninth session (2026-12-01). Run 1 measured tools/compare.py
# while the PoCL 5 suite ran on other cores, which slowed the launch-bound shapes, and
# PoCL 5's variants case was cut again, after rmsnorm_extreme took 518 s there (31 s
# under PoCL 3.1 here). So: what PoCL 5 sees of the machine, tools/compare.py twice on
# an idle host, then PoCL 5's four slowest cases with each process held to 4 threads
# (PoCL's thread count follows the compute units it reports). Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
echo "nproc $(nproc)"; clinfo 2>/dev/null | grep -E "Device Name|Max compute units" | head -6
torch_compare 100 compare-h200-a
torch_compare 100 compare-h200-b
export POCL_CPU_MAX_CU_COUNT=4 POCL_MAX_PTHREAD_COUNT=4
pocl5_bg $((590 - ($(date +%s) - S))) tests-pocl5.log \
    -R "(variants|rmsnorm_extreme|lowp_special|tuning_file)@pocl"
wait
grep -E "tests passed|Failed|\*\*\*|Timeout|Test +#" "$OUT/tests-pocl5.log" | tail -20
stamp done
