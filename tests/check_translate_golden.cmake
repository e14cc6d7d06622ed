# Runs `clformer translate` (PROGRAM) on tests/data/decode (DATA) with the
# decoding options of case NAME and compares its output byte for byte with
# DATA/NAME.expected: the output of the implementation before finished rows
# left the batch (written by its binary on PoCL pthread; see
# tests/data/decode/README.md). An unchanged search must reproduce it.
if(NAME STREQUAL "greedy")
  set(options "")
elseif(NAME STREQUAL "beam4")
  set(options --beam 4)
elseif(NAME STREQUAL "beam5_lp06_b23")
  set(options --beam 5 --length-penalty 0.6 --batch-size 23)
else()
  message(FATAL_ERROR "unknown case '${NAME}'")
endif()
set(out ${WORK_DIR}/golden_${NAME}.txt)
execute_process(COMMAND ${PROGRAM} translate --model ${DATA}/model.safetensors
                        --input ${DATA}/input.en --output ${out} ${options}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "clformer translate exited with ${rc}: ${err}")
endif()
message("${err}")
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${out} ${DATA}/${NAME}.expected
                RESULT_VARIABLE differ)
if(differ)
  file(STRINGS ${out} got)
  file(STRINGS ${DATA}/${NAME}.expected want)
  list(LENGTH want n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    list(GET got ${i} g)
    list(GET want ${i} w)
    if(NOT g STREQUAL w)
      math(EXPR line "${i} + 1")
      message(FATAL_ERROR "line ${line} differs from the previous implementation's:\n"
              "  got:  ${g}\n  want: ${w}")
    endif()
  endforeach()
  message(FATAL_ERROR "${out} differs from ${DATA}/${NAME}.expected")
endif()
file(REMOVE ${out})
