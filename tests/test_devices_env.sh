#!/usr/bin/env bash
# Every device the set-up installs is selectable as is, as a user runs
# `clformer devices` (no OCL_ICD_VENDORS, no POCL_DEVICES):
#   - Oclgrind and Intel's CPU runtime (when installed) are listed, and
#     CLFORMER_DEVICE=oclgrind / intel:cpu select them;
#   - the printed export line (and the "stable" name line) selects the same
#     device again in a new process, for every selector tried;
#   - a system ICD file added later is seen, an extra that the system already
#     lists is listed once, and a user's OCL_ICD_VENDORS still decides alone;
#   - a cache directory that cannot be written leaves the system's devices
#     and says why.
# Usage: tests/test_devices_env.sh CLFORMER EXPECT_OCLGRIND(0|1) INTEL_DIR
# (INTEL_DIR: where Intel's runtime is installed, empty when it is not).
set -euo pipefail
bin=${1:?usage: test_devices_env.sh CLFORMER EXPECT_OCLGRIND INTEL_DIR}
expect_oclgrind=${2:?}
intel_dir=${3:-}
tmp=$(mktemp -d /tmp/clformer-devices-env-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the system's vendor directory as it is, in a copy the test can add to
mkdir -p "$tmp/vendors"
cp /etc/OpenCL/vendors/*.icd "$tmp/vendors/"
unset OCL_ICD_VENDORS POCL_DEVICES CLFORMER_DEVICE XDG_CACHE_HOME
export OPENCL_VENDOR_PATH=$tmp/vendors CLFORMER_CACHE_DIR=$tmp/cache
if [[ -n "$intel_dir" ]]; then
    export CLFORMER_INTEL_OPENCL_DIR=$intel_dir
else
    export CLFORMER_INTEL_OPENCL_DIR=$tmp/no-intel # nothing installed there
fi

# The selected device: its "* P:D name" line and the platform line after it,
# with the index pair cut (indices may differ between two listings).
selected() { # CLFORMER_DEVICE value ("" for unset)
    local out
    out=$(CLFORMER_DEVICE=$1 "$bin" devices 2>&1) || { echo "$out" >&2; return 1; }
    printf '%s\n' "$out" | awk '/^\* [0-9]+:[0-9]+ / { sub(/^\* [0-9]+:[0-9]+ +/, ""); print; getline; print; exit }'
}

list=$("$bin" devices)
count() { printf '%s\n' "$list" | grep -c "$1" || true; }
if ((expect_oclgrind)); then
    [[ $(count '^  [0-9]*:[0-9]* *Oclgrind Simulator$') == 1 ]] ||
        fail "Oclgrind is not listed once without OCL_ICD_VENDORS:"$'\n'"$list"
    selected oclgrind | grep -q 'Oclgrind Simulator' || fail "CLFORMER_DEVICE=oclgrind does not select Oclgrind"
fi
if [[ -n "$intel_dir" ]]; then
    [[ $(count 'platform  Intel(R) OpenCL') == 1 ]] ||
        fail "Intel's CPU runtime is not listed once without OCL_ICD_VENDORS:"$'\n'"$list"
    selected intel:cpu | grep -q 'platform  Intel(R) OpenCL' ||
        fail "CLFORMER_DEVICE=intel:cpu does not select Intel's CPU runtime"
fi
# the default stays a real device, never the simulator the runtime now lists
if selected "" | grep -q 'Oclgrind'; then fail "the default is the simulator: $(selected '')"; fi

# each export line selects what it says, in a new process
selectors=("" pocl:pthread pocl:basic)
((expect_oclgrind)) && selectors+=(oclgrind)
[[ -n "$intel_dir" ]] && selectors+=(intel:cpu)
for sel in "${selectors[@]}"; do
    want=$(selected "$sel")
    out=$(CLFORMER_DEVICE=$sel "$bin" devices)
    n=0
    while IFS= read -r value; do
        got=$(selected "$value")
        [[ "$got" == "$want" ]] ||
            fail "CLFORMER_DEVICE='$sel' printed export CLFORMER_DEVICE=$value, which selects"$'\n'"$got"$'\n'"instead of"$'\n'"$want"
        n=$((n + 1))
    done < <(printf '%s\n' "$out" | sed -n "s/^\(# or, stable across driver installs: \)\{0,1\}export CLFORMER_DEVICE=//p" |
             sed "s/^'\(.*\)'\$/\1/")
    ((n > 0)) || fail "CLFORMER_DEVICE='$sel' printed no export line:"$'\n'"$out"
    echo "CLFORMER_DEVICE='$sel': $n export line(s) select $(printf '%s' "$want" | head -n 1)"
done

# a driver installed later is seen: here Oclgrind registered by the system,
# which must then not be listed twice
if ((expect_oclgrind)); then
    lib=$(cat "$tmp"/cache/icd/*/clformer-oclgrind.icd | head -n 1)
    echo "$lib" > "$tmp/vendors/oclgrind-system.icd"
    [[ $("$bin" devices | grep -c 'Oclgrind Simulator$') == 1 ]] ||
        fail "Oclgrind registered by the system is not listed exactly once"
    rm "$tmp/vendors/oclgrind-system.icd"
fi
# a user's OCL_ICD_VENDORS decides alone
mkdir -p "$tmp/only-pocl"
cp /etc/OpenCL/vendors/pocl*.icd "$tmp/only-pocl/"
only=$(OCL_ICD_VENDORS=$tmp/only-pocl "$bin" devices)
if printf '%s\n' "$only" | grep -q 'Oclgrind\|Intel(R) OpenCL'; then
    fail "OCL_ICD_VENDORS=$tmp/only-pocl still lists other drivers:"$'\n'"$only"
fi
# an unwritable cache: the system's devices, a warning, exit 0
err=$(CLFORMER_CACHE_DIR=/dev/null/cache "$bin" devices 2>&1 >/dev/null) ||
    fail "clformer devices failed with an unwritable cache directory: $err"
if ((expect_oclgrind)) || [[ -n "$intel_dir" ]]; then
    printf '%s\n' "$err" | grep -q 'only the system.s OpenCL devices are listed' ||
        fail "no warning with an unwritable cache directory: '$err'"
fi
echo "every installed device is listed and selectable without OCL_ICD_VENDORS"
