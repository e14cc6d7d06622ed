# Runs tools/gpu-proxy.sh --json (ARGS: more of its arguments, separated by
# '|') and fails when attention.bytes_per_pair, the global memory the GPU
# profile's attention kernels move per (query, key) pair, forward and
# backward together, exceeds LIMIT (issue 28's goal: 40 at T=128, dh=64).
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND bash ${SCRIPT} --json ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SCRIPT} exited with ${rc}")
endif()
string(JSON bytes ERROR_VARIABLE json_error GET "${out}" attention bytes_per_pair)
if(json_error)
  message(FATAL_ERROR "no attention.bytes_per_pair in the proxy's JSON: ${json_error}")
endif()
if(bytes GREATER LIMIT)
  message(FATAL_ERROR "attention moves ${bytes} bytes of global memory per (query, key) pair "
                      "on the GPU profile, above the limit of ${LIMIT} (tools/gpu-proxy.sh)")
endif()
message("attention: ${bytes} bytes per (query, key) pair, limit ${LIMIT}")
