# Fails when a comment in the sources names a file that does not exist, as
# comments do after a file is moved or renamed. Scanned: comment lines (those
# holding "/*", "//", or starting with "*" or "#") of the C, C++, OpenCL and
# CMake sources under runtime/, cl/, include/, tools/, tests/ and examples/.
# A name with a folder ("runtime/decode/decode.c") must exist from the source
# root or beside the commenting file; a bare name ("decode.c") must exist
# somewhere in those trees.
cmake_policy(SET CMP0057 NEW) # if(... IN_LIST ...) in a -P script
set(trees runtime cl include tools tests examples cmake docs)
set(globs "")
foreach(t IN LISTS trees)
  list(APPEND globs ${SOURCE_DIR}/${t}/*)
endforeach()
file(GLOB_RECURSE all RELATIVE ${SOURCE_DIR} ${globs})
list(APPEND all CMakeLists.txt README.md)
set(names "")
foreach(f IN LISTS all)
  get_filename_component(n ${f} NAME)
  list(APPEND names ${n})
endforeach()

set(ext "c|h|cc|cl|md|py|sh|cmake|json|map|in")
set(scanned "")
foreach(f IN LISTS all)
  if(f MATCHES "\\.(c|h|cc|cl|cmake)$" OR f MATCHES "CMakeLists\\.txt$")
    list(APPEND scanned ${f})
  endif()
endforeach()

set(found "")
set(refs 0)
foreach(f IN LISTS scanned)
  get_filename_component(dir ${f} DIRECTORY)
  # one list item per line: ';' and brackets would split or join items
  file(READ ${SOURCE_DIR}/${f} text)
  string(REGEX REPLACE "[][;\\]" " " text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "(/\\*|//|^[ \t]*\\*|^[ \t]*#)" OR line MATCHES "^[ \t]*#[ \t]*include")
      continue() # not a comment, or an include (the compiler checks those)
    endif()
    string(REGEX MATCHALL "[A-Za-z0-9_./-]*[A-Za-z0-9_]\\.(${ext})([^A-Za-z0-9_]|$)" words
           "${line}")
    foreach(w IN LISTS words)
      string(REGEX REPLACE "[^A-Za-z0-9_]$" "" w "${w}")
      string(REGEX REPLACE "^[./]+" "" w "${w}")
      if(w STREQUAL "" OR w MATCHES "^(FILE|NAME|X|x|foo|out|my|your|some|the)\\."
         OR w STREQUAL "llm.c") # placeholders, and a peer project's name
        continue()
      endif()
      if(w MATCHES "[*<>]" OR w MATCHES "^[0-9.]+$")
        continue()
      endif()
      math(EXPR refs "${refs} + 1")
      if(w MATCHES "/")
        if(NOT EXISTS ${SOURCE_DIR}/${w} AND NOT EXISTS ${SOURCE_DIR}/${dir}/${w})
          list(APPEND found "${f}: ${w}")
        endif()
      else()
        if(NOT w IN_LIST names)
          list(APPEND found "${f}: ${w}")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()
list(LENGTH scanned n)
message("${n} files scanned, ${refs} file names in comments checked")
if(found)
  list(REMOVE_DUPLICATES found)
  list(JOIN found "\n  " text)
  message(FATAL_ERROR "comments name files that do not exist (fix the name or the comment):\n  ${text}")
endif()
