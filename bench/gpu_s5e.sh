#!/bin/bash
# Last H200 run of the fifth session of 2026-11-30: the NVIDIA suite and the PyTorch
# comparison with exp2 for 16-bit softmax and the online register form's maximum
# first. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
nv_suite 100
torch_compare 110
stamp done
