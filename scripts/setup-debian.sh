#!/bin/sh
# Installs what clnorm needs to build and test on Debian 12 (or Ubuntu): a C
# compiler, CMake, pkg-config, the Khronos headers and ICD loader, Open MPI (for
# clnorm_mpi and its tests), the OpenCL drivers the suite runs on (PoCL for the CPU,
# Mesa Rusticl on llvmpipe), then the Python test requirements. Run as root, or
# with sudo available. Safe to run again.
set -eu
cd "$(dirname "$0")/.."
pkgs="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd mesa-opencl-icd libopenmpi-dev openmpi-bin"
[ "${CLNORM_SETUP_EXTRA:-}" ] && pkgs="$pkgs $CLNORM_SETUP_EXTRA"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ -n "$missing" ]; then
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
fi

# The Python package's tests (python@<label>) need numpy, pyopencl, ml_dtypes and
# pytest from PyPI, in the python3 that CMake finds first. An interpreter that
# Debian manages refuses plain pip installs (PEP 668); this one-purpose setup then
# installs beside Debian's packages, for the invoking user unless run as root.
if ! python3 -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends python3-pip python3-venv
fi
user=""
[ "$(id -u)" -ne 0 ] && user=--user
req=python/requirements-test.txt
if ! python3 -c "import numpy, pyopencl, ml_dtypes, pytest" 2>/dev/null; then
    python3 -m pip install -q $user -r "$req" 2>/dev/null ||
        python3 -m pip install -q $user --break-system-packages -r "$req"
fi
