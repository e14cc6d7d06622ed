# Fails when the code reads a CLFORMER_* environment variable that docs/ENVIRONMENT.md's
# environment table does not list (a row starting "| `NAME` |"). A read is a
# call getenv("NAME") or one of the wrappers that take the name first
# (runtime/device/context_params.c's env(), read_bool(), read_log_level();
# tools/cli/ranks.c's env()), in the C sources of runtime/, tools/ and include/.
file(GLOB_RECURSE sources ${SOURCE_DIR}/runtime/*.c ${SOURCE_DIR}/runtime/*.cc
     ${SOURCE_DIR}/runtime/*.h ${SOURCE_DIR}/tools/*.c ${SOURCE_DIR}/tools/*.h
     ${SOURCE_DIR}/include/*.h)
set(read "")
foreach(f IN LISTS sources)
  file(STRINGS ${f} lines REGEX "(getenv|env|read_[a-z_]+)\\([ \t]*\"CLFORMER_")
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "(getenv|env|read_[a-z_]+)\\([ \t]*\"CLFORMER_[A-Z0-9_]+\"" calls
           "${line}")
    foreach(call IN LISTS calls)
      string(REGEX REPLACE ".*\"(CLFORMER_[A-Z0-9_]+)\"" "\\1" name "${call}")
      list(APPEND read ${name})
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES read)
file(STRINGS ${SOURCE_DIR}/docs/ENVIRONMENT.md rows REGEX "^\\| `CLFORMER_[A-Z0-9_]+` \\|")
set(documented "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE "^\\| `(CLFORMER_[A-Z0-9_]+)` \\|.*" "\\1" name "${row}")
  list(APPEND documented ${name})
endforeach()
set(missing "")
foreach(name IN LISTS read)
  list(FIND documented ${name} at)
  if(at LESS 0)
    list(APPEND missing ${name})
  endif()
endforeach()
list(LENGTH read n_read)
list(LENGTH documented n_doc)
message("${n_read} CLFORMER_* variables read by the code, ${n_doc} in docs/ENVIRONMENT.md's table")
if(missing)
  list(JOIN missing ", " text)
  message(FATAL_ERROR "environment variables the code reads but docs/ENVIRONMENT.md's environment table "
          "does not list (add a row \"| `NAME` | what it does | default |\"): ${text}")
endif()
if(n_read EQUAL 0)
  message(FATAL_ERROR "found no CLFORMER_* environment reads: the pattern no longer matches the code")
endif()
