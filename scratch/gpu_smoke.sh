#!/bin/bash
# Early smoke on the GPU machine: build, then run the smoke program on both devices
# with each reduction path and several forced work-group shapes.
mkdir -p /etc/OpenCL/vendors && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
set -x
clinfo -l
cmake -S . -B /tmp/gb -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build /tmp/gb -j16 2>&1 | grep -E "warning|error|Error"
gcc -O2 -Iinclude scratch/s.c -L/tmp/gb -lclnorm -lOpenCL -lm -Wl,-rpath,/tmp/gb -o /tmp/s
/tmp/gb/tools/clnorm devices
for dev in nvidia pocl; do
  for red in auto local subgroup; do
    for shape in "7 1000" "33 4097" "300 128" "2 65537" "1 1"; do
      echo "== $dev $red $shape"; CLNORM_REDUCTION=$red /tmp/s $dev $shape || echo FAIL
    done
  done
  for wg in 32 64 96 100 256 1024; do
    for team in "" 1 2 32 ; do
      echo "== $dev wg=$wg team=$team"; CLNORM_WORK_GROUP=$wg CLNORM_ROW_THREADS=$team /tmp/s $dev 37 3001 || echo FAIL
    done
  done
done 2>&1
/tmp/gb/tools/clnorm run --device nvidia
/tmp/gb/tools/clnorm run --device pocl --rows 1024 --cols 4096
