"""Protocol buffers compiled with Debian's protoc and grpc_cpp_plugin.

Bazel 4's proto rules would download protobuf's sources; this macro runs the
system compiler in a genrule instead and wraps the output in a cc_library.
"""

def glint_cc_proto(name, srcs, grpc = False, deps = [], visibility = None):
    """Generates C++ (and optionally gRPC) code for `srcs`.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package.
      grpc: also generate gRPC service stubs.
      deps: other glint_cc_proto libraries the protos import.
      visibility: of the cc_library.
    """
    bases = [s[:-len(".proto")] for s in srcs]
    pkg = native.package_name()
    outs = []
    hdrs = []
    for b in bases:
        outs += [b + ".pb.h", b + ".pb.cc"]
        hdrs.append(b + ".pb.h")
        if grpc:
            outs += [b + ".grpc.pb.h", b + ".grpc.pb.cc"]
            hdrs.append(b + ".grpc.pb.h")
    plugin = ""
    if grpc:
        plugin = "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin --grpc_out=$(GENDIR) "
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = "/usr/bin/protoc -I. -I$(GENDIR) --cpp_out=$(GENDIR) " + plugin +
              " ".join([pkg + "/" + s for s in srcs]),
    )
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs,
        visibility = visibility,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = hdrs,
        deps = deps + ["@system//:protobuf"] + (["@system//:grpc"] if grpc else []),
        visibility = visibility,
    )

def upstream_cc_proto(name, srcs, visibility = None):
    """C++ messages and gRPC stubs of third-party .proto files, unmodified.

    Unlike glint_cc_proto, the package's own folder is the import root: the
    upstream files import each other bare (`import "model_config.proto"`),
    so the generated code includes "model_config.pb.h" and the library puts
    its folder on the include path.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package (one import root).
      visibility: of the cc_library.
    """
    bases = [s[:-len(".proto")] for s in srcs]
    outs = []
    for b in bases:
        outs += [b + ".pb.h", b + ".pb.cc", b + ".grpc.pb.h", b + ".grpc.pb.cc"]
    native.genrule(
        name = name + "_gen",
        srcs = srcs,
        outs = outs,
        cmd = ("/usr/bin/protoc -I$$(dirname $(location " + srcs[0] + ")) " +
               "--cpp_out=$(RULEDIR) " +
               "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin " +
               "--grpc_out=$(RULEDIR) " + " ".join(srcs)),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        includes = ["."],
        deps = ["@system//:protobuf", "@system//:grpc"],
        visibility = visibility,
    )
