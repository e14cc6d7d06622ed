# Runs PROGRAM (with ARGS) and fails when it fails or when its output holds a report from
# Oclgrind (which exits 0 even after reporting an error): invalid memory
# access, data race, uninitialised value, barrier divergence, API misuse.
# ARGS: the program's arguments, separated by '|' (a ';' would split the
# -DARGS=... argument of add_test). EXPECT (optional): a regular expression
# the output must match as well.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
set(log "${out}\n${err}")
message("${log}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
string(REGEX MATCH "(Invalid (read|write)|[Dd]ata race|Uninitiali[sz]ed value|[Dd]ivergence|Oclgrind - |OCLGRIND[^\n]*error)[^\n]*" report "${log}")
if(report)
  message(FATAL_ERROR "device checker reported: ${report}")
endif()
if(DEFINED EXPECT AND NOT log MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}'")
endif()
