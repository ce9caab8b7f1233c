#!/usr/bin/env bash
# Builds Glint's libFuzzer targets with clang (--config=fuzz) and runs each
# for a bounded time on a scratch copy of its committed corpus
# (fuzz/README.md).
#
# Usage: scripts/fuzz.sh [TARGET] [SECONDS]
#   TARGET   one of the targets below; empty or "all" runs every one.
#   SECONDS  per target, default 60.
#
# Per target it prints the executions and executions per second. A crash,
# leak, timeout or out-of-memory is copied into
# fuzz/corpus/<target>/regressions/ under a name saying what happened and
# where, the fuzzer's report is printed, and the target fails; the next
# `bazel test` replays that input (as <target>_test) until it is fixed.
# The last line is "N passed, N failed", counting targets; the exit status
# is non-zero if any failed.
#
# The clang build runs under its own output base ($GLINT_FUZZ_OUTPUT_BASE,
# default ~/.cache/glint-fuzz-bazel) so that it and the ordinary gcc build
# each keep their cache, and it creates no bazel-* links in the workspace.
set -uo pipefail
cd "$(dirname "$0")/.."

# name, Bazel label, -max_len: about the size of the largest useful input
# (bigger inputs make every run slower without reaching new code).
TARGETS=(
  "npy_fuzzer //client:npy_fuzzer 4096"
  "tensor_proto_fuzzer //client:tensor_proto_fuzzer 4096"
  "device_spec_fuzzer //devices:device_spec_fuzzer 256"
  "dim_expr_fuzzer //core:dim_expr_fuzzer 300"
  "run_request_fuzzer //proto:run_request_fuzzer 4096"
  "request_binding_fuzzer //runtime:request_binding_fuzzer 4096"
  "oip_request_fuzzer //proto:oip_request_fuzzer 4096"
  "rest_request_fuzzer //runtime/server/http:rest_request_fuzzer 4096"
  "http_connection_fuzzer //runtime/server/http:http_connection_fuzzer 4096"
  "placement_fuzzer //partitioner:placement_fuzzer 512"
  "onnx_import_fuzzer //onnx:onnx_import_fuzzer 8192"
  "network_store_fuzzer //store:network_store_fuzzer 4096"
  "add_network_stream_fuzzer //runtime/server/grpc:add_network_stream_fuzzer 4096"
)

want=${1:-all}
seconds=${2:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2
  echo "0 passed, 1 failed"
  exit 2
fi

selected=()
for entry in "${TARGETS[@]}"; do
  read -r name _ _ <<<"$entry"
  if [ "$want" = all ] || [ "$want" = "$name" ]; then selected+=("$entry"); fi
done
if [ ${#selected[@]} -eq 0 ]; then
  echo "fuzz.sh: unknown target '$want'; targets:" >&2
  for entry in "${TARGETS[@]}"; do echo "  ${entry%% *}" >&2; done
  echo "0 passed, 1 failed"
  exit 2
fi

scripts/install_deps.sh || { echo "0 passed, 1 failed"; exit 1; }

output_base=${GLINT_FUZZ_OUTPUT_BASE:-$HOME/.cache/glint-fuzz-bazel}
bazel_fuzz() {
  local command=$1
  shift
  bazel --output_base="$output_base" "$command" --config=fuzz "$@"
}

labels=()
for entry in "${selected[@]}"; do
  read -r _ label _ <<<"$entry"
  labels+=("$label")
done
echo "fuzz.sh: building ${#labels[@]} fuzzer(s) with clang (output base $output_base)"
build_start=$SECONDS
# Two jobs: the machines that run this have two cores. --symlink_prefix=/
# keeps the gcc build's bazel-bin and friends pointing where they did.
if ! bazel_fuzz build --jobs=2 --symlink_prefix=/ "${labels[@]}"; then
  echo "fuzz.sh: the fuzz build failed"
  echo "0 passed, ${#selected[@]} failed"
  exit 1
fi
echo "fuzz.sh: built in $((SECONDS - build_start)) s"
bin=$(bazel_fuzz info bazel-bin 2>/dev/null)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/glint-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-14}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# A file name for a crasher: the kind of failure, the sanitizer's verdict
# and the function it names, where it happened in Glint's sources (the
# innermost frame and, if different, the outermost one: the API the target
# called), and the input's hash, e.g.
# crash-out-of-memory-in-aligned_alloc-tensor.cc-40-via-tensor_file.cc-60-67dcf03e
crasher_name() {
  local artifact=$1 log=$2
  local kind=${artifact##*/}
  kind=${kind%%-*}
  local hash
  hash=$(sha1sum "$artifact" | cut -c1-8)
  local sources='(api|client|core|devices|executor|onnx|partitioner|proto|provisioner|runtime|store)/[A-Za-z0-9_/.-]+\.(cc|h):[0-9]+'
  local what="" func="" where="" via=""
  if grep -q 'FUZZ_CHECK(' "$log"; then
    what=check-failed
    where=$(grep -m1 -oE "$sources: FUZZ_CHECK" "$log" | grep -oE "$sources")
  else
    # "SUMMARY: AddressSanitizer: SEGV (/lib/libonnx.so.1+0x13d598) in
    # onnx::convPoolShapeInference(onnx::InferenceContext&, bool)"
    local summary
    summary=$(grep -m1 '^SUMMARY: ' "$log")
    what=$(awk '{print $3}' <<<"$summary")
    func=$(sed -nE 's/.* in ([A-Za-z0-9_:~<>]+)\(.*/\1/p' <<<"$summary")
    func=${func##*::}
    [ -z "$what" ] && grep -q 'out-of-memory' "$log" && what=out-of-memory
    # The first stack trace is the failure's (later ones say where memory
    # was allocated or freed).
    local frames
    frames=$(awk '/^ *#0 /{on=1} on && /^ *#[0-9]+ /{print; next} on{exit}' "$log" \
               | grep -oE "$sources" | grep -v '_fuzzer\.cc')
    where=$(head -1 <<<"$frames")
    via=$(tail -1 <<<"$frames")
  fi
  local name=$kind
  [ -n "$what" ] && [ "$what" != "$kind" ] && name+="-$what"
  [ -n "$func" ] && name+="-in-$func"
  [ -n "$where" ] && name+="-${where##*/}"
  [ -n "$via" ] && [ "$via" != "$where" ] && name+="-via-${via##*/}"
  echo "$name-$hash" | tr ':' '-' | tr -c 'A-Za-z0-9._\n-' '_'
}

passed=0
failed=0
for entry in "${selected[@]}"; do
  read -r name label max_len <<<"$entry"
  path=${label#//}
  binary="$bin/${path/://}"
  work="$scratch/$name"
  mkdir -p "$work/corpus" "$work/artifacts"
  # The committed corpus is read-only input: new coverage goes to the
  # scratch copy, so the repository does not grow on every run. Past
  # crashers are seeds too.
  find "fuzz/corpus/$name" -type f -exec cp -t "$work/corpus" {} +
  seeds=$(find "$work/corpus" -type f | wc -l)
  echo "fuzz.sh: $name: $seconds s from $seeds seeds (-max_len=$max_len)"
  log="$work/log"
  (cd "$work" && "$binary" -max_total_time="$seconds" -max_len="$max_len" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$work/artifacts/" "$work/corpus") >"$log" 2>&1
  status=$?
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$')
  # A crash may end the log before the final stats: the last status line
  # then gives a lower bound.
  [ -z "$runs" ] && runs="at least $(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
  artifact=$(find "$work/artifacts" -type f \
               \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) \
               | head -1)
  if [ "$status" -eq 0 ] && [ -z "$artifact" ]; then
    echo "fuzz.sh: $name: PASSED, ${runs:-?} executions, ${rate:-?} exec/s"
    passed=$((passed + 1))
    continue
  fi
  failed=$((failed + 1))
  echo "fuzz.sh: $name: FAILED (exit $status) after ${runs:-?} executions"
  grep -vE '^(#[0-9]+|INFO:|MS:|\s*$)' "$log" | tail -60
  if [ -n "$artifact" ]; then
    mkdir -p "fuzz/corpus/$name/regressions"
    dest="fuzz/corpus/$name/regressions/$(crasher_name "$artifact" "$log")"
    cp "$artifact" "$dest"
    echo "fuzz.sh: $name: input saved as $dest (reproduce: $binary $dest)"
  fi
done
echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
