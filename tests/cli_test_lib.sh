# Sourced by the command-line test scripts (test_cli_safety.sh,
# test_cli_files.sh): the case name ($1), the binary and the test data from
# ctest's environment, a scratch folder to work in (removed at exit, with
# every background job the script recorded in pids), and ok/bad.
set -u
case_name=$1
bin=${CLFORMER_BINARY:?run through ctest}
data=${CLFORMER_TEST_DATA:?run through ctest}
dir=$(mktemp -d "/tmp/clformer-${CLI_TEST_TAG:-cli}-XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
cd "$dir" || exit 1
failures=0 cases=0
ok() { cases=$((cases + 1)); [[ -n ${QUIET_OK:-} ]] || echo "ok   $*"; }
bad() { echo "FAIL $*"; failures=$((failures + 1)); }
