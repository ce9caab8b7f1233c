#!/usr/bin/env bash
# The scale-out test in containers: three containers of glintd's image
# (deploy/build_image.sh) on the host's loopback share one read-only model
# repository mounted from the host; the glint CLI, with an ipv4: target of
# all three (round_robin, retried on UNAVAILABLE), makes runs of the
# example network in batches of 100 (glint run --repeat, outputs checked
# against numpy's): first until every container has served some (one
# batch, at most three), then one with container 1 killed (podman kill,
# SIGKILL) as it starts, then, container 1 started again, until every
# container has served some again (runs per container counted on
# /metrics, scraped from the host). Every run must succeed; the health
# service the probes ask answers inside a container (glint health); the image's entry point, user, ports and
# command are the Kubernetes Deployment's (check_manifests.py
# --image_config). Every container and image it made is removed, also on
# failure (GLINT_KEEP_IMAGES=1 keeps the images: the base then spares the
# next run its debootstrap).
#
#   deploy/container_test.sh        as root; builds the image first
#   GLINT_IMAGE=localhost/glint:TAG deploy/container_test.sh   that image
#
# Prints its figures: runs per container, the kill and rejoin times. Stage
# 5 of scripts/test.sh --full (CI), not of the plain suite: it needs root,
# podman and runc, and for a first image Debian's archive (about 4 minutes;
# then seconds).
set -euo pipefail
cd "$(dirname "$0")/.."

# The image of this checkout (build_image.sh, seconds once its base is
# there), unless GLINT_IMAGE names one already built.
image=${GLINT_IMAGE:-}
runs=0

if [ "$(id -u)" -ne 0 ]; then
  echo "container_test: run as root (podman's image store)" >&2
  exit 2
fi
began=$(date +%s)
# The bases there before: one this run makes is removed with its image.
bases_before=$(podman images --format '{{.Repository}}:{{.Tag}}' \
  --filter reference=localhost/glint-base)
if [ -z "$image" ]; then
  image=localhost/glint:container-test-$$
  deploy/build_image.sh --tag "$image"
fi
bazel build //:glint //:glintd >/dev/null 2>&1 || bazel build //:glint //:glintd
glint=$(bazel info bazel-bin 2>/dev/null)/client/glint

limit() {  # limit HARD CAP: the host's hard limit, at most CAP
  if [ "$1" = unlimited ] || [ "$1" -gt "$2" ]; then echo "$2"; else echo "$1"; fi
}
nproc=$(limit "$(ulimit -Hu)" 8192)
nofile=$(limit "$(ulimit -Hn)" 4096)
work=$(mktemp -d)
containers=()
batch_pid=
cleanup() {
  local status=$?
  [ -z "$batch_pid" ] || kill "$batch_pid" 2>/dev/null || true
  for c in "${containers[@]}"; do
    if [ "$status" -ne 0 ]; then
      echo "--- logs of $c" >&2
      podman logs --tail 20 "$c" >&2 2>&1 || true
    fi
    podman rm -f "$c" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
  if [ "${GLINT_KEEP_IMAGES:-0}" != 1 ] && [ -z "${GLINT_IMAGE:-}" ]; then
    # Its own tag (an image also tagged otherwise keeps the other tags),
    # then a base this run made.
    podman rmi "$image" >/dev/null 2>&1 || true
    local base
    for base in $(podman images --format '{{.Repository}}:{{.Tag}}' \
                    --filter reference=localhost/glint-base 2>/dev/null); do
      grep -qx "$base" <<< "$bases_before" ||
        podman rmi "$base" >/dev/null 2>&1 || true
    done
  fi
  exit "$status"
}
trap cleanup EXIT

fail() {
  echo "container_test: FAILED: $*" >&2
  exit 1
}

# The example network (the README's demo): x[2, 16] -> probs[2, 10].
/usr/bin/python3 client/example/make_example.py --out "$work" >/dev/null
repo=$work/repository
mkdir -p "$repo/example/1"
cp "$work/mlp.onnx" "$repo/example/1/model.onnx"
chmod -R a+rX "$work"

# Free loopback ports: gRPC and HTTP for each container.
read -r -a ports <<< "$(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')"

# The image's own command (the Deployment's flags), on this container's
# ports: three containers share the host's network.
mapfile -t cmd < <(podman image inspect --format '{{range .Config.Cmd}}{{println .}}{{end}}' "$image" | sed '/^$/d')
args_for() {  # args_for GRPC_PORT HTTP_PORT
  local a
  for a in "${cmd[@]}"; do
    case "$a" in
      --listen=*) echo "--listen=127.0.0.1:$1" ;;
      --http_listen=*) echo "--http_listen=127.0.0.1:$2" ;;
      *) echo "$a" ;;
    esac
  done
}

start_container() {  # start_container I
  local i=$1 name="glint-ct-$$-$1"
  mapfile -t args < <(args_for "${ports[$i]}" "${ports[$((i + 3))]}")
  containers[$i]=$name  # Before it exists: cleanup removes what was made.
  # runc, and ulimits within the host's (crun raises them above the hard
  # limit and fails here). nproc counts uid 10001's threads host-wide, all
  # three containers' together (no user namespace).
  podman run -d --name "$name" --runtime=runc --network=host \
    --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" \
    -v "$repo:/models:ro" "$image" "${args[@]}" >/dev/null
}

# Ready when the example network answers there (the repository is loaded
# at start).
wait_ready() {  # wait_ready I
  local i=$1 deadline=$(($(date +%s) + 60))
  until "$glint" --server="127.0.0.1:${ports[$i]}" list 2>/dev/null | grep -q example; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "container $i never served 'example'"
    sleep 0.2
  done
}

for i in 0 1 2; do start_container "$i"; done
for i in 0 1 2; do wait_ready "$i"; done
echo "container_test: 3 containers of $image serving after $(($(date +%s) - began)) s"

target="ipv4:127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
# 100 runs on one channel (round_robin over the three, retried on
# UNAVAILABLE): the first's outputs checked against numpy's, every other
# held to the first's (glint run --repeat).
batch() {  # batch K
  local out="$work/out$1"
  "$glint" --server="$target" --timeout=30s run example \
    --input x="$work/input_x.npy" --output-dir "$out" --repeat 100 \
    > "$work/batch$1.log" 2>&1 || { cat "$work/batch$1.log" >&2; fail "batch $1 failed"; }
  /usr/bin/python3 client/example/check_output.py "$out/probs.npy" \
    "$work/expected_probs.npy" >/dev/null || fail "batch $1: wrong output"
}

# Runs that container I has served since it started (its /metrics,
# scraped from the host).
served() {
  local page attempt
  for attempt in 1 2 3; do
    if page=$(curl -sf --max-time 5 "http://127.0.0.1:${ports[$(($1 + 3))]}/metrics"); then
      awk '/^nv_inference_request_success\{.*model="example"/ {n += $NF} END {print n + 0}' <<< "$page"
      return
    fi
    sleep 0.5
  done
  # In $(...): the message, and a word that, under set -u, ends the test
  # in the arithmetic that reads it.
  echo "container_test: FAILED: cannot scrape /metrics of container $1 from the host" >&2
  echo "no-metrics"
  exit 1
}

# Batches of 100 until every container has served some (at most 3): a
# fresh channel spreads runs only over the daemons whose connection and
# health check are done, and a loaded machine can finish 100 runs of 1 ms
# on the first one before the others join (gRPC's round_robin). Prints
# the runs per container; fails when one serves none of 300.
spread_batches() {  # spread_batches LABEL (sets spread[])
  local before=("$(served 0)" "$(served 1)" "$(served 2)") after k i missing
  for k in 1 2 3; do
    batch "$1-$k"
    runs=$((runs + 100))
    after=("$(served 0)" "$(served 1)" "$(served 2)")
    missing=
    for i in 0 1 2; do
      spread[$i]=$((after[i] - before[i]))
      [ "${spread[$i]}" -gt 0 ] || missing="$missing $i"
    done
    [ -n "$missing" ] || return 0
    echo "container_test: $1: after $((k * 100)) runs, container(s)$missing" \
      "served none yet (${spread[*]} per container); 100 more"
  done
  fail "$1: container(s)$missing served none of 300 runs"
}

spread=()
spread_batches first
first=("${spread[@]}")
echo "container_test: first runs: ${first[*]} per container"

# The next 100 runs, container 1 killed (SIGKILL) as they start: the runs
# it had are retried on the others.
mid=("$(served 0)" "$(served 2)")
batch 2 &
batch_pid=$!
podman kill "${containers[1]}" >/dev/null
killed_at=$(date +%s)
wait "$batch_pid" || fail "the 100 runs with container 1 killed failed"
batch_pid=
runs=$((runs + 100))
echo "container_test: 100 runs, container 1 killed as they ran: all" \
  "answered, $(($(served 0) + $(served 2) - mid[0] - mid[1])) by" \
  "containers 0 and 2 (the rest by container 1 before it died)"

podman start "${containers[1]}" >/dev/null
wait_ready 1
echo "container_test: container 1 serving again $(($(date +%s) - killed_at)) s after the kill"
spread_batches last
echo "container_test: last runs, after the restart: ${spread[*]} per container"
echo "container_test: $runs runs, every output checked"

# The health service the probes ask, from inside a container.
podman exec "${containers[0]}" /usr/local/bin/glint \
  --server="127.0.0.1:${ports[0]}" health --service=liveness >/dev/null ||
  fail "grpc.health.v1 (service liveness) does not answer SERVING inside the container"
podman exec "${containers[0]}" /usr/local/bin/glint \
  --server="127.0.0.1:${ports[0]}" health >/dev/null ||
  fail "grpc.health.v1 (service \"\") does not answer SERVING inside the container"
echo "container_test: grpc.health.v1 answers SERVING inside the container" \
  "(services \"\" and liveness)"

# The manifests against the image they name.
podman image inspect "$image" > "$work/image.json"
/usr/bin/python3 deploy/check_manifests.py \
  --glintd "$(bazel info bazel-bin 2>/dev/null)/runtime/server/glintd" \
  --image_config "$work/image.json" deploy/kubernetes/*.yaml deploy/kserve/*.yaml ||
  fail "the manifests do not match the image"

echo "container_test: passed in $(($(date +%s) - began)) s"
