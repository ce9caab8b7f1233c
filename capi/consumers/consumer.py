#!/usr/bin/env python3
"""An out-of-tree Python program over an installed libglint, through ctypes.

Runs an ONNX node case (CASE_DIR/model.onnx, test_data_set_0/input_*.pb)
through the C API and compares every output with the case's output_*.pb.
Exit 0 when all match, 1 otherwise.

    consumer.py LIBGLINT CASE_DIR
"""
import ctypes
import os
import struct
import sys


class GlintError(Exception):
    pass


def load(path):
    lib = ctypes.CDLL(path)
    p = ctypes.c_void_p
    sz = ctypes.c_size_t
    status = p  # GlintStatus*: NULL on success.
    sigs = {
        "glint_api_version": (ctypes.c_uint32, []),
        "glint_status_code": (ctypes.c_int, [p]),
        "glint_status_message": (ctypes.c_char_p, [p]),
        "glint_status_delete": (None, [p]),
        "glint_code_name": (ctypes.c_char_p, [ctypes.c_int]),
        "glint_runtime_create": (status, [ctypes.c_char_p, ctypes.POINTER(p)]),
        "glint_runtime_delete": (status, [p]),
        "glint_runtime_add_network": (
            status, [p, ctypes.c_char_p, ctypes.c_char_p, sz, p, ctypes.POINTER(p)]),
        "glint_runtime_run": (
            status, [p, ctypes.c_char_p, ctypes.POINTER(p), sz, p, ctypes.POINTER(p)]),
        "glint_tensor_create_from_onnx": (status, [ctypes.c_char_p, sz, ctypes.POINTER(p)]),
        "glint_tensor_info": (status, [
            p, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)), ctypes.POINTER(sz),
            ctypes.POINTER(p), ctypes.POINTER(sz)]),
        "glint_tensor_delete": (None, [p]),
        "glint_tensor_list_find": (status, [p, ctypes.c_char_p, ctypes.POINTER(p)]),
        "glint_tensor_list_delete": (None, [p]),
    }
    for name, (restype, argtypes) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def check(lib, status, what):
    if status:
        code = lib.glint_status_code(status)
        message = lib.glint_status_message(status).decode()
        lib.glint_status_delete(status)
        raise GlintError("%s: %s: %s" % (what, lib.glint_code_name(code).decode(), message))


def tensor_from_pb(lib, path):
    with open(path, "rb") as f:
        data = f.read()
    t = ctypes.c_void_p()
    check(lib, lib.glint_tensor_create_from_onnx(data, len(data), ctypes.byref(t)), path)
    return t


def tensor_info(lib, t):
    name = ctypes.c_char_p()
    dtype = ctypes.c_int()
    dims = ctypes.POINTER(ctypes.c_int64)()
    rank = ctypes.c_size_t()
    data = ctypes.c_void_p()
    size = ctypes.c_size_t()
    check(lib, lib.glint_tensor_info(t, ctypes.byref(name), ctypes.byref(dtype),
                                     ctypes.byref(dims), ctypes.byref(rank),
                                     ctypes.byref(data), ctypes.byref(size)), "info")
    return (name.value.decode(), dtype.value, [dims[i] for i in range(rank.value)],
            ctypes.string_at(data, size.value) if size.value else b"")


def main():
    if len(sys.argv) != 3:
        print("usage: consumer.py LIBGLINT CASE_DIR", file=sys.stderr)
        return 2
    lib = load(sys.argv[1])
    case = sys.argv[2]
    print("python consumer: libglint C API version %d" % lib.glint_api_version())

    inputs = []
    while os.path.exists("%s/test_data_set_0/input_%d.pb" % (case, len(inputs))):
        inputs.append(tensor_from_pb(lib, "%s/test_data_set_0/input_%d.pb" % (case, len(inputs))))

    runtime = ctypes.c_void_p()
    check(lib, lib.glint_runtime_create(b"sim*2:memory=512MiB", ctypes.byref(runtime)), "create")
    with open(os.path.join(case, "model.onnx"), "rb") as f:
        model = f.read()
    check(lib, lib.glint_runtime_add_network(runtime, b"case", model, len(model), None, None), "add")
    array = (ctypes.c_void_p * len(inputs))(*[t.value for t in inputs])
    outputs = ctypes.c_void_p()
    check(lib, lib.glint_runtime_run(runtime, b"case", array, len(inputs), None,
                                     ctypes.byref(outputs)), "run")

    mismatches = checked = 0
    while os.path.exists("%s/test_data_set_0/output_%d.pb" % (case, checked)):
        expected = tensor_from_pb(lib, "%s/test_data_set_0/output_%d.pb" % (case, checked))
        name, want_type, want_dims, want = tensor_info(lib, expected)
        got_handle = ctypes.c_void_p()
        check(lib, lib.glint_tensor_list_find(outputs, name.encode(), ctypes.byref(got_handle)),
              "output")
        _, got_type, got_dims, got = tensor_info(lib, got_handle)
        same = (got_type, got_dims, len(got)) == (want_type, want_dims, len(want))
        max_diff = 0.0
        if same and want_type == 1:  # float32
            n = len(want) // 4
            for a, b in zip(struct.unpack("<%df" % n, got), struct.unpack("<%df" % n, want)):
                max_diff = max(max_diff, abs(a - b))
                if abs(a - b) > 1e-4 * (1 + abs(b)):
                    same = False
        elif same:
            same = got == want
        print("python consumer: output '%s' %s %s, max abs diff %g"
              % (name, want_dims, "matches" if same else "DIFFERS", max_diff))
        mismatches += not same
        checked += 1
        lib.glint_tensor_delete(expected)
    lib.glint_tensor_list_delete(outputs)
    for t in inputs:
        lib.glint_tensor_delete(t)
    check(lib, lib.glint_runtime_delete(runtime), "delete")

    # Errors come back as statuses, never as a crash of this interpreter.
    bogus = ctypes.c_void_p()
    status = lib.glint_runtime_create(b"sim*0", ctypes.byref(bogus))
    print("python consumer: bad spec -> %s" % lib.glint_code_name(lib.glint_status_code(status)).decode())
    ok_error = lib.glint_status_code(status) == 3 and not bogus.value
    lib.glint_status_delete(status)
    status = lib.glint_runtime_delete(ctypes.cast(array, ctypes.c_void_p))
    print("python consumer: wrong handle -> %s: %s" % (
        lib.glint_code_name(lib.glint_status_code(status)).decode(),
        lib.glint_status_message(status).decode()))
    ok_error = ok_error and lib.glint_status_code(status) == 3
    lib.glint_status_delete(status)

    if checked == 0:
        print("python consumer: no output_*.pb under %s" % case, file=sys.stderr)
        return 1
    print("python consumer: %s: %d outputs checked, %d mismatches" % (case, checked, mismatches))
    return 0 if mismatches == 0 and ok_error else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GlintError as e:
        print("python consumer: %s" % e, file=sys.stderr)
        sys.exit(1)
