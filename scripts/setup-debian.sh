#!/bin/sh
# Installs what clnorm needs to build and test on Debian 12 (or Ubuntu): a C
# compiler, CMake, the Khronos headers and ICD loader, and the OpenCL drivers the
# suite runs on (PoCL for the CPU, Mesa Rusticl on llvmpipe). Run as root, or with
# sudo available. Safe to run again.
set -eu
pkgs="build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd mesa-opencl-icd"
[ "${CLNORM_SETUP_EXTRA:-}" ] && pkgs="$pkgs $CLNORM_SETUP_EXTRA"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
