"""transitive_headers: the headers of C++ libraries and of all they depend on.

The install script follows the C++ API's includes from
runtime/host_manager.h; this rule puts those headers in a test's runfiles
without every package exporting its header files.
"""

def _transitive_headers_impl(ctx):
    headers = depset(transitive = [
        dep[CcInfo].compilation_context.headers
        for dep in ctx.attr.deps
    ])
    return [DefaultInfo(
        files = headers,
        runfiles = ctx.runfiles(transitive_files = headers),
    )]

transitive_headers = rule(
    implementation = _transitive_headers_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)
