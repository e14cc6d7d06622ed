#!/usr/bin/env bash
# Installs Intel's OpenCL CPU runtime (oneAPI, from PyPI) into a venv of its
# own and writes an ICD file naming it, so that the test suite can run on a
# second vendor's OpenCL compiler next to PoCL and Oclgrind. Never touches
# system Python or /etc/OpenCL/vendors: the build's ICD directory (build/icd)
# picks the ICD file up (tests/CMakeLists.txt).
#
# Usage: tools/intel-opencl.sh [--print-dir]
#   --print-dir  print where it is (or would be) installed and exit
# The place: $CLFORMER_INTEL_OPENCL_DIR, else $XDG_CACHE_HOME/clformer/intel-opencl,
# else ~/.cache/clformer/intel-opencl. About 310 MiB.
set -euo pipefail
source "$(dirname "$0")/pinned-venv.sh"

# Pinned: the versions the suite was last run on (docs/DEVICES.md).
INTEL_OPENCL_RT=2026.2.0
INTEL_CMPLR_LIB_RT=2026.2.0
stamp="intel-opencl-rt==${INTEL_OPENCL_RT} intel-cmplr-lib-rt==${INTEL_CMPLR_LIB_RT}"

dir=${CLFORMER_INTEL_OPENCL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/clformer/intel-opencl}
pinned_venv_args intel-opencl "$dir" "$@"

if pinned_venv_current "$dir" "$stamp" lib/libintelocl.so intel-cpu.icd; then
    echo "intel-opencl: $stamp already in $dir"
    exit 0
fi
python3 -c 'import ensurepip, venv' 2>/dev/null || {
    echo "intel-opencl: python3 with venv is needed (apt-get install python3-venv)" >&2
    exit 1
}
echo "intel-opencl: installing $stamp into $dir"
pinned_venv_create "$dir" python3
pinned_venv_install "$dir" "intel-opencl-rt==${INTEL_OPENCL_RT}" "intel-cmplr-lib-rt==${INTEL_CMPLR_LIB_RT}"
[[ -f "$dir/lib/libintelocl.so" ]] || {
    echo "intel-opencl: $dir/lib/libintelocl.so missing after pip install" >&2
    exit 1
}
# The ICD names the library by its full path; libintelocl.so finds its own
# dependencies next to it (RUNPATH $ORIGIN), so nothing goes on LD_LIBRARY_PATH
# (the venv's lib/ also holds Intel's own libOpenCL.so.1 and a libhwloc that
# would shadow the system's for every program).
echo "$dir/lib/libintelocl.so" > "$dir/intel-cpu.icd.tmp"
mv "$dir/intel-cpu.icd.tmp" "$dir/intel-cpu.icd"
pinned_venv_stamp "$dir" "$stamp"
echo "intel-opencl: done; reconfigure (tools/test.sh does) to add intel:cpu to the test devices"
