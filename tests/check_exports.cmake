# Fails when the shared library LIBRARY exports a symbol that is not part of
# the public API: every exported (defined, dynamic) symbol must start with
# "clformer_". Internal cf_* functions are hidden by -fvisibility=hidden and
# only include/clformer.h's CLFORMER_API declarations stay visible.
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${rc}): ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(public 0)
set(stray "")
set(helpers "")
foreach(line IN LISTS lines)
  # "ADDRESS TYPE NAME"; the name may carry a version ("name@@VERS").
  if(NOT line MATCHES "^[0-9a-fA-F]* *[A-Za-z] +([^ @]+)")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  if(name MATCHES "^clformer_(read_file|atomic_file_|lines_|tensors_|set_error)")
    # the command's helpers live in its private tools/util library
    list(APPEND helpers "${name}")
  elseif(name MATCHES "^clformer_")
    math(EXPR public "${public} + 1")
  else()
    list(APPEND stray "${name}")
  endif()
endforeach()
message("${LIBRARY}: ${public} exported clformer_* symbols")
if(stray)
  list(JOIN stray " " stray_text)
  message(FATAL_ERROR "exported symbols outside the public API (mark only "
          "include/clformer.h's functions CLFORMER_API): ${stray_text}")
endif()
if(helpers)
  list(JOIN helpers " " helpers_text)
  message(FATAL_ERROR "the library exports the command's helpers (they belong in "
          "tools/util/clformer_util.h, not include/clformer.h): ${helpers_text}")
endif()
if(public EQUAL 0)
  message(FATAL_ERROR "no clformer_* symbol is exported: is CLFORMER_API defined?")
endif()
