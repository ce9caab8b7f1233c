#!/usr/bin/env bash
# Installs what is missing, builds Glint, starts glintd on its default
# simulated devices (two "sim" devices of 2 GiB), generates the example
# network, adds it, runs it, prints the outputs and checks them against
# numpy's answer. glintd keeps running afterwards; the script says how to
# stop it.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
bazel build //runtime/server:glintd //client:glint

work=${GLINT_DEMO_DIR:-/tmp/glint-demo}
mkdir -p "$work"
/usr/bin/python3 client/example/make_example.py --out "$work"

glintd=bazel-bin/runtime/server/glintd
glint=bazel-bin/client/glint
rm -f "$work/port" "$work/http_port"
# A store of its own, emptied first: the demo adds its network afresh and
# never meets a daemon left running by a previous demo.
rm -rf "$work/store"
"$glintd" --listen=127.0.0.1:0 --port_file="$work/port" --store_dir="$work/store" \
  --http_listen=127.0.0.1:0 --http_port_file="$work/http_port" \
  >"$work/glintd.log" 2>&1 &
pid=$!
echo "$pid" >"$work/glintd.pid"
# Wait (bounded) for glintd to publish its port.
for _ in $(seq 1 100); do
  [ -s "$work/port" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/glintd.log"; exit 1; fi
  sleep 0.1
done
[ -s "$work/port" ] || { echo "glintd did not start"; cat "$work/glintd.log"; exit 1; }
server=127.0.0.1:$(cat "$work/port")
http=127.0.0.1:$(cat "$work/http_port")
echo "glintd (pid $pid) serving on $server (gRPC) and http://$http (REST, /metrics); log: $work/glintd.log"

"$glint" --server="$server" devices
"$glint" --server="$server" add example "$work/mlp.onnx"
"$glint" --server="$server" show example
"$glint" --server="$server" run example --input x="$work/input_x.npy" --output-dir "$work/out"
/usr/bin/python3 client/example/check_output.py "$work/out/probs.npy" "$work/expected_probs.npy"
echo "REST: curl http://$http/v2/models/example   metrics: curl http://$http/metrics"
echo "glintd is still running: stop it with: kill $pid"
