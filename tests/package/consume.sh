#!/bin/sh
# Installs this build into a temporary prefix, then builds and runs an outside
# consumer four ways: through find_package (shared and static targets) and through
# pkg-config (dynamic and static linking), and a fifth from the source tree through
# add_subdirectory. Also checks that every installed file a
# consumer needs is there and that find_package refuses an incompatible version.
# Where clnorm_mpi was built (CLNORM_MPIEXEC set: the command that starts two ranks),
# MPI consumers too, through find_package(clnorm COMPONENTS mpi) from C and C++ and
# through clnorm-mpi.pc.
# Usage: consume.sh BUILD_DIR SOURCE_DIR VERSION SOVERSION
set -eu
build=$1 src=$2 version=$3 soversion=$4
prefix=$(mktemp -d "${TMPDIR:-/tmp}/clnorm-install.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$prefix/install.log" || { cat "$prefix/install.log"; fail "cmake --install"; }
pc=$(find "$prefix" -name clnorm.pc | head -n 1)
[ -n "$pc" ] || fail "no clnorm.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in "$prefix/include/clnorm.h" "$prefix/include/clnorm_advanced.h" "$libdir/libclnorm.so" "$libdir/libclnorm.so.$soversion" \
         "$libdir/libclnorm.a" "$libdir/cmake/clnorm/clnormConfig.cmake" \
         "$libdir/cmake/clnorm/clnormConfigVersion.cmake" "$libdir/cmake/clnorm/clnormTargets.cmake"; do
    [ -e "$f" ] || fail "not installed: $f"
done
if [ -d "$src/tools" ]; then [ -x "$prefix/bin/clnorm" ] || fail "clnorm command not installed"; fi
grep -q "^prefix=$prefix\$" "$pc" || fail "clnorm.pc does not name the install prefix: $(head -n 1 "$pc")"
grep -q "^Version: $version\$" "$pc" || fail "clnorm.pc does not say Version: $version"

run() { # name, program: runs it, passing 77 (no device) through
    echo "== $1"
    rc=0; "$2" || rc=$?
    [ $rc -eq 77 ] && { echo "no OpenCL device: skipped"; exit 77; }
    [ $rc -eq 0 ] || fail "$1 exited $rc"
}
linked() { # program, whether libclnorm.so must appear among its dependencies (yes/no)
    if ldd "$1" | grep -q 'libclnorm\.so'; then has=yes; else has=no; fi
    [ "$has" = "$2" ] || fail "$1: libclnorm.so among its dependencies: $has, expected $2"
}

echo "== find_package(clnorm $version CONFIG)"
cmake -S "$src/tests/package/consumer" -B "$prefix/cmake-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCLNORM_WANT_VERSION="$version" -DCMAKE_BUILD_TYPE=Release >"$prefix/cfg.log" 2>&1 \
    || { cat "$prefix/cfg.log"; fail "configuring the CMake consumer"; }
cmake --build "$prefix/cmake-consumer" >"$prefix/build.log" 2>&1 \
    || { cat "$prefix/build.log"; fail "building the CMake consumer"; }
linked "$prefix/cmake-consumer/consumer_shared" yes
linked "$prefix/cmake-consumer/consumer_static" no
run "CMake, clnorm::clnorm" "$prefix/cmake-consumer/consumer_shared"
run "CMake, clnorm::clnorm_static" "$prefix/cmake-consumer/consumer_static"

if cmake -S "$src/tests/package/consumer" -B "$prefix/cmake-too-new" -DCMAKE_PREFIX_PATH="$prefix" \
         -DCLNORM_WANT_VERSION=999.0 >/dev/null 2>&1; then
    fail "find_package(clnorm 999.0) accepted version $version"
fi

echo "== pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc=${CC:-cc}
cflags=$(pkg-config --cflags clnorm) || fail "pkg-config --cflags clnorm"
libs=$(pkg-config --libs clnorm) || fail "pkg-config --libs clnorm"
# Static: the same flags with the archive named, plus Libs.private.
slibs=$(pkg-config --static --libs clnorm | sed 's/-lclnorm\b/-l:libclnorm.a/')
# shellcheck disable=SC2086
$cc -std=c11 $cflags -o "$prefix/pc_shared" "$src/tests/package/consumer/consumer.c" $libs -lm \
    -Wl,-rpath,"$libdir" || fail "linking with pkg-config --libs clnorm"
# shellcheck disable=SC2086
$cc -std=c11 $cflags -o "$prefix/pc_static" "$src/tests/package/consumer/consumer.c" $slibs -lm \
    || fail "linking with pkg-config --static --libs clnorm"
linked "$prefix/pc_shared" yes
linked "$prefix/pc_static" no
run "pkg-config, dynamic" "$prefix/pc_shared"
run "pkg-config, static" "$prefix/pc_static"
echo "== add_subdirectory(clnorm)"
cmake -S "$src/tests/package/subproject" -B "$prefix/subproject" -DCLNORM_SOURCE_DIR="$src" \
      -DCMAKE_BUILD_TYPE=Release >"$prefix/sub-cfg.log" 2>&1 \
    || { cat "$prefix/sub-cfg.log"; fail "configuring a project that adds clnorm as a subdirectory"; }
cmake --build "$prefix/subproject" -j2 >"$prefix/sub-build.log" 2>&1 \
    || { cat "$prefix/sub-build.log"; fail "building a project that adds clnorm as a subdirectory"; }
run "add_subdirectory, clnorm::clnorm" "$prefix/subproject/consumer_subproject"
ways=five
if [ -n "${CLNORM_MPIEXEC:-}" ]; then
    for f in "$prefix/include/clnorm_mpi.h" "$libdir/libclnorm_mpi.so" "$libdir/libclnorm_mpi.a" \
             "$libdir/pkgconfig/clnorm-mpi.pc" "$libdir/cmake/clnorm/clnormMpiTargets.cmake"; do
        [ -e "$f" ] || fail "not installed: $f"
    done
    grep -q "^Version: $version\$" "$libdir/pkgconfig/clnorm-mpi.pc" || fail "clnorm-mpi.pc does not say Version: $version"
    mpirun_() { # name, program: on two ranks
        echo "== $1"
        rc=0; $CLNORM_MPIEXEC "$2" || rc=$?
        [ $rc -eq 77 ] && { echo "no OpenCL device: skipped"; exit 77; }
        [ $rc -eq 0 ] || fail "$1 exited $rc"
    }
    echo "== find_package(clnorm $version CONFIG COMPONENTS mpi)"
    cmake -S "$src/tests/package/mpi_consumer" -B "$prefix/mpi-consumer" -DCMAKE_PREFIX_PATH="$prefix" \
          -DCLNORM_WANT_VERSION="$version" -DCMAKE_BUILD_TYPE=Release >"$prefix/mpi-cfg.log" 2>&1 \
        || { cat "$prefix/mpi-cfg.log"; fail "configuring the CMake MPI consumer"; }
    cmake --build "$prefix/mpi-consumer" >"$prefix/mpi-build.log" 2>&1 \
        || { cat "$prefix/mpi-build.log"; fail "building the CMake MPI consumer"; }
    # Without MPI, a consumer of clnorm alone is unaffected; one that asks for the mpi
    # component is refused.
    cmake -S "$src/tests/package/consumer" -B "$prefix/cmake-no-mpi" -DCMAKE_PREFIX_PATH="$prefix" \
          -DCLNORM_WANT_VERSION="$version" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=TRUE >"$prefix/no-mpi.log" 2>&1 \
        || { cat "$prefix/no-mpi.log"; fail "find_package(clnorm) where MPI is not found"; }
    if cmake -S "$src/tests/package/mpi_consumer" -B "$prefix/mpi-no-mpi" -DCMAKE_PREFIX_PATH="$prefix" \
             -DCLNORM_WANT_VERSION="$version" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=TRUE >/dev/null 2>&1; then
        fail "find_package(clnorm COMPONENTS mpi) succeeded where MPI is not found"
    fi
    mpirun_ "CMake, clnorm::clnorm_mpi" "$prefix/mpi-consumer/mpi_consumer_shared"
    mpirun_ "CMake, clnorm::clnorm_mpi_static" "$prefix/mpi-consumer/mpi_consumer_static"
    mpirun_ "CMake, clnorm::clnorm_mpi from C++" "$prefix/mpi-consumer/mpi_consumer_cxx"
    mcflags=$(pkg-config --cflags clnorm-mpi) || fail "pkg-config --cflags clnorm-mpi"
    mlibs=$(pkg-config --libs clnorm-mpi) || fail "pkg-config --libs clnorm-mpi"
    # shellcheck disable=SC2086
    $cc -std=c11 $mcflags -o "$prefix/pc_mpi" "$src/tests/package/mpi_consumer/mpi_consumer.c" \
        $mlibs -lm -Wl,-rpath,"$libdir" || fail "linking with pkg-config --libs clnorm-mpi"
    mpirun_ "pkg-config clnorm-mpi, dynamic" "$prefix/pc_mpi"
    ways="nine (four through clnorm_mpi)"
fi
echo "PASS: installed into a temporary prefix and consumed $ways ways"
