#!/bin/bash
# First H200 run of the eighth session (2026-12-01): the seventh session's review commit
# on NVIDIA and PoCL 5, then bench/rowprobe.c: how close the skeleton of a one-read,
# one-write row kernel (and a persistent form that loads the next row early) gets to
# the copy bandwidth on the shapes that miss their targets. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
pocl5_bg 330 tests-pocl5.log -L pocl
nv_suite 150
gcc -O2 bench/rowprobe.c -lOpenCL -o /tmp/rowprobe && timeout 120 /tmp/rowprobe NVIDIA > "$OUT/rowprobe.log" 2>&1
cat "$OUT/rowprobe.log"
stamp probed
wait
pocl5_summary tests-pocl5.log
stamp done
