# Intel's OpenCL CPU runtime, when tools/intel-opencl.sh has installed it
# (tools/install-deps.sh --with-intel-opencl): its ICD file joins the test
# suite's ICD directory and `intel:cpu` the default test devices.
set(default_intel_dir "$ENV{HOME}/.cache/clformer/intel-opencl")
if(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(default_intel_dir "$ENV{XDG_CACHE_HOME}/clformer/intel-opencl")
endif()
if(DEFINED ENV{CLFORMER_INTEL_OPENCL_DIR} AND NOT "$ENV{CLFORMER_INTEL_OPENCL_DIR}" STREQUAL "")
  set(default_intel_dir "$ENV{CLFORMER_INTEL_OPENCL_DIR}")
endif()
set(CLFORMER_INTEL_OPENCL_DIR "${default_intel_dir}" CACHE PATH
    "Where tools/intel-opencl.sh installed Intel's OpenCL CPU runtime (a venv)")
if(EXISTS "${CLFORMER_INTEL_OPENCL_DIR}/clformer-stamp" AND
   EXISTS "${CLFORMER_INTEL_OPENCL_DIR}/lib/libintelocl.so")
  set(CLFORMER_INTEL_OPENCL_LIB "${CLFORMER_INTEL_OPENCL_DIR}/lib/libintelocl.so")
  message(STATUS "Intel OpenCL CPU runtime: ${CLFORMER_INTEL_OPENCL_LIB} (test selector intel:cpu)")
  set(CLFORMER_DEFAULT_TEST_DEVICES "pocl:pthread;pocl:basic;oclgrind;intel:cpu")
else()
  set(CLFORMER_INTEL_OPENCL_LIB "")
  set(CLFORMER_DEFAULT_TEST_DEVICES "pocl:pthread;pocl:basic;oclgrind")
endif()
