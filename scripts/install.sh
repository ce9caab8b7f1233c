#!/usr/bin/env bash
# Installs libglint (the C API and the embeddable C++ API) under PREFIX:
#
#   PREFIX/lib/libglint.so.X.Y.Z, libglint.so.X -> it, libglint.so -> it
#   PREFIX/include/glint/c_api.h                    the C API
#   PREFIX/include/glint/{runtime,api,core,onnx}/   the C++ API (HostManager,
#                                                   its value types and what
#                                                   they include)
#   PREFIX/lib/pkgconfig/glint.pc, glint-cpp.pc
#   PREFIX/lib/cmake/Glint/GlintConfig.cmake, GlintConfigVersion.cmake
#   PREFIX/share/doc/glint/README.md                capi/README.md: usage and
#                                                   the compatibility promise
#
#   scripts/install.sh PREFIX
#
# Builds //capi:libglint.so.* with Bazel first, unless GLINT_LIB names a
# built library to install (the consumer test passes its own). Files are
# relocatable: the .pc and CMake files find the prefix from where they lie.
# See capi/README.md.
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/install.sh PREFIX" >&2
  exit 2
fi
prefix=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ -z "${GLINT_LIB:-}" ]; then
  target=$(cd "$root" && bazel query 'filter("libglint\.so\.", kind(cc_binary, //capi:*))' 2>/dev/null)
  (cd "$root" && bazel build "$target")
  GLINT_LIB="$root/bazel-bin/capi/${target##*:}"
fi
lib_name=$(basename "$GLINT_LIB")
if ! [[ "$lib_name" =~ ^libglint\.so\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "install.sh: $GLINT_LIB is not named libglint.so.MAJOR.MINOR.PATCH" >&2
  exit 1
fi
major=${BASH_REMATCH[1]}
version="${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.${BASH_REMATCH[3]}"

mkdir -p "$prefix/lib/pkgconfig" "$prefix/lib/cmake/Glint" "$prefix/include/glint"
prefix=$(cd "$prefix" && pwd)

# The library and its links.
rm -f "$prefix/lib/libglint.so" "$prefix/lib/libglint.so.$major" "$prefix/lib/$lib_name"
install -m 0755 "$GLINT_LIB" "$prefix/lib/$lib_name"
ln -s "$lib_name" "$prefix/lib/libglint.so.$major"
ln -s "libglint.so.$major" "$prefix/lib/libglint.so"

# The C header.
install -m 0644 "$root/capi/include/glint/c_api.h" "$prefix/include/glint/c_api.h"

# What the API promises between versions, and how to use it.
install -D -m 0644 "$root/capi/README.md" "$prefix/share/doc/glint/README.md"

# The C++ headers: runtime/host_manager.h and every header of this
# repository it includes, transitively, at their paths (so their includes
# resolve with -I PREFIX/include/glint). A quoted include that is neither
# here nor a system header fails the install.
declare -A seen=()
queue=(runtime/host_manager.h)
while [ ${#queue[@]} -gt 0 ]; do
  header=${queue[0]}
  queue=("${queue[@]:1}")
  [ -n "${seen[$header]:-}" ] && continue
  seen[$header]=1
  if [ ! -f "$root/$header" ]; then
    echo "install.sh: $header (included by the C++ API) is missing" >&2
    exit 1
  fi
  install -D -m 0644 "$root/$header" "$prefix/include/glint/$header"
  while read -r included; do
    case "$included" in
      absl/*) ;;  # Debian's libabsl-dev, a dependency of the C++ API.
      *) queue+=("$included") ;;
    esac
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$root/$header")
done

# pkg-config and CMake files, with the version filled in.
for template in glint.pc glint-cpp.pc; do
  sed "s/@VERSION@/$version/g" "$root/capi/install/$template.in" \
    > "$prefix/lib/pkgconfig/$template"
done
for template in GlintConfig.cmake GlintConfigVersion.cmake; do
  sed -e "s/@VERSION@/$version/g" -e "s/@MAJOR@/$major/g" \
      -e "s/@LIBRARY@/$lib_name/g" \
    "$root/capi/install/$template.in" > "$prefix/lib/cmake/Glint/$template"
done

echo "install.sh: libglint $version installed under $prefix"
