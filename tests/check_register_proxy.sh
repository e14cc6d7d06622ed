#!/usr/bin/env bash
# gpu_proxy_registers_flags: tools/proxy/register-proxy.sh --check must fail
# on tests/data/register-proxy/flagged.cl's kernel with a dynamically indexed
# private array and its kernel with a real call, name both, and pass the clean
# kernel; with --allow naming the first, only the call is left flagged; and
# it counts a kernel's NVPTX shared-memory loads per multiply-add.
# Usage: check_register_proxy.sh PROXY BUILD_DIR FIXTURE_DIR
set -uo pipefail
proxy=$1 build=$2 fixture=$3
fail() { echo "check_register_proxy: $*" >&2; exit 1; }

out=$("$proxy" --check --build "$build" --cl "$fixture" 2>&1)
rc=$?
echo "$out"
[[ $rc == 1 ]] || fail "--check exited $rc on the flagged kernels, not 1"
grep -q 'flagged private_array_dynamic_index: NVPTX local [1-9]' <<< "$out" ||
    fail "the dynamically indexed private array is not flagged"
grep -q 'flagged real_call: .* [1-9][0-9]* calls' <<< "$out" || fail "the real call is not flagged"
! grep -q 'flagged clean_scale:' <<< "$out" || fail "the clean kernel is flagged"
# shared_reads' 4 shared-memory loads over its 8 multiply-adds; none of either
grep -Eq '^flagged +- shared_reads +0 +0\.500 ' <<< "$out" ||
    fail "shared_reads' shared loads per multiply-add are not 0.500"
grep -Eq '^flagged +- clean_scale +0 +- ' <<< "$out" ||
    fail "clean_scale, without multiply-adds, does not show -"

out=$("$proxy" --check --allow private_array_dynamic_index --build "$build" --cl "$fixture" 2>&1)
rc=$?
echo "$out"
[[ $rc == 1 ]] || fail "--check --allow exited $rc with a call left, not 1"
! grep -q 'flagged private_array_dynamic_index:' <<< "$out" || fail "--allow did not allow"
grep -q 'private_array_dynamic_index .* ~$' <<< "$out" || fail "the allowed kernel is not marked ~"
grep -q 'flagged real_call:' <<< "$out" || fail "--allow hid the call"
echo "check_register_proxy: ok"
