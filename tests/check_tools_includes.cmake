# Fails when a file under tools/ includes a header of runtime/: the clformer
# command and its helpers use the public API (include/clformer.h,
# include/clformer_check.h) only. A quoted include is resolved by name
# against the runtime/ tree, as the compiler would find it on the private
# include path. One exception: tools/util/ is the command's private utility
# library (clformer_util.h), built on the runtime's internals so that the
# public header need not carry the command's helpers; everything else under
# tools/ may include clformer_util.h but no runtime/ header. Even
# tools/tuning/gemm_bench.c times GEMM through include/clformer_check.h.
cmake_policy(SET CMP0057 NEW) # if(... IN_LIST ...) in a -P script

file(GLOB_RECURSE runtime_headers RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/runtime/*.h)
set(runtime_names "")
foreach(h IN LISTS runtime_headers)
  get_filename_component(name ${h} NAME)
  list(APPEND runtime_names ${name})
endforeach()

file(GLOB_RECURSE tool_files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/tools/*.c ${SOURCE_DIR}/tools/*.h
     ${SOURCE_DIR}/tools/*.cc ${SOURCE_DIR}/tools/*.cpp)
set(found "")
set(checked 0)
list(FILTER tool_files EXCLUDE REGEX "^tools/util/")
foreach(f IN LISTS tool_files)
  math(EXPR checked "${checked} + 1")
  file(STRINGS ${SOURCE_DIR}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
    get_filename_component(name ${inc} NAME)
    get_filename_component(dir ${SOURCE_DIR}/${f} DIRECTORY)
    if(EXISTS ${dir}/${inc}) # found beside the including file first
      continue()
    endif()
    if(name IN_LIST runtime_names OR inc MATCHES "^(\\.\\./)*runtime/")
      list(APPEND found "${f}: ${inc}")
    endif()
  endforeach()
endforeach()
list(LENGTH runtime_names n_headers)
message("${checked} files under tools/ checked against ${n_headers} runtime/ headers")
if(found)
  list(JOIN found "\n  " text)
  message(FATAL_ERROR "files under tools/ include runtime/ headers (use include/clformer.h):\n  ${text}")
endif()
