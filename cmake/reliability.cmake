# Reliability builds: sanitizers, libFuzzer targets and the programs of
# tests/reliability. Included from the root CMakeLists.txt in two places:
#   include(cmake/reliability.cmake)   before any target: sets the sanitizer flags
#   clnorm_reliability_targets()       after the library: adds the programs
#
#   -DCLNORM_SANITIZE=address,undefined   ASan + UBSan for the library, tools and tests
#   -DCLNORM_SANITIZE=thread              TSan
#   -DCLNORM_FUZZ=ON                      libFuzzer targets in fuzz/ (clang only; implies
#                                         ASan + UBSan and coverage instrumentation)
#   -DCLNORM_RELIABILITY_TESTS=ON         also register the reliability programs with
#                                         CTest (label "reliability"); off by default so
#                                         the suite's own `ctest` run stays as it is
# .ci/reliability drives all of it; RELIABILITY.md has the results.

set(CLNORM_SANITIZE "" CACHE STRING
    "Sanitizers for every target: empty, address,undefined, or thread")
option(CLNORM_FUZZ "Build the libFuzzer targets in fuzz/ (clang)" OFF)
option(CLNORM_RELIABILITY_TESTS "Register tests/reliability programs with CTest" OFF)

set(CLNORM_SANITIZER_FLAGS "")
if(CLNORM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CLNORM_FUZZ=ON needs clang (libFuzzer): "
                        "cmake -DCMAKE_C_COMPILER=clang ...")
  endif()
  if(CLNORM_SANITIZE STREQUAL "")
    set(CLNORM_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
endif()

if(NOT CLNORM_SANITIZE STREQUAL "")
  string(REPLACE "," ";" _cln_san_list "${CLNORM_SANITIZE}")
  foreach(_s IN LISTS _cln_san_list)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "CLNORM_SANITIZE: unknown sanitizer '${_s}' "
                          "(address, undefined, thread, leak)")
    endif()
  endforeach()
  if("thread" IN_LIST _cln_san_list AND "address" IN_LIST _cln_san_list)
    message(FATAL_ERROR "CLNORM_SANITIZE: thread and address cannot be combined")
  endif()
  set(CLNORM_SANITIZER_FLAGS -fsanitize=${CLNORM_SANITIZE} -fno-omit-frame-pointer -g)
  if("undefined" IN_LIST _cln_san_list)
    # Every UBSan finding stops the program, so CTest sees it as a failure.
    list(APPEND CLNORM_SANITIZER_FLAGS -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${CLNORM_SANITIZER_FLAGS})
  add_link_options(${CLNORM_SANITIZER_FLAGS})
  message(STATUS "clnorm: sanitizers ${CLNORM_SANITIZE}")
endif()

if(CLNORM_FUZZ)
  # Coverage feedback for everything; only the fuzz targets link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# The programs; called by the root CMakeLists.txt once clnorm_static exists.
function(clnorm_reliability_targets)
  if(EXISTS ${PROJECT_SOURCE_DIR}/tests/reliability/CMakeLists.txt)
    add_subdirectory(${PROJECT_SOURCE_DIR}/tests/reliability
                     ${PROJECT_BINARY_DIR}/tests/reliability)
  endif()
  if(CLNORM_FUZZ AND EXISTS ${PROJECT_SOURCE_DIR}/fuzz/CMakeLists.txt)
    add_subdirectory(${PROJECT_SOURCE_DIR}/fuzz ${PROJECT_BINARY_DIR}/fuzz)
  endif()
endfunction()
