# `clnorm bench --op attention` on a small grid of awkward sizes: every shape reported
# with the bytes it must move, a time and a GB/s that agree, and a shape too large for
# any device listed as skipped. Without DEVICE: the refusals of bad options (exit 2,
# a message naming the value). Usage: cmake -DCLNORM=<clnorm> [-DDEVICE=<spec>] -P ...
cmake_policy(VERSION 3.21)

function(expect_refused expected_text)
  execute_process(COMMAND ${CLNORM} bench --op attention ${ARGN} --device no-such-device
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "${expected_text}")
    message(FATAL_ERROR "clnorm bench --op attention ${ARGN}: exit ${rc}, expected 2 and a "
            "message with '${expected_text}'; stderr: ${err}")
  endif()
endfunction()

if(NOT DEFINED DEVICE)
  expect_refused("--kv-len \"0\"" --kv-len 0)
  expect_refused("--batch-size \"1,,2\"" --batch-size 1,,2)
  expect_refused("--q-heads 6 is not a multiple of --kv-heads 4" --q-heads 6 --kv-heads 4)
  expect_refused("--layout \"bhdt\"" --layout bhdt)
  expect_refused("--dtype \"f64\"" --dtype f32,f64)
  expect_refused("unknown option --kvlen" --kvlen 8)
  return()
endif()

# 2 batch sizes x 2 KV lengths (17 and 263) x 2 layouts x 2 dtypes, 3 queries per head.
include(${CMAKE_CURRENT_LIST_DIR}/bench_json.cmake)
clnorm_bench_json(json --op attention --batch-size 1,3 --kv-len 17,263 --q-len 3 --q-heads 6
                  --kv-heads 2 --head-dim 40 --layout all --dtype f32,bf16 --repeats 2)
string(JSON n LENGTH "${json}" results)
if(NOT n EQUAL 16)
  message(FATAL_ERROR "${n} results, expected 16:\n${json}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  foreach(f dtype layout batch kv_len q_len bytes ms gbps skipped)
    string(JSON ${f} GET "${json}" results ${i} ${f})
  endforeach()
  if(NOT skipped STREQUAL "" OR NOT q_len EQUAL 3)
    message(FATAL_ERROR "result ${i}: skipped '${skipped}', q_len ${q_len}")
  endif()
  # Bytes: K and V of 2 heads, q and out of 6 heads, 40 elements each.
  set(es 2)
  if(dtype STREQUAL "f32")
    set(es 4)
  endif()
  math(EXPR want "(2 * ${batch} * 2 * ${kv_len} + 2 * ${batch} * 6 * 3) * 40 * ${es}")
  if(NOT bytes EQUAL want)
    message(FATAL_ERROR "result ${i} (${dtype} ${layout} b${batch} kv${kv_len}): ${bytes} bytes, expected ${want}")
  endif()
  if(NOT ms GREATER 0 OR NOT gbps GREATER_EQUAL 0)
    message(FATAL_ERROR "result ${i}: ${ms} ms, ${gbps} GB/s")
  endif()
  list(APPEND seen "${dtype}/${layout}/${batch}/${kv_len}")
endforeach()
list(REMOVE_DUPLICATES seen)
list(LENGTH seen distinct)
if(NOT distinct EQUAL 16)
  message(FATAL_ERROR "the grid repeats shapes: ${seen}")
endif()

# A shape no device holds (K of 1.4 TB) is listed as skipped, with the sizes, and the
# run still succeeds.
execute_process(COMMAND ${CLNORM} bench --op attention --device ${DEVICE} --batch-size 4096
                        --kv-len 1024k --q-heads 4 --kv-heads 2 --head-dim 40 --dtype f32
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "skipped: K of [0-9]+ MB is over")
  message(FATAL_ERROR "exit ${rc}, expected a skipped shape:\n${out}\n${err}")
endif()
