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
#   attention        tools/compare.py --op attention: clnorm bench --op attention
#                    against PyTorch's scaled_dot_product_attention (every backend),
#                    the decode grid, float32 and bf16, both cache layouts
#   all              build, tests, tests-pocl-slow, bench, tune, attention
# Every mode builds first (a few seconds once built), so that each can run in a call
# of its own where calls have a time limit:
#   bash bench/gpu.sh tests; bash bench/gpu.sh tests-pocl-slow; bash bench/gpu.sh bench tune
#
# Outputs: build.log (what ran where, then the build), tests-nvidia.log,
# tests-pocl.log, tests-pocl-slow.log, compare-h200.md/.json/.png, bench.log (the
# comparison's progress and clnorm tune), compare-attention-h200.md/.json and
# attention.log (its progress).
#
# Environment: OUT (default ./gpu-out), BUILD (default /tmp/clnorm-gpu-build),
# BENCH_DTYPES (default f32,bf16), BENCH_BATCH (default 10), BENCH_TIMEOUT (seconds,
# default 420; torch.compile's compilation of each shape counts in it). A comparison
# cut by BENCH_TIMEOUT still writes its table of what it measured. The attention mode:
# ATTN_TIMEOUT (default 540), ATTN_ARGS (more compare.py options, e.g. "--q-len 4" or
# "--batch-size 1,8 --kv-len 8k"), BENCH_DTYPES and BENCH_BATCH as above.
# sharded_devices@nvidia puts shards on NVIDIA and on a second device at once: PoCL by
# default, CLNORM_TEST_SECOND_DEVICE=<spec> for another. The apply kernel's share of
# the copy bandwidth: build/tools/clnorm bench --device nvidia --op apply (%copy@sz).
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
# Starts build.log.
record_env() {
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
        echo "cpus: $(nproc)"
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
        clinfo -l 2>&1
        python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
        echo
    } > "$OUT/build.log"
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
           cmake --build "$BUILD" -j "$JOBS"; } >> "$OUT/build.log" 2>&1; then
        tail -n 30 "$OUT/build.log"
        stamp "build failed"
        exit 1
    fi
    stamp built
}

# ctest LOG LIMIT ARGS...: ctest within LIMIT seconds of wall clock, appended to
# $OUT/LOG.log, its summary to stdout.
run_ctest() {
    local log=$1 limit=$2
    shift 2
    (cd "$BUILD" && timeout -k 10 "$limit" ctest --output-on-failure "$@") >> "$OUT/$log.log" 2>&1
    echo "ctest exit $? ($*)" >> "$OUT/$log.log"
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*|^ctest exit" "$OUT/$log.log" |
        tail -n 20
    stamp "$log"
}

# The slowest PoCL cases: several minutes each on a 16-core host, and slower still
# when they share it with the rest of the suite.
POCL_SLOW="^(rmsnorm_extreme|lowp_special|tuning_file)@pocl$"

tests_nvidia() { : > "$OUT/tests-nvidia.log"; run_ctest tests-nvidia 200 -L "unit|nvidia" -j4 --timeout 190; }

# The other PoCL cases side by side, then variants alone (it takes minutes when it
# shares the CPU with other cases, under two alone).
tests_pocl() {
    : > "$OUT/tests-pocl.log"
    run_ctest tests-pocl 280 -L pocl -E "$POCL_SLOW|^variants@pocl$" \
        -j "$((JOBS / 2 > 1 ? JOBS / 2 : 1))" --timeout 270
    run_ctest tests-pocl 150 -R "^variants@pocl$" --timeout 140
}

# The three slowest side by side, each held to 4 of PoCL's worker threads (PoCL sizes
# its pool to the compute units it reports), so that they do not crowd one another out.
tests_pocl_slow() {
    : > "$OUT/tests-pocl-slow.log"
    POCL_CPU_MAX_CU_COUNT=4 POCL_MAX_PTHREAD_COUNT=4 \
        run_ctest tests-pocl-slow 550 -R "$POCL_SLOW" -j3 --timeout 540
}

# clnorm through NVIDIA's OpenCL against PyTorch on the same GPU, in one process run:
# $OUT/compare-h200.md (table), .json (every number), .png (plot); progress to bench.log.
bench() {
    export CLNORM_CACHE_DIR=/tmp/clnorm-gpu-cache
    rm -f "$OUT"/compare-h200.*
    PYTHONUNBUFFERED=1 timeout -k 20 "${BENCH_TIMEOUT:-420}" python3 "$ROOT/tools/compare.py" \
        --clnorm "$BUILD/tools/clnorm" --device nvidia --torch-device cuda --torch-compile \
        --dtype "${BENCH_DTYPES:-f32,bf16}" --batch "${BENCH_BATCH:-10}" --out "$OUT/compare-h200" \
        >> "$OUT/bench.log" 2>&1
    echo "compare.py exit $?" >> "$OUT/bench.log"
    cat "$OUT/compare-h200.md" 2>/dev/null || tail -n 20 "$OUT/bench.log"
    stamp bench
}

# clnorm_attention through NVIDIA's OpenCL against PyTorch's SDPA on the same GPU, in
# one run: $OUT/compare-attention-h200.md (table) and .json; progress to attention.log.
attention() {
    export CLNORM_CACHE_DIR=/tmp/clnorm-gpu-cache
    rm -f "$OUT"/compare-attention-h200.*
    # shellcheck disable=SC2086 # ATTN_ARGS is a list of options
    PYTHONUNBUFFERED=1 timeout -k 20 "${ATTN_TIMEOUT:-540}" python3 "$ROOT/tools/compare.py" \
        --op attention --clnorm "$BUILD/tools/clnorm" --device nvidia --torch-device cuda \
        --dtype "${BENCH_DTYPES:-f32,bf16}" --batch "${BENCH_BATCH:-10}" --layout all \
        ${ATTN_ARGS:-} --out "$OUT/compare-attention-h200" >> "$OUT/attention.log" 2>&1
    echo "compare.py --op attention exit $?" >> "$OUT/attention.log"
    cat "$OUT/compare-attention-h200.md" 2>/dev/null || tail -n 20 "$OUT/attention.log"
    stamp attention
}

tune() {
    export CLNORM_CACHE_DIR=/tmp/clnorm-gpu-cache
    {
        echo "== clnorm tune --device nvidia --quick"
        timeout -k 10 120 "$BUILD/tools/clnorm" tune --device nvidia --quick 2>&1
        echo "clnorm tune exit $?"
    } >> "$OUT/bench.log"
    tail -n 4 "$OUT/bench.log"
    stamp tune
}

[ $# -gt 0 ] || set -- all
for mode in "$@"; do
    case $mode in
    build | tests | tests-nvidia | tests-pocl | tests-pocl-slow | bench | tune | attention | all) ;;
    *) echo "usage: bash bench/gpu.sh [build|tests|tests-nvidia|tests-pocl|tests-pocl-slow|bench|tune|attention|all]..." >&2
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
    attention) attention ;;
    all) tests_nvidia; tests_pocl; tests_pocl_slow; bench; tune; attention ;;
    esac
done
stamp finished
