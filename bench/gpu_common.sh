# Sourced by the bench/gpu_*.sh scripts: what every GPU-machine run starts with.
# $OUT is the device tool's folder (./gpu-out when run by hand); NVIDIA's ICD is
# registered (the machine ships it unregistered); the build goes to /tmp/gb.
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT" /etc/OpenCL/vendors
[ -e /etc/OpenCL/vendors/nvidia.icd ] ||
    echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export CLNORM_CACHE_DIR=/tmp/clnorm-cache
S=$(date +%s)
stamp() { echo "[$(( $(date +%s) - S )) s] $*"; }
cmake -S . -B /tmp/gb -DCMAKE_BUILD_TYPE=Release -DCLNORM_TEST_DEVICES="nvidia;pocl" >/dev/null &&
    cmake --build /tmp/gb -j16 2>&1 | grep -E "warning|error|Error"
stamp built

# The unit and NVIDIA cases within $1 seconds, logged to $OUT/tests-nvidia.log.
nv_suite() {
    (cd /tmp/gb && timeout "$1" ctest -L "unit|nvidia" -j4 --timeout 200 --output-on-failure \
        > "$OUT/tests-nvidia.log" 2>&1)
    tail -n 3 "$OUT/tests-nvidia.log"; grep -E "Failed|\*\*\*" "$OUT/tests-nvidia.log" | head
    stamp tested
}

# tools/compare.py (clnorm against PyTorch CUDA, f32 and bf16, batches of 10) within
# $1 seconds, to $OUT/${2:-compare-h200}.*; prints the table.
torch_compare() {
    local name=${2:-compare-h200}
    PYTHONUNBUFFERED=1 timeout "$1" python3 tools/compare.py --clnorm /tmp/gb/tools/clnorm \
        --device nvidia --torch-device cuda --dtype f32,bf16 --batch 10 --out "$OUT/$name" \
        > "$OUT/$name.log" 2>&1
    tail -n 34 "$OUT/$name.log"
    stamp "compared ($name)"
}

# The suite on PoCL 5 (the machine's CPU) until $1 seconds after the start, to
# $OUT/tests-pocl5.log.
pocl5_suite() {
    local left=$(( $1 - ($(date +%s) - S) ))
    (cd /tmp/gb && timeout $left ctest -L pocl -j16 --timeout 300 --output-on-failure \
        > "$OUT/tests-pocl5.log" 2>&1)
    grep -E "tests passed|Failed|\*\*\*|Timeout|Passed" "$OUT/tests-pocl5.log" | tail -30
    stamp pocl5
}

# Times one shape under several settings: sweep ROWS COLS DTYPE OP-PATTERN, then one
# line of environment settings per run on stdin (an empty line: the built-in plan).
sweep() {
    while read -r envs; do
        printf '%-56s ' "${envs:-built-in}"
        env $envs timeout 30 /tmp/gb/tools/clnorm run --device nvidia --repeats 5 \
            --rows $1 --cols $2 --dtype $3 2>&1 | grep -E "^$4 " | cut -c20-200 | tr -s ' ' | head -1
    done
}

# Process start to exit of the README example on $1, three rounds of: cold (clnorm's,
# PoCL's and NVIDIA's compute cache emptied), warm (only clnorm's cache kept) and
# every cache warm. Extra settings for the example in $SU_ENV (e.g. CLNORM_PROGRAMS=one).
startup() {
    local caches="CLNORM_CACHE_DIR=/tmp/su-c POCL_CACHE_DIR=/tmp/su-p CUDA_CACHE_PATH=/tmp/su-nv MESA_SHADER_CACHE_DISABLE=true"
    for i in 1 2 3; do
        rm -rf /tmp/su-c /tmp/su-p /tmp/su-nv
        for kind in cold warm all-warm; do
            [ $kind = warm ] && rm -rf /tmp/su-p /tmp/su-nv
            local t0=$(date +%s.%N)
            env CLNORM_DEVICE=$1 $caches $SU_ENV /tmp/gb/clnorm_example > /dev/null 2>&1 ||
                echo "example failed on $1"
            echo "startup $1 ${SU_ENV:-default} $kind $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}") s"
        done
    done
}

# PoCL 5 cases in the background: pocl5_bg SECONDS LOG CTEST-SELECTION... (e.g. -L pocl,
# or -R "pattern"), $OUT/LOG; `wait` for it, then pocl5_summary LOG.
pocl5_bg() {
    local secs=$1 log=$2
    shift 2
    (cd /tmp/gb && timeout "$secs" ctest "$@" -j12 --timeout $((secs - 20)) --output-on-failure \
        > "$OUT/$log" 2>&1) &
}
pocl5_summary() { grep -E "tests passed|Failed|\*\*\*|Timeout" "$OUT/$1" | tail -30; }
