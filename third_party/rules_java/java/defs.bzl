"""Re-exports Bazel's native Java rules. Glint has no Java; Bazel 4.2.3's
@bazel_tools//tools/jdk package loads this file while registering its default
toolchains, and the real rules_java would be downloaded."""

def java_binary(**kwargs):
    native.java_binary(**kwargs)

def java_import(**kwargs):
    native.java_import(**kwargs)

def java_library(**kwargs):
    native.java_library(**kwargs)

def java_runtime(**kwargs):
    native.java_runtime(**kwargs)

def java_toolchain(**kwargs):
    native.java_toolchain(**kwargs)
