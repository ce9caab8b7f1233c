"""libFuzzer targets that are also regression tests in the ordinary build.

See fuzz/README.md. One call of glint_fuzz_target defines:

  <name>_lib   the target's source (LLVMFuzzerTestOneInput), alwayslink.
  <name>_test  a cc_test that replays every file of the committed corpus
               (seeds and regressions/) through LLVMFuzzerTestOneInput with
               //fuzz:replay_main, so `bazel test //...` runs each seed and
               each past crasher on every CI run, with whatever compiler and
               sanitizer the build uses.
  <name>       the fuzzer (tagged manual: //... does not build it). Under
               --config=fuzz it links libFuzzer's main (-fsanitize=fuzzer);
               otherwise it links the replay driver, so it still builds and
               replays files given on its command line.
"""

load("@rules_cc//cc:defs.bzl", "cc_binary", "cc_library", "cc_test")

def glint_fuzz_target(name, srcs, deps, corpus, size = "small", **kwargs):
    """Defines a fuzz target, its replay test and its fuzzer binary.

    Args:
      name: the fuzzer's name, e.g. "npy_fuzzer"; its corpus lives in
        fuzz/corpus/<name>/ and its crashers in fuzz/corpus/<name>/regressions/.
      srcs: the source defining LLVMFuzzerTestOneInput.
      deps: what it tests. Keep them small: the fuzz build compiles every
        dependency with clang and the sanitizers.
      corpus: label of a filegroup holding the committed corpus
        (see //fuzz:BUILD).
      size: of the replay test.
      **kwargs: passed to all three targets (e.g. visibility).
    """
    lib = name + "_lib"
    cc_library(
        name = lib,
        srcs = srcs,
        deps = deps + ["//fuzz:fuzz_check"],
        # Nothing in the binary refers to the symbols of this library but the
        # driver's one call: keep the object whatever the link order.
        alwayslink = True,
        **kwargs
    )
    cc_test(
        name = name + "_test",
        size = size,
        srcs = [],
        args = ["$(rootpaths %s)" % corpus],
        data = [corpus],
        deps = [
            ":" + lib,
            "//fuzz:replay_main",
        ],
        **kwargs
    )
    cc_binary(
        name = name,
        srcs = [],
        deps = [":" + lib] + select({
            "//fuzz:fuzzing": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:fuzzing": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        tags = ["manual"],
        **kwargs
    )
