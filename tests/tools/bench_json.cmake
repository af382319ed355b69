# clnorm_bench_json(<var> <bench options>...): runs `${CLNORM} bench --device ${DEVICE}`
# with the options and --json -, and sets <var> to the JSON it prints. Where the device
# is absent it says so (the test's skip expression) and ends the script; any other
# failure fails it.
macro(clnorm_bench_json var)
  execute_process(COMMAND ${CLNORM} bench --device ${DEVICE} ${ARGN} --json -
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(_err MATCHES "CLNORM_DEVICE_NOT_FOUND")
    message("CLNORM_DEVICE_NOT_FOUND: ${_err}")
    return()
  endif()
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "exit ${_rc}\n${_out}\n${_err}")
  endif()
  string(FIND "${_out}" "{\"impl\"" _at)
  if(_at LESS 0)
    message(FATAL_ERROR "no JSON in the output:\n${_out}\n${_err}")
  endif()
  string(SUBSTRING "${_out}" ${_at} -1 ${var})
endmacro()
