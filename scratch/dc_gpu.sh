#!/bin/bash
# Temporary (issue 5): disk cache and tuning on the GPU machine.
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
B=/tmp/gb; cmake -S . -B $B -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build $B -j16 2>&1 | grep -E "warning|error|Error"
gcc -O1 -Iinclude -Isrc scratch/dc_probe.c $B/libclnorm.a -lOpenCL -lpthread -lm -o /tmp/probe
export POCL_CACHE_DIR=/tmp/pc1; timeout 120 /tmp/probe nvidia; timeout 200 /tmp/probe pocl
t() { local a=$(date +%s%N); "$@" >/dev/null 2>&1 || echo FAIL >&2; echo "scale=3; ($(date +%s%N)-$a)/1000000000" | bc; }
for dev in nvidia pocl; do
  export CLNORM_DEVICE=$dev; C=/tmp/su-c P=/tmp/su-p; rm -rf $C
  for i in 1 2 3 4 5; do
    rm -rf $C $P; echo "$dev cold $(CLNORM_CACHE_DIR=$C POCL_CACHE_DIR=$P CUDA_CACHE_DISABLE=1 t $B/clnorm_example)"
    rm -rf $P; echo "$dev warm $(CLNORM_CACHE_DIR=$C POCL_CACHE_DIR=$P CUDA_CACHE_DISABLE=1 t $B/clnorm_example)"
  done
  for i in 1 2 3; do echo "$dev allwarm $(CLNORM_CACHE_DIR=$C POCL_CACHE_DIR=$P t $B/clnorm_example)"; done
  ls -la $C
done
unset CLNORM_DEVICE
export CLNORM_CACHE_DIR=/tmp/tc POCL_CACHE_DIR=/tmp/pc2
cd $B/tests; for c in disk_cache_roundtrip disk_cache_damaged disk_cache_unusable disk_cache_invalidate tuning_file disk_cache_processes; do
  for d in nvidia pocl; do timeout 200 ./clnorm_tests $c --device $d 2>&1 | grep -E "FAIL|note|passed|FAILED" | head -8; done; done
cd -
timeout 300 $B/tools/clnorm tune --device nvidia 2>&1 | tee $OUT/tune_nvidia.txt | tail -75
$B/tools/clnorm tune --device nvidia --show > $OUT/tune_show_nvidia.txt
CLNORM_TUNING=off timeout 100 $B/tools/clnorm bench --device nvidia --csv $OUT/bench_off.csv > /dev/null 2>&1
timeout 100 $B/tools/clnorm bench --device nvidia --csv $OUT/bench_tuned.csv > /dev/null 2>&1
$B/tools/clnorm cache --verify
