#!/usr/bin/env bash
# Installs the Debian packages Glint builds and tests with, if any is missing.
# Debian 12, as root (or with sudo available). Offline apart from Debian's
# archive: see third_party/README.md.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap g++ git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev
  libbenchmark-dev libdnnl-dev libonnx-dev libonnx-testdata
  nlohmann-json3-dev libssl-dev
  # glintd's HTTP port: libmicrohttpd with GnuTLS (runtime/server/README.md
  # says why); cpp-httplib is the tests' HTTP client.
  libmicrohttpd-dev libgnutls28-dev libcpp-httplib-dev
  # Whole-system tests of the HTTP port: curl against the REST endpoints,
  # promtool and a Prometheus server scraping /metrics.
  curl prometheus
  python3 python3-onnx python3-numpy python3-grpcio
  # tests/corpus: real networks exported by PyTorch (//tests:e2e_corpus_test,
  # //bench:corpus_bench); random weights, nothing downloaded.
  python3-torch python3-torchvision
  # deploy/check_manifests.py (//deploy:manifests_test) parses the YAML.
  python3-yaml
  graphviz
  # tests/e2e_auth_test makes its certificates with the openssl command.
  openssl
  # tests/e2e_node_test: a Node client (its npm packages below).
  nodejs
  # scripts/fuzz.sh: clang, its sanitizer and libFuzzer runtimes, its linker
  # and llvm-symbolizer for the reports.
  clang-14 libclang-rt-14-dev lld-14 llvm-14
  # tests/install_consumer_test: out-of-tree consumers of an installed
  # libglint (pkg-config for a C program, CMake's find_package for C++).
  cmake pkg-config
  # deploy/build_image.sh and deploy/container_test.sh (scripts/test.sh
  # --full): glintd's image from a debootstrapped Debian 12, run by podman
  # with runc (crun is refused on these hosts).
  podman runc debootstrap
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present"
else
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# Debian's nodejs comes without npm (other builds of nodejs bundle it).
if ! command -v npm >/dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends npm
fi

# The npm packages of the Node client of tests/e2e_node_test and of ONNX
# Runtime for the corpus (tests/corpus): exactly the versions of each
# package-lock.json, installed again only when the lock changed (with
# --ignore-scripts: onnxruntime-node's install script downloads GPU
# binaries; its CPU runtime is in the package). Without the npm registry
# (offline) it says so and goes on: the tests that need them then fail,
# naming the missing packages.
root="$(cd "$(dirname "$0")/.." && pwd)"
for node_dir in "$root/tests/node" "$root/tests/corpus"; do
  stamp="$node_dir/node_modules/.installed-from-package-lock.json"
  if ! cmp -s "$node_dir/package-lock.json" "$stamp" 2>/dev/null; then
    echo "install_deps: npm ci in ${node_dir#$root/}"
    if (cd "$node_dir" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline); then
      cp "$node_dir/package-lock.json" "$stamp"
    else
      echo "install_deps: WARNING: npm ci failed in ${node_dir#$root/}" >&2
    fi
  fi
done
