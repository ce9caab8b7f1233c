#!/bin/bash
# Issue 28 point 6: Glint against ONNX Runtime on a machine with many cores.
#
#   bench/many_cores.sh bundle DIR    (here: glintd, glint and their shared
#                                      libraries, -c opt, packed into
#                                      DIR/bundle.tar.xz: 17 MB, where the
#                                      device tool carries 64 MiB)
#   [CONFIGS=default,wide,...] bench/many_cores.sh run DIR [MODELS]
#                                     (there: exports the torchvision models
#                                      with that machine's PyTorch, times ONNX
#                                      Runtime from its Python, then glintd in
#                                      several device configurations)
#
# The many-core machine is the one the `device` tool lends (16 cores, its
# own python3 with torch, torchvision and onnxruntime, nothing to fetch):
# copy DIR into an ignored folder of the checkout, name it in `carry`, and
# run `bench/many_cores.sh run FOLDER`. DIR/models/*.onnx, if any, are
# added to the torchvision exports (the corpus' BERT encoder, say).
#
# Printed per model: ORT's p50 at 2 and at every core's threads and its
# runs/s with as many requests in flight as cores; then, per glintd
# configuration, `glint perf`'s p50 at 1 in flight and runs/s at that
# many in flight. Medians of one process each: the machine is shared, so
# rerun before trusting a difference under 10%.
set -u

mode="${1:-}"
dir="${2:-}"
if [[ -z "$mode" || -z "$dir" ]]; then
  sed -n 2,20p "$0" >&2
  exit 2
fi

if [[ "$mode" == bundle ]]; then
  set -e
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$root"
  bazel build -c opt --jobs="${JOBS:-2}" //runtime/server:glintd //client:glint
  mkdir -p "$dir/models"
  staging="$(mktemp -d)"
  mkdir -p "$staging/bundle/bin" "$staging/bundle/lib"
  out="$(bazel info -c opt bazel-bin)"
  cp "$out/runtime/server/glintd" "$out/client/glint" "$staging/bundle/bin/"
  # Every shared library but the C library's own, which the other
  # machine has in a version of its own.
  ldd "$staging/bundle/bin/glintd" "$staging/bundle/bin/glint" |
    awk '/=> \//{print $3}' | sort -u |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    xargs -I{} cp -L {} "$staging/bundle/lib/"
  tar -C "$staging" -cJf "$dir/bundle.tar.xz" bundle
  rm -rf "$staging"
  du -sh "$dir"
  exit 0
fi

if [[ "$mode" != run ]]; then
  echo "unknown mode '$mode'" >&2
  exit 2
fi

models="${3:-resnet50,mobilenet_v3_large,efficientnet_b0,convnext_tiny}"
work="${WORK:-/tmp/many_cores}"
mkdir -p "$work/m"
tar -C "$work" -xJf "$dir/bundle.tar.xz" || exit 1
export LD_LIBRARY_PATH="$work/bundle/lib"
B="$work/bundle/bin"
cores=$(nproc)
echo "cores $cores; $(grep -m1 'model name' /proc/cpuinfo)"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"

MODELS="$models" WORK="$work" python3 - <<'PY'
import os, torch, torchvision
torch.manual_seed(0)
for name in os.environ['MODELS'].split(','):
    m = getattr(torchvision.models, name)(weights=None).eval()
    torch.onnx.export(m, torch.rand(1, 3, 160, 160),
                      f"{os.environ['WORK']}/m/{name}.onnx",
                      input_names=['input'], output_names=['output'],
                      opset_version=17, dynamo=False)
print('exported with torch', torch.__version__, flush=True)
PY
cp "$dir"/models/*.onnx "$work/m/" 2>/dev/null

# ORT: the same file, random inputs of the shapes glint perf uses (ones
# for integer inputs: token ids and masks).
CORES="$cores" WORK="$work" python3 - <<'PY'
import glob, os, threading, time
import numpy as np, onnxruntime as ort
cores = int(os.environ['CORES'])
for path in sorted(glob.glob(f"{os.environ['WORK']}/m/*.onnx")):
    name = os.path.basename(path)[:-5]
    for threads in (2, cores):
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        s = ort.InferenceSession(path, o, providers=['CPUExecutionProvider'])
        feed = {}
        for i in s.get_inputs():
            shape = [d if isinstance(d, int) else (2 if k == 0 else 16)
                     for k, d in enumerate(i.shape)]
            if 'int64' in i.type:
                feed[i.name] = np.ones(shape, np.int64)
            else:
                feed[i.name] = np.random.RandomState(0).rand(*shape).astype(np.float32)
        for _ in range(5): s.run(None, feed)
        ts = []
        for _ in range(31):
            t0 = time.perf_counter(); s.run(None, feed)
            ts.append((time.perf_counter() - t0) * 1e3)
        ts.sort()
        line = f"ort {name} threads={threads} p50_ms={ts[15]:.3f}"
        if threads == cores:
            n = [0]; stop = [False]; lock = threading.Lock()
            def work():
                while not stop[0]:
                    s.run(None, feed)
                    with lock: n[0] += 1
            th = [threading.Thread(target=work) for _ in range(cores)]
            t0 = time.time(); [a.start() for a in th]
            time.sleep(3); stop[0] = True; [a.join() for a in th]
            line += f" inflight{cores}_runs_per_s={n[0] / (time.time() - t0):.1f}"
        print(line, flush=True)
PY

# glintd: "default" is glintd with no --devices (what a user gets).
run_config() {
  local label="$1" devices="$2" replicas="$3" profile="$4"
  local flag=(${5:-})
  [[ -n "$devices" ]] && flag+=(--devices="$devices")
  rm -f "$work/port"
  "$B/glintd" --listen=127.0.0.1:0 --port_file="$work/port" --store_dir= \
    --http_listen= "${flag[@]}" --log_level=warning >"$work/glintd.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
  echo "glintd [$label]: $(tr '\0' '\n' <"/proc/$pid/environ" |
    grep -E '^(GOMP_SPINCOUNT|OMP_WAIT_POLICY)=' | tr '\n' ' ')"
  local G=("$B/glint" --server="127.0.0.1:$(cat "$work/port")")
  for path in "$work"/m/*.onnx; do
    local name shapes=()
    name="$(basename "$path" .onnx)"
    case "$name" in
      bert_encoder) shapes=(--input_shape input_ids=2,16 --input_shape attention_mask=2,16) ;;
      gpt_decoder) shapes=(--input_shape input_ids=1,32) ;;
      *) shapes=(--input_shape input=1,3,160,160) ;;
    esac
    local add=("${G[@]}" add "$name" "$path" "${shapes[@]}")
    [[ "$replicas" -gt 1 ]] && add+=(--replicas "$replicas" --strategy whole)
    "${add[@]}" >/dev/null 2>"$work/add.err" ||
      { echo "glint $name [$label] add failed: $(tail -1 "$work/add.err")"; continue; }
    if [[ "$profile" == profile ]]; then
      "${G[@]}" perf "$name" --concurrency 1 --duration 2s --profile 2>&1 |
        sed -n '/^profile of/,$p' | head -14 | sed "s|^|profile $name [$label] |"
    else
      "${G[@]}" perf "$name" --concurrency "1,$cores" --duration 3s 2>&1 |
        tail -2 | sed "s|^|glint $name [$label] |"
    fi
    "${G[@]}" remove "$name" >/dev/null 2>&1
  done
  kill "$pid"; wait "$pid" 2>/dev/null
}

# CONFIGS: which of these to run (default: all).
want() { [[ -z "${CONFIGS:-}" || ",$CONFIGS," == *",$1,"* ]]; }
want default && run_config "default" "" 1 perf
want wide && run_config "1 dev x $cores thr" "sim:memory=8GiB:threads=$cores" 1 perf
want wide_spin && run_config "1 dev x $cores thr, spin 300000" \
  "sim:memory=8GiB:threads=$cores" 1 perf --omp_spin_count=300000
want narrow && run_config "1 dev x 2 thr" "sim:memory=8GiB:threads=2" 1 perf
want quarters && run_config "4 dev x $((cores / 4)) thr, replicas" \
  "sim*4:memory=2GiB:threads=$((cores / 4))" 4 perf
want pairs && run_config "$((cores / 2)) dev x 2 thr, replicas" \
  "sim*$((cores / 2)):memory=2GiB:threads=2" $((cores / 2)) perf
want wide_profile &&
  run_config "1 dev x $cores thr" "sim:memory=8GiB:threads=$cores" 1 profile
want narrow_profile &&
  run_config "1 dev x 2 thr" "sim:memory=8GiB:threads=2" 1 profile
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
