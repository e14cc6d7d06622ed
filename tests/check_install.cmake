# Installs clformer from BUILD_DIR into a fresh prefix under WORK_DIR, then
# builds the examples against that installed copy twice: with pkg-config and
# a plain compiler call, and as a CMake project with find_package(clformer).
# Each built program must start (without arguments: its usage line, exit 2).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

# A program linked to the installed library runs and prints its usage line,
# as a user starts it: no LD_LIBRARY_PATH (the prefix is not one the dynamic
# loader searches; the program's run path must find the library).
function(check_runs program)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${program}
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "usage: ")
    message(FATAL_ERROR "${program} did not start as expected (exit ${rc}): ${err}")
  endif()
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/clformer.h include/clformer_version.h ${LIBDIR}/pkgconfig/clformer.pc
          ${LIBDIR}/cmake/clformer/clformerConfig.cmake
          ${LIBDIR}/cmake/clformer/clformerConfigVersion.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()

# pkg-config: the flags of the installed clformer.pc, one compiler call.
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
                        ${PKG_CONFIG} --cflags --libs clformer
                RESULT_VARIABLE rc OUTPUT_VARIABLE flags ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs clformer failed: ${err}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run("cc with pkg-config's flags" ${CC} -std=c11 -Wall -Werror ${SOURCE_DIR}/examples/translate_stdin.c
    ${flags} -o ${WORK_DIR}/translate_stdin_pc)
check_runs(${WORK_DIR}/translate_stdin_pc)
message("pkg-config: built and ran translate_stdin with ${flags}")

# pkg-config --static: the static library with every library it needs
# (OpenBLAS among them when the build has the host GEMM provider).
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig
                        ${PKG_CONFIG} --static --cflags --libs clformer
                RESULT_VARIABLE rc OUTPUT_VARIABLE static_flags ERROR_VARIABLE err
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --static --cflags --libs clformer failed: ${err}")
endif()
separate_arguments(static_flags UNIX_COMMAND "${static_flags}")
# -lclformer would take the shared library: name the archive instead
list(TRANSFORM static_flags REPLACE "^-lclformer$" "-l:libclformer.a")
run("cc with pkg-config --static's flags" ${CC} -std=c11 -Wall -Werror
    ${SOURCE_DIR}/examples/translate_stdin.c ${static_flags} -o ${WORK_DIR}/translate_stdin_static)
execute_process(COMMAND ldd ${WORK_DIR}/translate_stdin_static OUTPUT_VARIABLE deps)
if(deps MATCHES "libclformer")
  message(FATAL_ERROR "the --static build still loads libclformer.so:\n${deps}")
endif()
check_runs(${WORK_DIR}/translate_stdin_static)
message("pkg-config --static: built and ran translate_stdin with ${static_flags}")

# CMake: examples/ as a project of its own, finding the installed package.
run("configuring examples/ with find_package(clformer)"
    ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/examples
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${CC})
run("building examples/" ${CMAKE_COMMAND} --build ${WORK_DIR}/examples)
check_runs(${WORK_DIR}/examples/translate_stdin)
message("find_package(clformer): built examples/ and ran translate_stdin")
file(REMOVE_RECURSE ${WORK_DIR})
