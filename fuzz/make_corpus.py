#!/usr/bin/python3
"""Writes the seed corpora of Glint's fuzz targets into fuzz/corpus/<target>/.

Seeds come from Debian's libonnx-testdata (the ONNX node tests: their
model.onnx and test_data_set_*/input_*.pb files) plus hand-made cases for the
paths the test data never takes (typed TensorProto fields, .npy header
variants, device specs, placement plans). The sample is deterministic (a hash
of each case's name picks it) and small, so that the committed corpus stays
reviewable: at most MAX_FILES files and MAX_BYTES bytes per target, small
files first. regressions/ (crashers found by scripts/fuzz.sh) is never touched.

Usage, from anywhere: /usr/bin/python3 fuzz/make_corpus.py
Needs python3-onnx, python3-numpy and protoc (all in scripts/install_deps.sh).
"""

import glob
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

NODE_DIR = "/usr/share/libonnx-testdata/data/node"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
MAX_FILES = 300
MAX_BYTES = 3 * 1024 * 1024
# Seeds above these sizes are left out: libFuzzer runs small inputs faster
# and truncates anything beyond the target's -max_len (scripts/fuzz.sh).
MAX_MODEL_BYTES = 4096
MAX_TENSOR_BYTES = 2048


def rank(name):
    """A stable pseudo-random order: the sample does not follow the alphabet."""
    return hashlib.sha1(name.encode()).hexdigest()


def sample(cases, count):
    """The `count` cases of lowest rank, as (name, bytes), sorted by name."""
    chosen = sorted(cases, key=lambda c: rank(c[0]))[:count]
    return sorted(chosen)


def write_target(target, files):
    """Replaces the seeds of `target` by `files` ((name, bytes) pairs)."""
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    for entry in os.listdir(directory):
        path = os.path.join(directory, entry)
        if entry != "regressions" and os.path.isfile(path):
            os.remove(path)
    names = set()
    total = 0
    for name, data in files:
        assert name not in names, name
        names.add(name)
        total += len(data)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    assert len(files) <= MAX_FILES, (target, len(files))
    assert total <= MAX_BYTES, (target, total)
    print(f"{target}: {len(files)} files, {total} bytes")


def node_tests():
    """(test name, model path, [input .pb paths of data set 0]), sorted."""
    tests = []
    for model in sorted(glob.glob(os.path.join(NODE_DIR, "*", "model.onnx"))):
        test_dir = os.path.dirname(model)
        inputs = sorted(glob.glob(os.path.join(test_dir, "test_data_set_0",
                                               "input_*.pb")))
        tests.append((os.path.basename(test_dir), model, inputs))
    return tests


def read(path):
    with open(path, "rb") as f:
        return f.read()


def load_tensor(path):
    tensor = TensorProto()
    tensor.ParseFromString(read(path))
    return tensor


def to_array(tensor):
    """The tensor as a numpy array; None for what numpy cannot hold and for
    the node tests' inputs that are sequences or optionals, which parse as a
    TensorProto of nonsense."""
    if tensor.data_type in (TensorProto.UNDEFINED, TensorProto.STRING,
                            TensorProto.BFLOAT16, TensorProto.COMPLEX64,
                            TensorProto.COMPLEX128):
        return None
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError):
        return None


# --- onnx_import_fuzzer ------------------------------------------------------

def onnx_import_seeds(tests):
    cases = []
    for name, model, _ in tests:
        data = read(model)
        if len(data) <= MAX_MODEL_BYTES:
            cases.append((name + ".onnx", data))
    return sample(cases, 250)


# --- tensor_proto_fuzzer -----------------------------------------------------

def typed_tensor_seeds():
    """TensorProtos holding their data in the typed fields (the node tests
    all use raw_data), plus the refused layouts."""
    seeds = []

    def add(name, tensor):
        seeds.append(("typed_" + name + ".pb",
                      tensor.SerializeToString(deterministic=True)))

    add("float", helper.make_tensor("f", TensorProto.FLOAT, [2, 3],
                                    [0.5, -1, 2, 3, 4, 5]))
    add("double", helper.make_tensor("d", TensorProto.DOUBLE, [2], [1.5, -2]))
    add("int64", helper.make_tensor("i64", TensorProto.INT64, [3],
                                    [1, -2, 2**40]))
    add("int32", helper.make_tensor("i32", TensorProto.INT32, [2], [7, -7]))
    add("int16", helper.make_tensor("i16", TensorProto.INT16, [2],
                                    [-32768, 32767]))
    add("int8", helper.make_tensor("i8", TensorProto.INT8, [3], [-128, 0, 127]))
    add("uint8", helper.make_tensor("u8", TensorProto.UINT8, [2], [0, 255]))
    add("uint16", helper.make_tensor("u16", TensorProto.UINT16, [1], [65535]))
    add("uint32", helper.make_tensor("u32", TensorProto.UINT32, [2],
                                     [0, 2**32 - 1]))
    add("uint64", helper.make_tensor("u64", TensorProto.UINT64, [1], [2**63]))
    add("bool", helper.make_tensor("b", TensorProto.BOOL, [3], [1, 0, 1]))
    add("float16", helper.make_tensor("h", TensorProto.FLOAT16, [2],
                                      np.array([1.0, -2.0], np.float16)))
    bf16 = TensorProto(name="bf", data_type=TensorProto.BFLOAT16, dims=[2],
                       int32_data=[0x3f80, 0xc000])
    add("bfloat16", bf16)
    add("scalar", helper.make_tensor("s", TensorProto.FLOAT, [], [42]))
    add("empty", helper.make_tensor("e", TensorProto.FLOAT, [0, 3], []))
    add("raw_bool", TensorProto(name="rb", data_type=TensorProto.BOOL,
                                dims=[3], raw_data=b"\x00\x01\x02"))
    add("raw_uint32", TensorProto(name="ru", data_type=TensorProto.UINT32,
                                  dims=[1], raw_data=b"\xff\xff\xff\xff"))
    add("int8_out_of_range", TensorProto(name="o", data_type=TensorProto.INT8,
                                         dims=[1], int32_data=[300]))
    add("negative_dim", TensorProto(name="n", data_type=TensorProto.FLOAT,
                                    dims=[-1], raw_data=b""))
    add("count_mismatch", TensorProto(name="c", data_type=TensorProto.FLOAT,
                                      dims=[4], float_data=[1, 2]))
    add("string", helper.make_tensor("str", TensorProto.STRING, [1], [b"a"]))
    add("complex", TensorProto(name="cx", data_type=TensorProto.COMPLEX64,
                               dims=[1], float_data=[1, 2]))
    add("undefined", TensorProto(name="u", dims=[1], raw_data=b"\0"))
    external = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[1],
                           data_location=TensorProto.EXTERNAL)
    external.external_data.add(key="location", value="weights.bin")
    add("external", external)
    segmented = helper.make_tensor("sg", TensorProto.FLOAT, [2], [1, 2])
    segmented.segment.begin = 0
    segmented.segment.end = 2
    add("segment", segmented)
    return seeds


def tensor_proto_seeds(tests):
    cases = []
    for name, _, inputs in tests:
        for path in inputs:
            data = read(path)
            if len(data) <= MAX_TENSOR_BYTES:
                cases.append((f"{name}_{os.path.basename(path)}", data))
    return sample(cases, 200) + typed_tensor_seeds()


# --- npy_fuzzer --------------------------------------------------------------

def npy_bytes(array, version=None):
    out = io.BytesIO()
    np.lib.format.write_array(out, array, version=version,
                              allow_pickle=False)
    return out.getvalue()


def npy_seeds(tests):
    cases = []
    for name, _, inputs in tests:
        for path in inputs:
            array = to_array(load_tensor(path))
            if array is None or array.nbytes > MAX_TENSOR_BYTES:
                continue
            cases.append((f"{name}_{os.path.basename(path)[:-3]}.npy",
                          npy_bytes(np.ascontiguousarray(array))))
    seeds = sample(cases, 200)

    def add(name, data):
        seeds.append(("made_" + name + ".npy", data))

    for dtype in ("f4", "f8", "f2", "i1", "u1", "i2", "u2", "i4", "u4", "i8",
                  "u8", "?"):
        add("dtype_" + dtype.replace("?", "bool"),
            npy_bytes(np.arange(6).astype(dtype).reshape(2, 3)))
    add("scalar", npy_bytes(np.array(3.5, np.float32)))
    add("empty", npy_bytes(np.zeros((0, 4), np.float32)))
    add("version2", npy_bytes(np.ones((2, 2), np.int64), version=(2, 0)))
    add("version3", npy_bytes(np.ones((3,), np.float32), version=(3, 0)))
    add("fortran", npy_bytes(np.asfortranarray(np.ones((2, 3), np.float32))))
    add("big_endian", npy_bytes(np.ones((2,), ">f4")))
    add("structured", npy_bytes(np.zeros((2,), [("a", "<f4"), ("b", "<i4")])))
    add("truncated", npy_bytes(np.ones((4, 4), np.float32))[:-5])
    return seeds


# --- run_request_fuzzer ------------------------------------------------------

def glint_pb2():
    """glint.proto's Python module, compiled with the system protoc."""
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "proto"),
                    "--python_out=" + out, "glint.proto"], check=True)
    sys.path.insert(0, out)
    import glint_pb2  # pylint: disable=import-outside-toplevel
    shutil.rmtree(out)
    return glint_pb2


def run_request_seeds(tests):
    pb = glint_pb2()
    cases = []
    for name, model_path, inputs in tests:
        if not inputs or os.path.getsize(model_path) > MAX_MODEL_BYTES:
            continue
        graph = onnx.load(model_path).graph
        initializers = {i.name for i in graph.initializer}
        input_names = [i.name for i in graph.input
                       if i.name not in initializers]
        request = pb.RunNetworkRequest(name=name[len("test_"):])
        usable = True
        for index, path in enumerate(inputs):
            tensor = load_tensor(path)
            array = to_array(tensor)
            if array is None:
                usable = False
                break
            raw = array.tobytes()
            request.inputs.add(
                name=tensor.name or (input_names[index]
                                     if index < len(input_names) else ""),
                dtype=tensor.data_type, shape=list(tensor.dims), raw_data=raw)
        if not usable:
            continue
        request.requested_outputs.extend(o.name for o in graph.output)
        request.trace = rank(name)[0] in "0123"
        data = request.SerializeToString(deterministic=True)
        if len(data) <= MAX_TENSOR_BYTES * 2:
            cases.append((name + ".pb", data))
    seeds = sample(cases, 200)

    def add(name, request):
        seeds.append(("made_" + name + ".pb",
                      request.SerializeToString(deterministic=True)))

    add("no_inputs", pb.RunNetworkRequest(name="net"))
    add("scalar", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=pb.DATA_TYPE_FLOAT32, raw_data=b"\0\0\x80\x3f")]))
    add("empty", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=pb.DATA_TYPE_FLOAT32, shape=[0, 5])]))
    add("negative_dim", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=pb.DATA_TYPE_FLOAT32, shape=[-1])]))
    add("huge_shape", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=pb.DATA_TYPE_UINT8, shape=[2**62, 4])]))
    add("unknown_dtype", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=99, shape=[1], raw_data=b"\0")]))
    add("string_dtype", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=8, shape=[1], raw_data=b"\0")]))
    add("short_raw_data", pb.RunNetworkRequest(name="net", inputs=[pb.Tensor(
        name="x", dtype=pb.DATA_TYPE_INT64, shape=[2], raw_data=b"\0" * 12)]))
    # request_binding_fuzzer's network: x float32[n, 3, ?], ids int64[n],
    # n <= 8, x's last dim <= 5; outputs y and z.
    def dynamic(name, n, last, ids_n, outputs=()):
        add("dyn_" + name, pb.RunNetworkRequest(name="net", inputs=[
            pb.Tensor(name="x", dtype=pb.DATA_TYPE_FLOAT32,
                      shape=[n, 3, last], raw_data=b"\0" * (n * 3 * last * 4)),
            pb.Tensor(name="ids", dtype=pb.DATA_TYPE_INT64, shape=[ids_n],
                      raw_data=b"\0" * (ids_n * 8))],
            requested_outputs=list(outputs)))
    dynamic("within", 2, 4, 2, ["y"])
    dynamic("over_bound", 9, 1, 9)
    dynamic("names_differ", 2, 4, 3, ["z", "w"])
    return seeds


# --- rest_request_fuzzer -----------------------------------------------------

OIP_DATATYPES = {
    TensorProto.BOOL: "BOOL", TensorProto.UINT8: "UINT8",
    TensorProto.UINT16: "UINT16", TensorProto.UINT32: "UINT32",
    TensorProto.UINT64: "UINT64", TensorProto.INT8: "INT8",
    TensorProto.INT16: "INT16", TensorProto.INT32: "INT32",
    TensorProto.INT64: "INT64", TensorProto.FLOAT16: "FP16",
    TensorProto.BFLOAT16: "BF16", TensorProto.FLOAT: "FP32",
    TensorProto.DOUBLE: "FP64",
}


def json_value(value):
    """A JSON element as glintd writes it: non-finite floats as strings."""
    if isinstance(value, float) and not np.isfinite(value):
        return "NaN" if np.isnan(value) else (
            "Infinity" if value > 0 else "-Infinity")
    return value


def rest_request_seeds(tests):
    """KServe v2 REST infer bodies: the node tests' inputs as JSON tensors
    (flat, or nested for every other case), plus hand-made cases."""
    import json  # pylint: disable=import-outside-toplevel
    cases = []
    for name, model_path, inputs in tests:
        if not inputs or os.path.getsize(model_path) > MAX_MODEL_BYTES:
            continue
        body = {"id": name, "inputs": []}
        usable = True
        for index, path in enumerate(inputs):
            tensor = load_tensor(path)
            array = to_array(tensor)
            if array is None or tensor.data_type not in OIP_DATATYPES:
                usable = False
                break
            values = [json_value(v) for v in array.flatten().tolist()]
            data = values
            if rank(name)[1] in "01234567" and array.ndim > 1:
                data = np.array(values, dtype=object).reshape(
                    array.shape).tolist()
            body["inputs"].append({
                "name": tensor.name or f"input_{index}",
                "shape": list(array.shape),
                "datatype": OIP_DATATYPES[tensor.data_type],
                "data": data})
        if not usable:
            continue
        text = json.dumps(body, separators=(",", ":")).encode()
        if len(text) <= MAX_TENSOR_BYTES * 2:
            cases.append((name + ".json", text))
    seeds = sample(cases, 150)
    made = {
        "minimal": '{"inputs":[]}',
        "full": '{"id":"42","parameters":{"priority":3,"timeout":1000},'
                '"inputs":[{"name":"a","shape":[2,2],"datatype":"UINT32",'
                '"data":[1,2,3,4]},{"name":"b","shape":[3],"datatype":"BOOL",'
                '"data":[true,false,true]}],"outputs":[{"name":"y"},'
                '{"name":"z","parameters":{"binary_data":true}}]}',
        "nested": '{"inputs":[{"name":"x","shape":[2,2,1],"datatype":"FP32",'
                  '"data":[[[1.5],[2]],[[-3e38],["NaN"]]]}]}',
        "scalar": '{"inputs":[{"name":"x","shape":[],"datatype":"INT64",'
                  '"data":[-9223372036854775808]}]}',
        "empty": '{"inputs":[{"name":"x","shape":[0,3],"datatype":"FP16",'
                 '"data":[]}]}',
        "halfs": '{"inputs":[{"name":"h","shape":[4],"datatype":"FP16",'
                 '"data":[65504,1e-8,"-Infinity",-0.0]},{"name":"b",'
                 '"shape":[2],"datatype":"BF16","data":[3e38,1e-40]}]}',
        "u64": '{"inputs":[{"name":"x","shape":[2],"datatype":"UINT64",'
               '"data":[0,18446744073709551615]}]}',
        "out_of_range": '{"inputs":[{"name":"x","shape":[1],'
                        '"datatype":"INT8","data":[128]}]}',
        "count_mismatch": '{"inputs":[{"name":"x","shape":[2,3],'
                          '"datatype":"FP32","data":[1,2,3]}]}',
        "huge_shape": '{"inputs":[{"name":"x","shape":[1000000,1000000],'
                      '"datatype":"FP32","data":[[1]]}]}',
        "bytes": '{"inputs":[{"name":"x","shape":[1],"datatype":"BYTES",'
                 '"data":["a"]}]}',
        "binary": '{"inputs":[{"name":"x","shape":[1],"datatype":"FP32",'
                  '"parameters":{"binary_data_size":4}}]}',
        "classification": '{"inputs":[],"outputs":[{"name":"y",'
                          '"parameters":{"classification":2}}]}',
        "bad_json": '{"inputs":[{"name":',
        "not_object": '[1,2,3]',
        "deep": '{"inputs":[{"name":"x","shape":[1],"datatype":"FP32",'
                '"data":' + '[' * 64 + ']' * 64 + '}]}',
        "utf8": '{"id":"\\u00e9\\ud83d\\ude00","inputs":[{"name":'
                '"\\u0000x","shape":[1],"datatype":"BOOL","data":[false]}]}',
    }
    for case, text in sorted(made.items()):
        seeds.append(("made_" + case + ".json", text.encode()))
    return seeds


# --- oip_request_fuzzer ------------------------------------------------------

def inference_pb2():
    """inference.proto's Python module, compiled with the system protoc."""
    out = tempfile.mkdtemp()
    subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "proto"),
                    "--python_out=" + out, "inference.proto"], check=True)
    sys.path.insert(0, out)
    import inference_pb2  # pylint: disable=import-outside-toplevel
    shutil.rmtree(out)
    return inference_pb2


# ONNX TensorProto.DataType -> (OIP datatype, typed contents field or None).
OIP_TYPES = {
    1: ("FP32", "fp32_contents"), 2: ("UINT8", "uint_contents"),
    3: ("INT8", "int_contents"), 4: ("UINT16", "uint_contents"),
    5: ("INT16", "int_contents"), 6: ("INT32", "int_contents"),
    7: ("INT64", "int64_contents"), 9: ("BOOL", "bool_contents"),
    10: ("FP16", None), 11: ("FP64", "fp64_contents"),
    12: ("UINT32", "uint_contents"), 13: ("UINT64", "uint64_contents"),
}

# Model configurations (RepositoryModelLoad's JSON), valid and not.
TRITON_CONFIGS = [
    "",
    "{}",
    '{"name": "model", "platform": "onnxruntime_onnx", "max_batch_size": 8}',
    '{"max_batch_size": 4, "dynamic_batching": {"max_queue_delay_microseconds":'
    ' "100", "preferred_batch_size": [2, 4]}}',
    '{"maxBatchSize": 2, "dynamicBatching": {}}',
    '{"instance_group": [{"count": 2, "kind": "KIND_GPU"}, {"kind": "KIND_CPU"}]}',
    '{"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 224, 224]}],'
    ' "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [-1]}]}',
    '{"parameters": {"partition_strategy": {"string_value": "load_balanced"},'
    ' "plan_devices": {"string_value": "2"}, "replicas": "2",'
    ' "input_shapes": "x=1,3,8,8;y=4", "place": "conv*=0;fc*=1",'
    ' "reuse": {"string_value": "moo"}, "user_config": "v1"}}',
    '{"sequence_batching": {}}',
    '{"max_batch_size": 1e300}',
    '{"input": [{"name": "x", "dims": [9223372036854775807, 2]}]}',
    '{"parameters": {"input_shapes": "x=4611686018427387904,4"}}',
    '{"name": "\\u0000", "backend": "python"}',
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    '{"max_batch_size": 4, "dynamic_batching": {"preserve_ordering": true}}',
]


def shared_memory_requests(pb):
    """ModelInferRequests with Triton's shared-memory parameters, valid and
    not: (seed name, request) pairs."""
    def window(tensor, region, offset, size):
        tensor.parameters["shared_memory_region"].string_param = region
        if offset is not None:
            tensor.parameters["shared_memory_offset"].int64_param = offset
        if size is not None:
            tensor.parameters["shared_memory_byte_size"].uint64_param = size

    def request(size=8, offset=64, raw_for_shm=False, contents=False):
        r = pb.ModelInferRequest(model_name="m", id="shm")
        a = r.inputs.add(name="a", datatype="FP32", shape=[2])
        window(a, "in", offset, size)
        r.inputs.add(name="b", datatype="INT32", shape=[1])
        if raw_for_shm:
            r.raw_input_contents.append(b"\0" * 8)
        if contents:
            a.contents.fp32_contents.extend([1, 2])
        r.raw_input_contents.append(b"\1\0\0\0")
        y = r.outputs.add(name="y")
        window(y, "out", 0, 4096)
        r.outputs.add(name="z")
        return r

    only_offset = request()
    del only_offset.inputs[0].parameters["shared_memory_region"]
    return [("shm_in_out", request()),
            ("shm_no_offset", request(offset=None)),
            ("shm_wrong_size", request(size=12)),
            ("shm_no_size", request(size=None)),
            ("shm_and_raw", request(raw_for_shm=True)),
            ("shm_and_contents", request(contents=True)),
            ("shm_offset_alone", only_offset)]


def oip_request_seeds(tests):
    pb = inference_pb2()
    cases = []
    for name, model_path, inputs in tests:
        if not inputs or os.path.getsize(model_path) > MAX_MODEL_BYTES:
            continue
        graph = onnx.load(model_path).graph
        initializers = {i.name for i in graph.initializer}
        input_names = [i.name for i in graph.input
                       if i.name not in initializers]
        typed = rank(name)[1] in "01234567"
        request = pb.ModelInferRequest(model_name=name[len("test_"):],
                                       id=rank(name)[:8])
        usable = True
        for index, path in enumerate(inputs):
            tensor = load_tensor(path)
            array = to_array(tensor)
            if array is None or tensor.data_type not in OIP_TYPES:
                usable = False
                break
            datatype, field = OIP_TYPES[tensor.data_type]
            entry = request.inputs.add(
                name=input_names[index] if index < len(input_names) else "x",
                datatype=datatype, shape=list(tensor.dims))
            if typed and field is not None:
                values = array.flatten().tolist()
                getattr(entry.contents, field).extend(values)
            else:
                typed = False
        if not usable:
            continue
        if not typed:
            for path in inputs:
                request.raw_input_contents.append(
                    to_array(load_tensor(path)).tobytes())
        for o in graph.output:
            request.outputs.add(name=o.name)
        data = request.SerializeToString(deterministic=True)
        if len(data) <= MAX_TENSOR_BYTES * 2:
            cases.append((name + ".pb", data))
    seeds = sample(cases, 150)

    def add(name, request):
        seeds.append(("made_" + name + ".pb",
                      request.SerializeToString(deterministic=True)))

    def one(datatype, shape, **kwargs):
        return pb.ModelInferRequest.InferInputTensor(
            name="x", datatype=datatype, shape=shape, **kwargs)

    add("bytes", pb.ModelInferRequest(model_name="m", inputs=[one(
        "BYTES", [1], contents=pb.InferTensorContents(bytes_contents=[b"a"]))]))
    add("fp16_raw", pb.ModelInferRequest(model_name="m", inputs=[one(
        "FP16", [2])], raw_input_contents=[b"\0\x3c\0\x3c"]))
    add("bf16_raw", pb.ModelInferRequest(model_name="m", inputs=[one(
        "BF16", [1])], raw_input_contents=[b"\x80\x3f"]))
    add("int8_range", pb.ModelInferRequest(model_name="m", inputs=[one(
        "INT8", [2], contents=pb.InferTensorContents(int_contents=[-129, 5]))]))
    add("huge_shape", pb.ModelInferRequest(model_name="m", inputs=[one(
        "FP32", [2**40, 2**40])]))
    add("zero_elements", pb.ModelInferRequest(model_name="m", inputs=[one(
        "INT64", [0, 2**40])]))
    add("mixed", pb.ModelInferRequest(model_name="m", inputs=[one(
        "FP32", [1], contents=pb.InferTensorContents(fp32_contents=[1]))],
        raw_input_contents=[b"\0\0\0\0"]))
    parameters = pb.ModelInferRequest(model_name="m", model_version="1")
    parameters.parameters["priority"].uint64_param = 1
    parameters.parameters["timeout"].int64_param = 1000
    parameters.parameters["sequence_id"].int64_param = 3
    add("parameters", parameters)
    shm = pb.ModelInferRequest(model_name="m", inputs=[one("FP32", [1])])
    shm.inputs[0].parameters["shared_memory_region"].string_param = "r"
    add("shared_memory", shm)
    for name, request in shared_memory_requests(pb):
        add(name, request)
    for i, config in enumerate(TRITON_CONFIGS):
        seeds.append((f"config_{i:02d}.json", config.encode()))
    return seeds


# --- device_spec_fuzzer ------------------------------------------------------

DEVICE_SPECS = [
    "sim*2:memory=2GiB",
    "sim:memory=512MiB,sim:memory=4GiB",
    "sim",
    "sim*1024",
    "sim*1025",
    "sim*0",
    "sim*2:threads=1",
    "sim:compute_gflops=50:link_gbps=10",
    "sim:memory=4096",
    "sim:memory=1000KB,sim:memory=1MB,sim:memory=1GB",
    "sim:memory=7B,sim:memory=3KiB",
    "sim:memory=18446744073709551615",
    "sim:memory=18446744073709551616",
    "sim:memory=17179869184GiB",
    "sim:memory=0",
    "sim:memory=-1",
    "sim:memory=2GiB:memory=1GiB",
    "sim:threads=1:threads=2",
    " sim * 2 : memory = 2GiB , fault:fail_after=3 ",
    "fault:fail_after=3:memory=1MiB",
    "sim:key=",
    "sim:=value",
    "sim:novalue",
    "sim,,sim",
    ",",
    "",
    "   ",
    "*2",
    "bad type",
    "sim*x",
    "sim*2*3",
    "my-device_2*3:a=b=c",
    "sim:memory=2 GiB",
    "sim:memory=2gib",
    "sim:memory=GiB",
    "sim:memory=1.5GiB",
    "512MiB",
    "2GiB",
    "1000KB",
    "4096",
    "sim*512,sim*512",
    "sim*512,sim*513",
]


def device_spec_seeds():
    return [(f"spec_{i:02d}.txt", spec.encode())
            for i, spec in enumerate(DEVICE_SPECS)]


# --- dim_expr_fuzzer ---------------------------------------------------------

# Dim names as exporters write them and as Glint's importer derives them
# (onnx/dim_naming.h), and what the grammar refuses.
DIM_EXPRS = [
    "batch",
    "(h+1)/2",
    "(h+3)/4",
    "64*batch",
    "((h+1)/2)*batch",
    "16*((h+3)/4)*((w+3)/4)",
    "2*batch*seq",
    "seq-1",
    "(2*seq+1)/3",
    "a-(b-3)",
    "h/0",
    "h/batch",
    "(((a)))",
    "unk__0",
    "batch_size",
    "Resizeoutput_dim_2",
    "4611686018427387904*batch",
    "99999999999999999999",
    "a b",
    "",
    "nonzero_1f3a<=3*h*w",
    "4*(topk_2<=seq)+1",
    "((t<=a-b)+1)/2",
    "(t<=(u<=batch)*2)*seq",
    "t<=",
    "t<=5<=6",
]


def dim_expr_seeds():
    # Byte 0: the constant DimAffine adds (signed); byte 1: its divisor - 1.
    prefixes = [b"\x00\x00", b"\x01\x01", b"\xff\x03", b"\x05\x0f"]
    return [(f"expr_{i:02d}.txt", prefixes[i % len(prefixes)] + e.encode())
            for i, e in enumerate(DIM_EXPRS)]


# --- placement_fuzzer --------------------------------------------------------

# Node names of placement_fuzzer.cc's graph: stem/mm stem/relu left/mm
# left/relu right/mm right/sigmoid join/add head/mm head/softmax.
PLACEMENTS = [
    "*=0",
    "*=1",
    "*=2\n@devices=3",
    "stem/*=0\n*=1",
    "stem/*=0\nleft/*=1\nright/*=0\n*=1",
    "stem/*=0\nleft/*=1\nright/*=2\n*=0\n@devices=3",
    "*/mm=1\n*=0",
    "*/relu=1\n*=0",
    "head/softmax=1\n*=0",
    "stem/mm=0\nstem/relu=0\nleft/mm=1\nleft/relu=1\nright/mm=1\n"
    "right/sigmoid=1\njoin/add=0\nhead/mm=0\nhead/softmax=0",
    "[ls]*=0\n*=1",
    "?????/*=1\n*=0",
    "*[!m]=1\n*=0",
    "stem/*=0",
    "*=-1",
    "*=2147483647",
    "*=3",
    "*=1\n@replicas=2",
    "*=0\n@replicas=2",
    "*=0\n@replicas=0",
    "*=0\n@replicas=-3",
    "*=0\n@replicas=3\n@devices=3",
    "*=0\n@memory=1024",
    "stem/*=0\n*=1\n@memory=2000",
    "*=0\n@memory=0",
    "*=0\n@unsupported=Relu\n@devices=3",
    "*=1\n@unsupported=Sigmoid",
    "right/*=1\n*=0\n@unsupported=Softmax\n@devices=3",
    "*=0\n@unsupported=Conv",
    "@devices=2",
    "",
    "left/*=1",
    "[=0",
    "\\*=0\n*=1",
    "stem/mm=0\nstem/mm=1\n*=1",
    "*=0\n@replicas=2147483647",
    "*=0\n@plan_devices=2",
    "*=0\n@plan_devices=-1",
    "*=0\n@plan_devices=3\n@replicas=2\n@devices=3",
]


def placement_seeds():
    return [(f"plan_{i:02d}.txt", plan.encode())
            for i, plan in enumerate(PLACEMENTS)]


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def store_record(name, model, options=b"", version=1):
    """A glint.store.v1.NetworkRecord, encoded by hand (proto/store.proto)."""
    def field(number, data):
        return bytes([number << 3 | 2]) + varint(len(data)) + data
    record = b"\x08" + varint(version) + field(2, name) + field(3, model)
    return record + (field(4, options) if options else b"")


def store_record_seeds():
    """Record files of the network network_store_fuzzer names (store/
    network_store.h): both formats, good and damaged."""
    import struct
    name = b"fuzzed network"

    def format1(payload):
        return (b"GLINTNET" + struct.pack("<IQ", 1, len(payload)) +
                hashlib.sha256(payload).digest() + payload)

    def format2(payload, header_name=name):
        return (b"GLINTNET" +
                struct.pack("<IIQ", 2, len(header_name), len(payload)) +
                hashlib.sha256(payload).digest() + header_name + payload)

    model = onnx.helper.make_model(onnx.helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])]))
    model = model.SerializeToString()
    good = format2(store_record(name, model, b"\x10\x01"))
    flipped = bytearray(good)
    flipped[-3] ^= 0x10
    return [
        ("format2", good),
        ("format2_empty_model", format2(store_record(name, b""))),
        ("format1", format1(store_record(name, model))),
        ("format2_other_name", format2(store_record(b"other", b"m"))),
        ("format2_record_version2",
         format2(store_record(name, b"m", version=2))),
        ("truncated", good[:len(good) // 2]),
        ("flipped", bytes(flipped)),
        ("header_only", good[:56]),
    ]


# --- http_connection_fuzzer -------------------------------------------------


def http_connection_seeds():
    """Raw bytes a client sends on one connection: a GET, sized and chunked
    infer bodies, pipelined requests, a length over any limit, a compressed
    body."""
    body = (b'{"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", '
            b'"data": [1, 2]}]}')
    return [
        ("get_live.http", b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("post_infer.http",
         b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\nContent-Length: "
         + str(len(body)).encode() + b"\r\n\r\n" + body),
        ("post_chunked.http",
         b"POST /v2/models/m/infer HTTP/1.1\r\nHost: x\r\n"
         b"Transfer-Encoding: chunked\r\n\r\n5\r\n{\"inp\r\n0\r\n\r\n"),
        ("pipelined.http",
         b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
         b"GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        ("huge_length.http",
         b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n"
         b"\r\nabc"),
        ("gzip.http",
         b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
         b"Content-Length: 3\r\n\r\nabc"),
    ]


def upload_frames(chunks):
    """AddNetworkStream messages as add_network_stream_fuzzer reads them:
    each a 2-byte little-endian length and the serialized message."""
    out = b""
    for chunk in chunks:
        data = chunk if isinstance(chunk, bytes) else chunk.SerializeToString()
        out += len(data).to_bytes(2, "little") + data
    return out


def add_network_stream_seeds():
    pb = glint_pb2()
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]))
    data = model.SerializeToString()

    def first(name="net", model_bytes=b"", size=0, **options):
        chunk = pb.AddNetworkChunk(name=name, model=model_bytes,
                                   model_size=size)
        for key, value in options.items():
            setattr(chunk.options, key, value)
        return chunk

    def piece(model_bytes, **fields):
        return pb.AddNetworkChunk(model=model_bytes, **fields)

    third = len(data) // 3
    return [
        ("whole_in_first.bin", upload_frames([first(model_bytes=data)])),
        ("pieces_with_size.bin", upload_frames(
            [first(size=len(data), model_bytes=data[:third]),
             piece(data[third:2 * third]), piece(data[2 * third:])])),
        ("pieces_no_size.bin", upload_frames(
            [first(precision="bf16")] +
            [piece(data[i:i + 7]) for i in range(0, len(data), 7)])),
        ("no_name.bin", upload_frames([piece(data)])),
        ("name_again.bin", upload_frames(
            [first(model_bytes=data[:4]), piece(data[4:], name="other")])),
        ("size_again.bin", upload_frames(
            [first(model_bytes=data[:4]), piece(data[4:], model_size=9)])),
        ("short_of_size.bin", upload_frames(
            [first(size=len(data) + 5, model_bytes=data)])),
        ("past_size.bin", upload_frames(
            [first(size=4, model_bytes=data)])),
        ("over_limit.bin", upload_frames(
            [first(size=1 << 40)])),
        ("past_limit.bin", upload_frames(
            [first(model_bytes=b"m" * 1000), piece(b"m" * 100)])),
        ("garbage_frame.bin", upload_frames(
            [first(model_bytes=data[:10]), b"\xff\xff\xff", piece(data[10:])])),
        ("empty_stream.bin", b""),
    ]


def main():
    tests = node_tests()
    if not tests:
        sys.exit(f"no ONNX node tests under {NODE_DIR} "
                 "(install libonnx-testdata)")
    write_target("onnx_import_fuzzer", onnx_import_seeds(tests))
    write_target("tensor_proto_fuzzer", tensor_proto_seeds(tests))
    write_target("npy_fuzzer", npy_seeds(tests))
    run_requests = run_request_seeds(tests)
    write_target("run_request_fuzzer", run_requests)
    # The same input; its own directory for the crashers it finds.
    write_target("request_binding_fuzzer", run_requests)
    write_target("oip_request_fuzzer", oip_request_seeds(tests))
    write_target("rest_request_fuzzer", rest_request_seeds(tests))
    write_target("http_connection_fuzzer", http_connection_seeds())
    write_target("device_spec_fuzzer", device_spec_seeds())
    write_target("dim_expr_fuzzer", dim_expr_seeds())
    write_target("placement_fuzzer", placement_seeds())
    write_target("network_store_fuzzer", store_record_seeds())
    write_target("add_network_stream_fuzzer", add_network_stream_seeds())


if __name__ == "__main__":
    main()
