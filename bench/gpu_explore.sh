#!/bin/bash
# Plan exploration on the GPU machine: the bench grid under forced variants, paths,
# work-group sizes and split counts, single calls and batches. Results to $OUT.
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" /etc/OpenCL/vendors
[ -e /etc/OpenCL/vendors/nvidia.icd ] ||
    echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export CLNORM_CACHE_DIR=/tmp/clnorm-cache
cmake -S . -B /tmp/gb -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build /tmp/gb -j16 2>&1 | grep -E "warning|error"
B="/tmp/gb/tools/clnorm bench --device nvidia"
run() { # label, env..., -- bench args
    local label=$1; shift
    echo "== $label"
    env "$@" 2>/dev/null | grep -E "^(softmax|rmsnorm) "
}
{
run "default batch 1" $B --batch 1
run "default batch 10" $B --batch 10
for v in reg stream split; do
    run "variant $v batch 10" CLNORM_VARIANT=$v $B --batch 10
    run "variant $v local batch 10" CLNORM_VARIANT=$v CLNORM_REDUCTION=local $B --batch 10
done
run "online batch 10" $B --batch 10 --algo online --op softmax
run "3pass batch 10" $B --batch 10 --algo 3pass --op softmax
for w in 128 512 1024; do
    run "reg wg $w batch 10" CLNORM_VARIANT=reg CLNORM_WORK_GROUP=$w $B --batch 10
done
for sl in 16 64 132 264; do
    run "split $sl wg 1024 batch 10" CLNORM_VARIANT=split CLNORM_SPLIT=$sl CLNORM_WORK_GROUP=1024 $B --batch 10
done
} > "$OUT/explore.log" 2>&1
cat "$OUT/explore.log" | cut -c1-120
PYTHONUNBUFFERED=1 python3 tools/compare.py --clnorm /tmp/gb/tools/clnorm --device nvidia \
    --torch-device cuda --dtype f32,bf16 --batch 10 --out "$OUT/compare-h200-batch10" \
    > "$OUT/compare-batch10.log" 2>&1
tail -32 "$OUT/compare-batch10.log"
