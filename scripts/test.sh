#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test.
# The last line is "N passed, N failed", counting test cases (gtest cases of
# every test target; a target that fails to build or crashes before writing
# its report counts as one failed case). Extra arguments go to `bazel test`
# (e.g. --config=asan).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
# Two local jobs: the machines that run this have two cores.
bazel test --jobs=2 --local_test_jobs=2 "$@" //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

testlogs=$(bazel info "$@" bazel-testlogs 2>/dev/null || bazel info bazel-testlogs)
passed=0
failed=0
while read -r target result; do
  path=${target#//}
  xml="$testlogs/${path/://}/test.xml"
  if [ "$result" = PASSED ] && [ -f "$xml" ]; then
    n=$(grep -o -m1 '<testsuites[^>]*tests="[0-9]*"' "$xml" | grep -o 'tests="[0-9]*"' | grep -o '[0-9]*')
    passed=$((passed + ${n:-1}))
  elif [ -f "$xml" ] && grep -q '<testsuites' "$xml"; then
    n=$(grep -o -m1 '<testsuites[^>]*' "$xml" | grep -o ' tests="[0-9]*"' | grep -o '[0-9]*')
    f=$(grep -o -m1 '<testsuites[^>]*' "$xml" | grep -o 'failures="[0-9]*"' | grep -o '[0-9]*')
    f=${f:-1}; [ "$f" -eq 0 ] && f=1
    failed=$((failed + f))
    passed=$((passed + ${n:-0} - f))
  else
    failed=$((failed + 1))
  fi
done < <(grep -oE '^//[^ ]+ +(\(cached\) )?(PASSED|FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)' "$log" \
           | sed -E 's/\(cached\) //; s/ +/ /; s/NO STATUS/NO_STATUS/')
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # A build failure before any test ran still counts as a failure.
  failed=1
fi
rm -f "$log"
echo "${passed} passed, ${failed} failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
