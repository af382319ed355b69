#!/bin/bash
# Third H200 run of the ninth session (2026-12-01): what RMSNorm's overflow-safe
# rescaling costs ordinary rows on today's kernels. clnorm bench --batch 10 over the
# RMSNorm and fused grids, float32 and bf16, built as shipped and with -DCLN_NO_RESCALE
# (the branch compiled out), alternated over two rounds. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
for round in 1 2; do
    for dt in f32 bf16; do
        for op in rmsnorm add_rmsnorm; do
            for opt in "" "-DCLN_NO_RESCALE"; do
                echo "== round $round $dt $op ${opt:-as shipped}"
                CLNORM_BUILD_OPTIONS="$opt" timeout 60 /tmp/gb/tools/clnorm bench --device nvidia \
                    --op $op --batch 10 --dtype $dt 2>/dev/null | grep -E "^(add_)?rmsnorm|copy:"
            done
        done
    done
done > "$OUT/rescale-cost.log" 2>&1
cat "$OUT/rescale-cost.log"
stamp done
