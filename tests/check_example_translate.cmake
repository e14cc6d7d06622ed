# Runs examples/translate_stdin (PROGRAM) on MODEL with three lines on stdin,
# the middle one empty: the output must be three lines, the middle one empty,
# and with EXPECT set the first line must be that translation.
# one input file per model: the devices' runs of this test share WORK_DIR and
# may run at once (ctest -j), and each removes its file when done
get_filename_component(model_name ${MODEL} NAME_WE)
set(input ${WORK_DIR}/translate_stdin_input_${model_name}.txt)
file(WRITE ${input} "three one four\n\nnine nine\n")
execute_process(COMMAND ${PROGRAM} ${MODEL} INPUT_FILE ${input} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE ${input})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "translate_stdin exited with ${rc}: ${err}")
endif()
message("${out}")
if(NOT out MATCHES "^[^\n]+\n\n[^\n]+\n$")
  message(FATAL_ERROR "expected three lines, the middle one empty; got:\n${out}")
endif()
if(EXPECT AND NOT out MATCHES "^${EXPECT}\n")
  message(FATAL_ERROR "the first line should read '${EXPECT}'; got:\n${out}")
endif()
