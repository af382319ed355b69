#!/bin/bash
# Second H200 run of the fourth session of 2026-11-30: the suite on the NVIDIA GPU
# after split calls on in-order queues stopped taking events and a new scratch
# buffer per call; the bench grid (f32, bf16) now naming the plan that ran and the
# launch cost of an empty kernel; host time per call on the few-row shapes; the
# PyTorch comparison. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 180
B="/tmp/gb/tools/clnorm bench --device nvidia --batch 10"
for dt in f32 bf16; do
    echo "== $dt"
    timeout 70 $B --dtype $dt 2>/dev/null
done > "$OUT/bench.log" 2>&1
cut -c1-40,60-140 "$OUT/bench.log"
stamp bench
R="/tmp/gb/tools/clnorm run --device nvidia --repeats 3"
for shape in "1 4096" "64 8192" "8 262144" "1 1048576"; do
    echo "== $shape"
    timeout 25 $R --rows ${shape% *} --cols ${shape#* } 2>&1 | grep -E "^(rmsnorm|softmax)|rror"
done > "$OUT/host.log" 2>&1
cat "$OUT/host.log"
stamp host
torch_compare 170
