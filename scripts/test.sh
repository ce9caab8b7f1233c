#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test.
# The last line is "N passed, N failed", counting test cases (gtest cases of
# every test target; a target that fails to build or crashes before writing
# its report counts as one failed case) plus one per fuzz target run and
# one for the clang thread-safety build.
#
#   scripts/test.sh                 the plain suite, what a newcomer runs:
#     1. bazel test //...           (gcc; every corpus replayed as a test)
#   scripts/test.sh --full          the full run, as CI runs it: 1, then
#     2. scripts/fuzz.sh            each libFuzzer target for
#                                   $GLINT_FUZZ_SECONDS (default 15) s
#     3. bazel test --config=tsan   the concurrency-heavy targets under
#                                   ThreadSanitizer (TSAN_TARGETS below)
#     4. bazel build --config=clang everything with clang's thread-safety
#                                   analysis as errors
#     5. deploy/container_test.sh   glintd's image built offline, three
#                                   containers of it behind one client
#   scripts/test.sh ARGS...         only step 1, with ARGS given to
#                                   `bazel test` (e.g. --config=asan or
#                                   --config=tsan for the whole suite;
#                                   a sanitizer config builds in an
#                                   output base of its own, shared with
#                                   step 3 for tsan, so that the plain
#                                   build keeps its cache)
#
# Each stage prints how long it took ("stage ...: N s"); steps 2-4 build
# with other compilers or flags, each in an output base of its own, so a
# cold full run builds the tree four times.
set -uo pipefail
cd "$(dirname "$0")/.."

full=0
if [ "${1:-}" = --full ]; then
  full=1
  shift
  if [ $# -ne 0 ]; then
    echo "scripts/test.sh --full takes no other arguments" >&2
    echo "0 passed, 1 failed"
    exit 2
  fi
fi

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

# The targets where threads meet: devices (streams, events, the compute
# engine, the fault wrapper), the executor, HostManager, the server, and the
# whole-system tests that run many clients against a real glintd; and the
# hostile kernel inputs, whose memory the plain build caps by RLIMIT_AS but
# TSan only by its allocator's limit (issue 34).
TSAN_TARGETS=(
  //devices:stream_test
  //devices:shared_stream_test
  //devices:compute_engine_test
  //devices/fault:fault_injecting_device_test
  //devices/conformance:device_conformance_test
  //executor:executor_test
  //runtime:host_manager_test
  //runtime:batcher_test
  //runtime:host_manager_batching_test
  //onnx:import_sandbox_test
  //store:network_store_test
  //runtime/server/grpc:service_test
  //runtime/server/grpc:idle_call_watch_test
  //serving:shared_memory_test
  //serving:serving_core_test
  //runtime/server/grpc:request_budget_test
  //tests:e2e_device_failure_test
  //tests:glintd_shutdown_test
  //tests:e2e_inflight_test
  //runtime:plan_cache_test
  //runtime:admission_test
  //runtime:device_monitor_test
  //runtime:reprovision_test
  //runtime/server:glint_server_test
  //runtime/server/http:http_server_test
  //runtime:host_manager_dynamic_shape_test
  //devices/cpu:control_flow_test
  //capi:c_api_test
  //runtime:host_manager_memory_test
  //devices/cpu:hostile_shapes_test
)

passed=0
failed=0

# Adds the cases of a `bazel test` run to the totals: its log, its exit
# status and its bazel-testlogs folder.
count_bazel() {
  local log=$1 status=$2 testlogs=$3
  local found=0
  while read -r target result; do
    found=1
    local path=${target#//}
    local xml="$testlogs/${path/://}/test.xml"
    if [ "$result" = PASSED ] && [ -f "$xml" ]; then
      local n
      n=$(grep -o -m1 '<testsuites[^>]*tests="[0-9]*"' "$xml" | grep -o 'tests="[0-9]*"' | grep -o '[0-9]*')
      passed=$((passed + ${n:-1}))
    elif [ -f "$xml" ] && grep -q '<testsuites' "$xml"; then
      local n f
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
  # A build failure before any test ran still counts as a failure.
  if [ "$status" -ne 0 ] && [ "$found" -eq 0 ]; then failed=$((failed + 1)); fi
  if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
}

log=$(mktemp)
packages=""
trap 'rm -f "$log" "$packages"' EXIT

# Prints how long the stage that began at $1 (epoch seconds) took.
stage_took() {
  echo "stage $2: $(( $(date +%s) - $1 )) s"
}

# A sanitizer config compiles every file with other flags: built in the
# default output base it would replace the plain build's outputs, and the
# next plain run would rebuild everything. Such a run gets an output base
# of its own (--symlink_prefix=/ keeps the bazel-* links on the plain build).
# Its packages come from the default server (as for step 4): walking //...
# from a second output base would follow this checkout's bazel-* links into
# the first one.
startup=()
patterns=(//...)
for arg in "$@"; do
  case "$arg" in
    --config=asan | --config=tsan)
      sanitizer=${arg#--config=}
      base_var=GLINT_${sanitizer^^}_OUTPUT_BASE
      startup=(--output_base="${!base_var:-$HOME/.cache/glint-$sanitizer-bazel}")
      packages=$(mktemp)
      bazel query //... --output=package 2>/dev/null |
        sed 's|^|//|; s|$|:all|' > "$packages"
      patterns=(--symlink_prefix=/ --target_pattern_file="$packages")
      ;;
  esac
done

# 1. Everything. Two local jobs: the machines that run this have two cores.
began=$(date +%s)
bazel "${startup[@]}" test --jobs=2 --local_test_jobs=2 "$@" "${patterns[@]}" \
  2>&1 | tee "$log"
status=${PIPESTATUS[0]}
count_bazel "$log" "$status" \
  "$(bazel "${startup[@]}" info "$@" bazel-testlogs 2>/dev/null)"
stage_took "$began" "1 (bazel test //...)"

if [ "$full" -eq 1 ]; then
  # 2. Fuzzing, bounded (the clang build has its own output base).
  began=$(date +%s)
  scripts/fuzz.sh all "${GLINT_FUZZ_SECONDS:-15}" 2>&1 | tee "$log"
  fuzz_line=$(tail -1 "$log")
  if [[ "$fuzz_line" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    passed=$((passed + BASH_REMATCH[1]))
    failed=$((failed + BASH_REMATCH[2]))
  else
    failed=$((failed + 1))
  fi
  stage_took "$began" "2 (fuzz)"

  # 3. ThreadSanitizer over the concurrency-heavy targets, in an output base
  # of its own so that the gcc build above keeps its cache.
  began=$(date +%s)
  tsan_base=${GLINT_TSAN_OUTPUT_BASE:-$HOME/.cache/glint-tsan-bazel}
  bazel --output_base="$tsan_base" test --config=tsan --symlink_prefix=/ \
    --jobs=2 --local_test_jobs=2 "${TSAN_TARGETS[@]}" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  count_bazel "$log" "$status" \
    "$(bazel --output_base="$tsan_base" info --config=tsan bazel-testlogs 2>/dev/null)"
  stage_took "$began" "3 (TSan)"

  # 4. Clang's thread-safety analysis over everything (-Werror=thread-safety:
  # every ABSL_GUARDED_BY and lock annotation holds). A build, counted as one
  # case; its own output base, as the compiler differs.
  # Its packages come from the gcc build's server: a second output base
  # would walk //... into this checkout's bazel-* links to the first one.
  began=$(date +%s)
  clang_base=${GLINT_CLANG_OUTPUT_BASE:-$HOME/.cache/glint-clang-bazel}
  targets=$(mktemp)
  bazel query //... --output=package 2>/dev/null | sed 's|^|//|; s|$|:all|' > "$targets"
  if [ -s "$targets" ] &&
     bazel --output_base="$clang_base" build --config=clang --symlink_prefix=/ \
       --jobs=2 --target_pattern_file="$targets" 2>&1 | tee "$log" |
       grep -E 'error|warning: .*thread-safety|Build complet|FAILED';
     [ "${PIPESTATUS[0]}" -eq 0 ]; then
    echo "clang thread-safety build: PASSED"
    passed=$((passed + 1))
  else
    echo "clang thread-safety build: FAILED"
    failed=$((failed + 1))
  fi
  rm -f "$targets"
  stage_took "$began" "4 (clang thread-safety build)"

  # 5. glintd in containers: the image built offline (Debian's archive
  # only) and three containers of it behind one client, one killed and
  # restarted (deploy/container_test.sh). One case; needs root.
  began=$(date +%s)
  if deploy/container_test.sh 2>&1 | tee "$log" | grep -E '^(build_image|container_test):'; [ "${PIPESTATUS[0]}" -eq 0 ]; then
    echo "container test: PASSED"
    passed=$((passed + 1))
  else
    tail -40 "$log"
    echo "container test: FAILED"
    failed=$((failed + 1))
  fi
  stage_took "$began" "5 (containers)"
fi

echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
