#!/usr/bin/env bash
# Builds glintd's container image, localhost/glint:VERSION and :latest, on a
# fresh Debian 12 machine as root, with nothing pulled from a registry:
#
#   1. glintd and glint, as the README builds them (bazel build //:glintd
#      //:glint), unless GLINT_BINARIES=DIR names a folder holding both;
#   2. the base, localhost/glint-base:bookworm-HASH: a minimal Debian 12
#      made by debootstrap from Debian's archive (the mirror apt uses here)
#      with exactly the packages of the shared libraries the two binaries
#      link (ldd, then dpkg -S: no compiler, no Bazel, no hand-kept list),
#      the unprivileged user glint (uid and gid 10001, home
#      /var/lib/glint) and no package caches or docs; imported with
#      `podman import`. HASH covers that package list and this script, so a
#      rebuild after a code change reuses it;
#   3. deploy/Containerfile on that base: the binaries, the user, the ports,
#      glintd as the entry point with the Deployment's flags
#      (deploy/kubernetes/glintd.yaml).
#
# Prints the image's size and how long each step took. Installs what is
# missing first (scripts/install_deps.sh: Bazel and the libraries for the
# build, podman, runc and debootstrap). VERSION is kGlintVersion
# (proto/oip_types.h).
#
#   deploy/build_image.sh [--rebuild_base] [--tag IMAGE]
#
# --tag IMAGE tags the image IMAGE alone, instead of VERSION and latest.
set -euo pipefail
self=$(readlink -f "$0")
cd "$(dirname "$self")/.."

rebuild_base=0
tags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild_base) rebuild_base=1 ;;
    --tag) [ $# -ge 2 ] || { echo "--tag needs an image name" >&2; exit 2; }
      tags+=("$2"); shift ;;
    *) echo "usage: deploy/build_image.sh [--rebuild_base] [--tag IMAGE]" >&2
      exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "build_image: run as root (debootstrap and podman's image store)" >&2
  exit 2
fi

began=$(date +%s)
step_began=$began
step() {  # step NAME: prints how long the last step took, then NAME.
  local now
  now=$(date +%s)
  [ -n "${step_name:-}" ] && echo "build_image: $step_name took $((now - step_began)) s"
  step_name=$1
  step_began=$now
  echo "build_image: $1"
}

step "installing what is missing (scripts/install_deps.sh: Bazel, the libraries, podman, runc, debootstrap)"
scripts/install_deps.sh

version=$(sed -n 's/.*kGlintVersion = "\([^"]*\)".*/\1/p' proto/oip_types.h)
if [ -z "$version" ]; then
  echo "build_image: cannot read kGlintVersion from proto/oip_types.h" >&2
  exit 1
fi

step "the binaries"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
if [ -n "${GLINT_BINARIES:-}" ]; then
  glintd_bin=$GLINT_BINARIES/glintd
  glint_bin=$GLINT_BINARIES/glint
else
  bazel build //:glintd //:glint
  bazel_bin=$(bazel info bazel-bin 2>/dev/null)
  glintd_bin=$bazel_bin/runtime/server/glintd
  glint_bin=$bazel_bin/client/glint
fi
install -m 755 "$glintd_bin" "$stage/glintd"
install -m 755 "$glint_bin" "$stage/glint"

# The Debian packages that hold the libraries the binaries load; a library
# that is not found, or that no package holds, stops the build here rather
# than the container at its start.
libraries=$(ldd "$stage/glintd" "$stage/glint")
if grep -q "not found" <<< "$libraries"; then
  echo "build_image: the binaries miss libraries:" >&2
  grep "not found" <<< "$libraries" >&2
  exit 1
fi
owners=()
unowned=()
for lib in $(awk '/=> \// {print $3}' <<< "$libraries" | sort -u); do
  if owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null); then
    owners+=("${owner%%:*}")
  else
    unowned+=("$lib")
  fi
done
if [ ${#unowned[@]} -gt 0 ]; then
  echo "build_image: no Debian package holds ${unowned[*]}" >&2
  exit 1
fi
packages=$(printf '%s\n' "${owners[@]}" | sort -u | tr '\n' ' ')
echo "build_image: runtime packages: $packages"

# The mirror apt uses on this machine (deb822 or one-line sources).
mirror=${GLINT_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
fi
if [ -z "$mirror" ]; then
  mirror=$(awk '$1 == "deb" && $3 ~ /^bookworm$/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

# The base is made anew when the packages, their versions on this host,
# the mirror or this script change.
# shellcheck disable=SC2086  # $packages is a list of names.
hash=$({ dpkg-query -W -f='${Package}=${Version}\n' $packages; echo "$mirror"; cat "$self"; } |
  sha256sum | cut -c1-12)
base=localhost/glint-base:bookworm-$hash
if [ "$rebuild_base" -eq 1 ] || ! podman image exists "$base"; then
  step "the base $base: debootstrap from $mirror"
  rootfs=$(mktemp -d)
  trap 'rm -rf "$stage" "$rootfs"' EXIT
  debootstrap --variant=minbase --include="${packages// /,}" bookworm "$rootfs" "$mirror"
  chroot "$rootfs" groupadd --gid 10001 glint
  chroot "$rootfs" useradd --uid 10001 --gid 10001 --no-log-init \
    --home-dir /var/lib/glint --create-home --shell /usr/sbin/nologin glint
  # What only apt, a man page or a locale would read.
  rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* \
    "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
  tar --numeric-owner -C "$rootfs" -c . | podman import - "$base" >/dev/null
  rm -rf "$rootfs"
else
  step "the base $base: kept (--rebuild_base makes it anew)"
fi

[ ${#tags[@]} -gt 0 ] || tags=("localhost/glint:$version" localhost/glint:latest)
step "the image ${tags[*]}"
tag_args=()
for t in "${tags[@]}"; do tag_args+=(-t "$t"); done
podman build --quiet --build-arg "BASE=$base" -f deploy/Containerfile \
  "${tag_args[@]}" "$stage" >/dev/null
now=$(date +%s)
echo "build_image: $step_name took $((now - step_began)) s"
size=$(podman image inspect --format '{{.Size}}' "${tags[0]}")
echo "build_image: ${tags[*]}, $((size / 1000000)) MB, built in $((now - began)) s"
