# cf_write_if_changed(<file> <content>): writes <file> only when its content
# differs, so a generated source that did not change rebuilds nothing. Used by
# the generators here, at configure time and in -P scripts alike.
function(cf_write_if_changed out content)
  if(EXISTS "${out}")
    file(READ "${out}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${out}" "${content}")
endfunction()
