#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test.
# The last line is "N passed, N failed" (test targets; each target is one
# gtest binary or end-to-end test). Extra arguments go to `bazel test`
# (e.g. --config=asan).
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

log=$(mktemp)
# Two local jobs: the machines that run this have two cores.
bazel test --jobs=2 --local_test_jobs=2 "$@" //... 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(\(cached\) )?(FAILED|TIMEOUT|NO STATUS|FLAKY|INCOMPLETE)|^//[^ ]+ +FAILED TO BUILD' "$log")
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  # A build failure before any test ran still counts as a failure.
  failed=1
fi
rm -f "$log"
echo "${passed} passed, ${failed} failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
