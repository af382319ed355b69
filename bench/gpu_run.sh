#!/bin/bash
# Everything the GPU machine checks in one call: build, the suite on the NVIDIA GPU
# and on PoCL 5 (its CPU), the bench grid, and the PyTorch comparison. Results go
# to $OUT (the device tool's folder), or ./gpu-out when run by hand.
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" /etc/OpenCL/vendors
[ -e /etc/OpenCL/vendors/nvidia.icd ] ||
    echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export CLNORM_CACHE_DIR=/tmp/clnorm-cache
{
    date -u
    clinfo -l
    nvidia-smi --query-gpu=name,driver_version --format=csv
    cmake -S . -B /tmp/gb -DCMAKE_BUILD_TYPE=Release -DCLNORM_TEST_DEVICES="nvidia;pocl" >/dev/null &&
        cmake --build /tmp/gb -j16 2>&1 | grep -E "warning|error|Error"
    /tmp/gb/tools/clnorm devices
} > "$OUT/build.log" 2>&1
cd /tmp/gb
ctest -L "unit|nvidia" -j4 --timeout 300 --output-on-failure > "$OUT/tests-nvidia.log" 2>&1
cd - >/dev/null
tail -n 4 "$OUT/tests-nvidia.log"
if [ "${SKIP_BENCH:-}" != 1 ]; then
    PYTHONUNBUFFERED=1 python3 tools/compare.py --clnorm /tmp/gb/tools/clnorm --device nvidia \
        --torch-device cuda --dtype "${BENCH_DTYPES:-f32,bf16}" --batch "${BATCH:-10}" \
        --out "$OUT/compare-h200" > "$OUT/compare-h200.log" 2>&1
    tail -n 40 "$OUT/compare-h200.log"
fi
# PoCL 5 compiles every (kernel, work-group size) it meets, so its suite takes minutes:
# it runs after the benchmarks (which it would disturb), bounded by POCL_TIME.
(cd /tmp/gb && timeout "${POCL_TIME:-400}" ctest -L pocl -j16 --timeout 300 --output-on-failure \
    > "$OUT/tests-pocl5.log" 2>&1)
grep -E "tests passed|Failed|\*\*\*" "$OUT/tests-pocl5.log" | head -20
[ "${SKIP_DIAG:-}" = 1 ] && exit 0
# Diagnostics for the record: registers and spills per kernel, and the RMSNorm
# variants side by side.
CLNORM_CACHE_DIR=off CLNORM_BUILD_LOG=1 CLNORM_BUILD_OPTIONS=-cl-nv-verbose \
    /tmp/gb/tools/clnorm run --device nvidia --rows 256 --cols 4096 > "$OUT/nv-verbose.log" 2>&1
grep -E "Used|spill" "$OUT/nv-verbose.log" | sort | uniq -c | head -40
for v in reg stream split; do
    for op in rmsnorm softmax; do
        echo "== $op variant $v"
        CLNORM_VARIANT=$v /tmp/gb/tools/clnorm bench --device nvidia --op $op 2>/dev/null | grep -E "^(rmsnorm|softmax) "
    done
done > "$OUT/variants.log" 2>&1
cat "$OUT/variants.log"
# What the overflow-safe RMSNorm costs ordinary rows: the same kernels built without
# the rescaling branch.
for opt in "" "-DCLN_NO_RESCALE"; do
    echo "== rmsnorm build options '$opt'"
    CLNORM_BUILD_OPTIONS="$opt" /tmp/gb/tools/clnorm bench --device nvidia --op rmsnorm 2>/dev/null | grep -E "^rmsnorm "
done > "$OUT/rescale-cost.log" 2>&1
cat "$OUT/rescale-cost.log"
