#!/bin/bash
# Fourth H200 run of the ninth session (2026-12-01), on the last of the device time:
# the split kernels' new arguments (clnorm_split_sumexp takes y, clnorm_split_softmax a
# weighted flag; CPU builds keep the three-pass split's weights). The unit and NVIDIA
# cases, and beside them PoCL 5's cases that run split rows, special values and views (not variants:
# 91 s alone in run 3, much longer beside other cases).
. "$(dirname "$0")/gpu_common.sh"
pocl5_bg 100 tests-pocl5.log -R "(values_softmax_3pass|values_softmax_auto|special_values|split_scratch|views)@pocl"
nv_suite 110
wait
pocl5_summary tests-pocl5.log
stamp done
