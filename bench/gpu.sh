#!/bin/bash
# The GPU machine's run: the test suite on NVIDIA's OpenCL and on PoCL (the machine's
# CPU), and the benchmark grid against PyTorch (BENCHMARKS.md, "NVIDIA H200").
#
#   bash bench/gpu.sh [MODE...]     from the repository root; outputs under $OUT
#
# Modes, run in the order given (default: all):
#   build            configure and build in $BUILD (Release; tests on nvidia and pocl)
#   tests-nvidia     the unit cases and every device case on NVIDIA      (about 2 min)
#   tests-pocl       every device case on PoCL but the slowest three     (about 5 min)
#   tests-pocl-slow  rmsnorm_extreme, lowp_special, tuning_file on PoCL  (about 9 min)
#   tests            tests-nvidia, then tests-pocl
#   bench            tools/compare.py: clnorm against PyTorch eager and torch.compile,
#                    float32 and bf16, calls in batches of 10
#   tune             clnorm tune --quick: the built-in plans against the best found
#   all              build, tests, tests-pocl-slow, bench, tune
# Every mode builds first (incrementally after the first time), so that each can run
# in a call of its own: split a run under a time limit per call as
#   bash bench/gpu.sh tests; bash bench/gpu.sh tests-pocl-slow; bash bench/gpu.sh bench
#
# Environment: OUT (default ./gpu-out), BUILD (default /tmp/clnorm-gpu-build),
# BENCH_DTYPES (default f32,bf16), BENCH_BATCH (default 10), BENCH_TIMEOUT (seconds,
# default 540; with torch.compile, compile time per shape counts too).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu-out}
BUILD=${BUILD:-/tmp/clnorm-gpu-build}
JOBS=$(nproc)
mkdir -p "$OUT"
START=$(date +%s)
stamp() { echo "[$(($(date +%s) - START)) s] $*"; }

# The machine ships NVIDIA's OpenCL library but no ICD file naming it, so the ICD
# loader would list no NVIDIA platform.
NVIDIA_OPENCL=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
register_nvidia() {
    [ -e /etc/OpenCL/vendors/nvidia.icd ] && return
    if [ ! -e "$NVIDIA_OPENCL" ]; then
        echo "warning: no $NVIDIA_OPENCL; the NVIDIA cases and the bench will find no device" >&2
        return
    fi
    mkdir -p /etc/OpenCL/vendors && echo "$NVIDIA_OPENCL" > /etc/OpenCL/vendors/nvidia.icd
}

# What ran where, for the report: commit, GPU, driver, OpenCL platforms, PyTorch.
record_env() {
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
        echo "cpus: $(nproc)"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
        clinfo -l 2>&1
        python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
    } > "$OUT/env.txt"
}

# A build folder of its own, outside the tree; one configured from another source
# folder is started afresh. Device cases are registered for nvidia and pocl only.
build() {
    if [ -f "$BUILD/CMakeCache.txt" ] &&
        ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT" "$BUILD/CMakeCache.txt"; then
        rm -rf "$BUILD"
    fi
    if ! { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
               -DCLNORM_BUILD_TESTS=ON -DCLNORM_BUILD_TOOLS=ON \
               -DCLNORM_TEST_DEVICES="nvidia;pocl" &&
           cmake --build "$BUILD" -j "$JOBS"; } > "$OUT/build.log" 2>&1; then
        tail -n 30 "$OUT/build.log"
        stamp "build failed"
        exit 1
    fi
    stamp built
}

# ctest with a wall-clock limit; the log goes to $OUT/$1.log and its summary to stdout.
run_ctest() {
    local log=$1 limit=$2
    shift 2
    (cd "$BUILD" && timeout "$limit" ctest --output-on-failure "$@") > "$OUT/$log.log" 2>&1
    echo "ctest exit $? ($log)" >> "$OUT/$log.log"
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*|^ctest exit" "$OUT/$log.log" |
        tail -n 20
    stamp "$log"
}

# The slowest PoCL cases: several minutes each on a 16-core host, and slower still
# when they share it with the rest of the suite.
POCL_SLOW="^(rmsnorm_extreme|lowp_special|tuning_file)@pocl$"

tests_nvidia() { run_ctest tests-nvidia 300 -L "unit|nvidia" -j4 --timeout 240; }

# The fast PoCL cases side by side, then variants alone (it takes minutes when it
# shares the CPU with other cases, under two alone).
tests_pocl() {
    run_ctest tests-pocl 360 -L pocl -E "$POCL_SLOW|^variants@pocl$" -j "$((JOBS / 2 > 1 ? JOBS / 2 : 1))" \
        --timeout 340
    run_ctest tests-pocl-variants 200 -R "^variants@pocl$" --timeout 190
}

# Each of the three slowest cases held to 4 of PoCL's worker threads (PoCL sizes its
# pool to the compute units it reports), so that they do not crowd one another out.
tests_pocl_slow() {
    POCL_CPU_MAX_CU_COUNT=4 POCL_MAX_PTHREAD_COUNT=4 \
        run_ctest tests-pocl-slow 570 -R "$POCL_SLOW" -j3 --timeout 560
}

# clnorm through NVIDIA's OpenCL against PyTorch on the same GPU, in one process run:
# $OUT/compare-h200.md (table), .json (every number), .png (plot), .log.
bench() {
    export CLNORM_CACHE_DIR=/tmp/clnorm-gpu-cache
    PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-540}" python3 "$ROOT/tools/compare.py" \
        --clnorm "$BUILD/tools/clnorm" --device nvidia --torch-device cuda --torch-compile \
        --dtype "${BENCH_DTYPES:-f32,bf16}" --batch "${BENCH_BATCH:-10}" --out "$OUT/compare-h200" \
        > "$OUT/compare-h200.log" 2>&1
    echo "compare.py exit $?" >> "$OUT/compare-h200.log"
    tail -n 45 "$OUT/compare-h200.log"
    stamp bench
}

tune() {
    export CLNORM_CACHE_DIR=/tmp/clnorm-gpu-cache
    timeout 300 "$BUILD/tools/clnorm" tune --device nvidia --quick > "$OUT/tune.log" 2>&1
    tail -n 4 "$OUT/tune.log"
    stamp tune
}

[ $# -gt 0 ] || set -- all
for mode in "$@"; do
    case $mode in
    build | tests | tests-nvidia | tests-pocl | tests-pocl-slow | bench | tune | all) ;;
    *) echo "usage: bash bench/gpu.sh [build|tests|tests-nvidia|tests-pocl|tests-pocl-slow|bench|tune|all]..." >&2
       exit 2 ;;
    esac
done
register_nvidia
record_env
build
for mode in "$@"; do
    case $mode in
    tests-nvidia) tests_nvidia ;;
    tests-pocl) tests_pocl ;;
    tests-pocl-slow) tests_pocl_slow ;;
    tests) tests_nvidia; tests_pocl ;;
    bench) bench ;;
    tune) tune ;;
    all) tests_nvidia; tests_pocl; tests_pocl_slow; bench; tune ;;
    esac
done
stamp finished
