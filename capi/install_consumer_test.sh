#!/usr/bin/env bash
# Installs libglint into a temporary prefix and builds three out-of-tree
# consumers against the installed tree only: C with pkg-config (plain, then
# under ASan + UBSan), C++ with CMake's find_package(Glint) (and with
# pkg-config's glint-cpp), Python with ctypes. Each runs an ONNX node case
# and compares its outputs with the case's expected ones. Also checks the
# installed layout, the SONAME and that the library exports only the
# public API. See capi/README.md.
set -euo pipefail

# Runs from the runfiles tree of the main repository.
root=$PWD
tmp=${TEST_TMPDIR:-$(mktemp -d)}
prefix=$tmp/prefix
work=$tmp/work
rm -rf "$prefix" "$work"
mkdir -p "$work"
case_dir=/usr/share/libonnx-testdata/data/node/test_matmul_2d
[ -f "$case_dir/model.onnx" ] || { echo "FAIL: $case_dir missing (libonnx-testdata)"; exit 1; }

lib=$(ls "$root"/capi/libglint.so.*.*.*)
# Under bazel test --config=asan (or tsan) the library itself is
# instrumented, and every consumer needs the same sanitizer's runtime.
sanitizer=none
case "$(readelf -d "$lib" | grep NEEDED)" in
  *libasan*) sanitizer=asan ;;
  *libtsan*) sanitizer=tsan ;;
esac
echo "libglint built with sanitizer: $sanitizer"
GLINT_LIB=$lib "$root/scripts/install.sh" "$prefix"

fail() { echo "FAIL: $*"; exit 1; }

# Under TSan, a consumer built here sees Debian's uninstrumented Abseil
# inside libglint as Bazel's own binaries do only with the annotations of
# third_party/tsan: the consumers run with them preloaded.
run=()
if [ $sanitizer = tsan ]; then
  run=(env LD_PRELOAD="$root/third_party/tsan/libglint_tsan_support.so")
fi

# --- Layout -----------------------------------------------------------------
lib_name=$(basename "$lib")
for f in "lib/$lib_name" lib/libglint.so.0 lib/libglint.so include/glint/c_api.h \
         include/glint/runtime/host_manager.h include/glint/api/types.h \
         lib/pkgconfig/glint.pc lib/pkgconfig/glint-cpp.pc \
         lib/cmake/Glint/GlintConfig.cmake lib/cmake/Glint/GlintConfigVersion.cmake \
         share/doc/glint/README.md; do
  [ -e "$prefix/$f" ] || fail "$prefix/$f not installed"
done
[ "$(readlink "$prefix/lib/libglint.so")" = libglint.so.0 ] || fail "libglint.so link"
soname=$(readelf -d "$prefix/lib/$lib_name" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libglint.so.0 ] || fail "SONAME is '$soname', not libglint.so.0"
# (Whole outputs into files and variables: under pipefail, grep -q on a
# pipe can fail its writer with SIGPIPE.)
dynamic=$(readelf -d "$prefix/lib/$lib_name")
if grep -q 'NEEDED.*libgrpc' <<< "$dynamic"; then
  fail "libglint.so needs gRPC"
fi

# --- Exports: the C API (glint_*) and the C++ API's glint:: symbols only ------
nm -D --defined-only "$prefix/lib/$lib_name" | awk '{print $3}' | sed 's/@.*//' \
  | grep -v '^$' | sort -u > "$work/exports.txt"
c_count=$(grep -c '^glint_' "$work/exports.txt" || true)
total=$(wc -l < "$work/exports.txt")
others=$(grep -v '^glint_' "$work/exports.txt" | c++filt \
  | grep -v -E '^(glint::|typeinfo (name )?for glint::|vtable for glint::|GLINT_0$)' || true)
[ -z "$others" ] || fail "exports beyond the public API:
$(echo "$others" | head -20)"
header_fns=$(grep -o -E 'GLINT_EXPORT [^(]*\bglint_[a-z_0-9]+\(' "$root/capi/include/glint/c_api.h" \
  | grep -o -E 'glint_[a-z_0-9]+' | sort -u)
for fn in $header_fns; do
  grep -qx "$fn" "$work/exports.txt" || fail "$fn is declared but not exported"
done
[ "$c_count" -eq "$(echo "$header_fns" | wc -l)" ] || fail "exported glint_* differ from the header's"
echo "libglint: $lib_name, SONAME $soname, $(stat -c %s "$prefix/lib/$lib_name") bytes," \
     "$total exported symbols ($c_count C functions, $((total - c_count)) C++)"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[ "$(pkg-config --modversion glint)" = "${lib_name#libglint.so.}" ] || fail "pkg-config version"

# --- (a) C, with pkg-config -------------------------------------------------
if [ $sanitizer = none ]; then
cc -std=c11 -Wall -Wextra -Werror -o "$work/c_consumer" "$root/capi/consumers/consumer.c" \
  $(pkg-config --cflags --libs glint) -lm -Wl,-rpath,"$prefix/lib"
"$work/c_consumer" "$case_dir" | tee "$work/c.out"
grep -q "1 outputs checked, 0 mismatches" "$work/c.out" || fail "C consumer"
# The library it runs is the installed one.
ldd "$work/c_consumer" > "$work/ldd.txt"
grep -q "libglint.so.0 => $prefix/lib/libglint.so.0" "$work/ldd.txt" || fail "C consumer links another libglint: $(cat "$work/ldd.txt")"
fi

# --- (a') the same under AddressSanitizer and UBSan (TSan for a TSan build) ---
c_san="-fsanitize=address,undefined"
[ $sanitizer = tsan ] && c_san="-fsanitize=thread"
cc -std=c11 -g $c_san -fno-omit-frame-pointer \
  -o "$work/c_consumer_asan" "$root/capi/consumers/consumer.c" \
  $(pkg-config --cflags --libs glint) -lm -Wl,-rpath,"$prefix/lib"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "${run[@]}" "$work/c_consumer_asan" "$case_dir" | tee "$work/c_asan.out"
grep -q "1 outputs checked, 0 mismatches" "$work/c_asan.out" || fail "C consumer under ASan"

# --- (b) C++, with CMake's find_package(Glint) --------------------------------
cxx_flags=""
[ $sanitizer != none ] && cxx_flags=$c_san
cmake -S "$root/capi/consumers/cmake" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$cxx_flags" > "$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake configure"; }
cmake --build "$work/cmake" > "$work/cmake_build.log" 2>&1 || { cat "$work/cmake_build.log"; fail "cmake build"; }
"${run[@]}" "$work/cmake/cpp_consumer" "$case_dir" | tee "$work/cpp.out"
grep -q "1 outputs checked, 0 mismatches" "$work/cpp.out" || fail "C++ consumer"
# The same program through pkg-config's C++ module.
c++ -std=c++17 $cxx_flags -o "$work/cpp_consumer_pc" "$root/capi/consumers/cmake/consumer.cc" \
  $(pkg-config --cflags --libs glint-cpp) -Wl,-rpath,"$prefix/lib"
"${run[@]}" "$work/cpp_consumer_pc" "$case_dir" > "$work/cpp_pc.out"
grep -q "1 outputs checked, 0 mismatches" "$work/cpp_pc.out" || fail "C++ consumer (glint-cpp.pc)"
# A version the installed package cannot satisfy is refused.
mkdir -p "$work/v1"
printf 'cmake_minimum_required(VERSION 3.16)\nproject(v NONE)\nfind_package(Glint 1.0 REQUIRED)\n' \
  > "$work/v1/CMakeLists.txt"
if cmake -S "$work/v1" -B "$work/v1/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/v1.log" 2>&1; then
  fail "find_package(Glint 1.0) accepted libglint 0.x"
fi

# --- (c) Python, with ctypes ----------------------------------------------------
py_env=()
if [ $sanitizer = tsan ]; then
  echo "python consumer: skipped: TSan cannot start under an uninstrumented interpreter"
  echo "PASS"
  exit 0
fi
if [ $sanitizer = asan ]; then
  # The interpreter is not instrumented: the runtimes come first by preload,
  # and its own allocations are not ours to leak-check.
  py_env=(env LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
          ASAN_OPTIONS=detect_leaks=0)
fi
"${py_env[@]}" python3 "$root/capi/consumers/consumer.py" "$prefix/lib/libglint.so.0" "$case_dir" | tee "$work/py.out"
grep -q "1 outputs checked, 0 mismatches" "$work/py.out" || fail "Python consumer"

echo "PASS"
