#!/bin/bash
# First H200 run of the ninth session (2026-12-01): the eighth session's last commit,
# which never ran there. The whole PoCL 5 suite in the background from the start, on
# cores of its own and with a longer case limit (its variants and rmsnorm_extreme cases
# were cut at 300 s twice last session); on the other cores the NVIDIA suite, float32
# softmax 1024x32768 in the streaming forms at wider groups (does the second read come
# from L2 once two groups share an SM?), then tools/compare.py. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
(cd /tmp/gb && taskset -c 4-15 timeout $((560 - ($(date +%s) - S))) ctest -L pocl -j12 \
    --timeout 500 --output-on-failure > "$OUT/tests-pocl5.log" 2>&1) &
export -f nv_suite stamp; export S OUT
taskset -c 0-3 bash -c 'nv_suite 110'
for alg in online three_pass; do
    echo "== f32 1024x32768 softmax_$alg"
    printf '%s\n' "" "CLNORM_VARIANT=stream" "CLNORM_VARIANT=stream CLNORM_WORK_GROUP=512" \
        "CLNORM_VARIANT=stream CLNORM_WORK_GROUP=1024" "CLNORM_VARIANT=reg" |
        sweep 1024 32768 f32 "softmax_$alg"
done 2>&1 | tee "$OUT/sweep.log"
stamp sweep
taskset -c 0-3 bash -c "$(declare -f torch_compare); torch_compare 100"
wait
grep -E "tests passed|Failed|\*\*\*|Timeout|Test +#" "$OUT/tests-pocl5.log" | tail -40
stamp done
