#!/bin/bash
# First H200 run of the seventh session of 2026-11-30: the whole suite on both devices
# (the sixth session's 16-bit words of 4 had not run there; PoCL 5's cases run beside
# the NVIDIA work from the start), then start-up times on NVIDIA with one program of
# every kernel (the default) and with a program per kernel (CLNORM_PROGRAMS=one),
# NVIDIA's own compute cache emptied, kept, or both. Results to $OUT.
. "$(dirname "$0")/gpu_common.sh"
pocl5_bg 540 tests-pocl5.log -L pocl
nv_suite 200
{ startup nvidia; SU_ENV=CLNORM_PROGRAMS=one startup nvidia; } > "$OUT/startup.log" 2>&1
cat "$OUT/startup.log"
stamp startup
wait
pocl5_summary tests-pocl5.log
stamp done
