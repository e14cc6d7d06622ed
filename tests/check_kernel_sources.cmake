# Fails when a kernel source (cl/*.cl, cl/common.h) uses a 3-component vector
# type (float3, int3, uint3, ...). Intel's OpenCL CPU compiler (2026.22)
# returns a float3 from a function with barriers that it does not inline
# through per-item storage 4 floats apart read 3 apart (item i got float 3i),
# which made cross_entropy's gradient and log_softmax_rows garbage under
# CLFORMER_PROFILE=gpu-layouts there (docs/DEVICES.md); a struct or a float4
# came back right. A 3-vector is 4 elements in memory but 3 in vload3/vstore3,
# a layout compilers get wrong; kernels use a struct or scalars instead.
# Comments are skipped: the text after "/*" or "//" on a line, and lines that
# start with "*" (the middle of a block comment).
file(GLOB sources ${SOURCE_DIR}/cl/*.cl ${SOURCE_DIR}/cl/common.h)
if(NOT sources)
  message(FATAL_ERROR "no kernel sources under ${SOURCE_DIR}/cl")
endif()
set(found "")
foreach(f IN LISTS sources)
  file(READ ${f} text)
  # one list item per line: ';' and brackets would split or join items
  string(REGEX REPLACE "[][;\\]" " " text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*\\*")
      continue()
    endif()
    string(REGEX REPLACE "(/\\*|//).*$" "" code "${line}")
    if(code MATCHES "(^|[^A-Za-z0-9_])((u?(char|short|int|long))|half|float|double)3([^A-Za-z0-9_]|$)")
      get_filename_component(name ${f} NAME)
      list(APPEND found "cl/${name}:${n}: ${CMAKE_MATCH_2}3")
    endif()
  endforeach()
endforeach()
if(found)
  string(REPLACE ";" "\n  " found "${found}")
  message(FATAL_ERROR "3-component vector types in kernel sources (Intel's CPU compiler "
          "miscompiled a float3 return; use a struct or scalars, see "
          "tests/check_kernel_sources.cmake):\n  ${found}")
endif()
list(LENGTH sources count)
message(STATUS "${count} kernel sources, no 3-component vector types")
