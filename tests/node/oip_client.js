// A second-language client of glintd's inference protocol: Node's
// @grpc/grpc-js with @grpc/proto-loader loading Triton's unmodified
// grpc_service.proto at run time. For each ONNX node test case it loads the
// model (RepositoryModelLoad, the bytes in "file:1/model.onnx"), checks
// readiness and metadata, runs ModelInfer with raw and with typed contents
// and compares every output with the case's expected output; then it reads
// ModelStatistics. Driven by tests/e2e_node_test.cc, which starts glintd.
//
//   node oip_client.js --address=127.0.0.1:PORT --protos=DIR \
//       --onnx_proto=/usr/include/onnx/onnx.proto CASE_DIR...
//
// Exit status 0 when every check holds; otherwise 1, with the failed check
// on stderr. Each check passed prints one "ok ..." line.
'use strict';

const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

function parseArgs(argv) {
  const args = {cases: []};
  for (const a of argv) {
    const m = /^--([a-z_]+)=(.*)$/.exec(a);
    if (m) {
      args[m[1]] = m[2];
    } else {
      args.cases.push(a);
    }
  }
  for (const required of ['address', 'protos', 'onnx_proto']) {
    if (!args[required]) throw new Error(`missing --${required}`);
  }
  if (args.cases.length === 0) throw new Error('no case folder given');
  return args;
}

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
}

// ONNX TensorProto.DataType → the protocol's datatype, element size, how
// to read one element from a little-endian buffer, and the typed contents
// field (null: none, raw only).
const DATATYPES = {
  1: {oip: 'FP32', size: 4, read: (b, o) => b.readFloatLE(o), field: 'fp32_contents'},
  2: {oip: 'UINT8', size: 1, read: (b, o) => b.readUInt8(o), field: 'uint_contents'},
  3: {oip: 'INT8', size: 1, read: (b, o) => b.readInt8(o), field: 'int_contents'},
  4: {oip: 'UINT16', size: 2, read: (b, o) => b.readUInt16LE(o), field: 'uint_contents'},
  5: {oip: 'INT16', size: 2, read: (b, o) => b.readInt16LE(o), field: 'int_contents'},
  6: {oip: 'INT32', size: 4, read: (b, o) => b.readInt32LE(o), field: 'int_contents'},
  7: {oip: 'INT64', size: 8, read: (b, o) => b.readBigInt64LE(o).toString(), field: 'int64_contents'},
  9: {oip: 'BOOL', size: 1, read: (b, o) => b.readUInt8(o) !== 0, field: 'bool_contents'},
  10: {oip: 'FP16', size: 2, read: (b, o) => b.readUInt16LE(o), field: null},
  11: {oip: 'FP64', size: 8, read: (b, o) => b.readDoubleLE(o), field: 'fp64_contents'},
  12: {oip: 'UINT32', size: 4, read: (b, o) => b.readUInt32LE(o), field: 'uint_contents'},
  13: {oip: 'UINT64', size: 8, read: (b, o) => b.readBigUInt64LE(o).toString(), field: 'uint64_contents'},
};

function datatypeByOip(oip) {
  for (const t of Object.values(DATATYPES)) {
    if (t.oip === oip) return t;
  }
  return null;
}

// An ONNX TensorProto as {name, type, dims, raw (little-endian Buffer)}.
function tensorFromOnnx(onnx, bytes) {
  const TensorProto = onnx.lookupType('onnx.TensorProto');
  const t = TensorProto.toObject(TensorProto.decode(bytes),
                                 {longs: String, bytes: Buffer, defaults: true});
  const type = DATATYPES[t.dataType];
  check(type, `ONNX element type ${t.dataType} is handled`);
  const dims = t.dims.map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  let raw = t.rawData && t.rawData.length ? Buffer.from(t.rawData) : null;
  if (!raw) {
    raw = Buffer.alloc(count * type.size);
    for (let i = 0; i < count; ++i) {
      const o = i * type.size;
      switch (t.dataType) {
        case 1: raw.writeFloatLE(t.floatData[i], o); break;
        case 11: raw.writeDoubleLE(t.doubleData[i], o); break;
        case 7: raw.writeBigInt64LE(BigInt(t.int64Data[i]), o); break;
        case 13: raw.writeBigUInt64LE(BigInt(t.uint64Data[i]), o); break;
        case 2: case 9: raw.writeUInt8(t.int32Data[i], o); break;
        case 3: raw.writeInt8(t.int32Data[i], o); break;
        case 4: case 10: raw.writeUInt16LE(t.int32Data[i], o); break;
        case 5: raw.writeInt16LE(t.int32Data[i], o); break;
        case 6: raw.writeInt32LE(t.int32Data[i], o); break;
        case 12: raw.writeUInt32LE(Number(t.uint64Data[i]), o); break;
        default: throw new Error(`no typed ONNX data for ${type.oip}`);
      }
    }
  }
  check(raw.length === count * type.size, `${t.name}: ${raw.length} bytes`);
  return {name: t.name, type, dims, raw};
}

function values(type, raw) {
  const out = [];
  for (let o = 0; o < raw.length; o += type.size) out.push(type.read(raw, o));
  return out;
}

// Floating values within atol + rtol * |expected| (NaN equals NaN), the rest
// exactly, as the C++ tests compare.
function sameValues(type, actual, expected) {
  if (actual.length !== expected.length) return false;
  const floating = type.oip === 'FP32' || type.oip === 'FP64';
  for (let i = 0; i < expected.length; ++i) {
    const a = actual[i];
    const e = expected[i];
    if (floating) {
      if (Number.isNaN(a) && Number.isNaN(e)) continue;
      if (!(Math.abs(a - e) <= 1e-6 + 1e-4 * Math.abs(e))) return false;
    } else if (a !== e) {
      return false;
    }
  }
  return true;
}

function call(client, method, request) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + 60 * 1000);
    client[method](request, {deadline}, (err, response) => {
      if (err) {
        reject(new Error(`${method}: ${err.code} ${err.details}`));
      } else {
        resolve(response);
      }
    });
  });
}

async function runCase(client, onnx, dir) {
  const name = path.basename(dir);
  const modelBytes = fs.readFileSync(path.join(dir, 'model.onnx'));
  const ModelProto = onnx.lookupType('onnx.ModelProto');
  const model = ModelProto.toObject(ModelProto.decode(modelBytes),
                                    {defaults: true});
  const initializers = new Set(model.graph.initializer.map((t) => t.name));
  const inputNames = model.graph.input.map((v) => v.name)
                         .filter((n) => !initializers.has(n));
  const outputNames = model.graph.output.map((v) => v.name);
  const data = path.join(dir, 'test_data_set_0');
  const inputs = inputNames.map((n, i) => Object.assign(
      tensorFromOnnx(onnx, fs.readFileSync(path.join(data, `input_${i}.pb`))),
      {name: n}));
  const expected = outputNames.map((n, i) => Object.assign(
      tensorFromOnnx(onnx, fs.readFileSync(path.join(data, `output_${i}.pb`))),
      {name: n}));

  await call(client, 'RepositoryModelLoad', {
    model_name: name,
    parameters: {
      'file:1/model.onnx': {bytes_param: modelBytes},
      'config': {string_param: JSON.stringify({name})},
    },
  });
  console.log(`ok RepositoryModelLoad ${name}`);
  const ready = await call(client, 'ModelReady', {name, version: '1'});
  check(ready.ready, `${name} is ready`);
  const meta = await call(client, 'ModelMetadata', {name});
  check(meta.platform === 'glint_onnx', `platform ${meta.platform}`);
  check(meta.inputs.length === inputs.length, 'metadata lists every input');
  inputs.forEach((t, i) => {
    check(meta.inputs[i].name === t.name, `input ${i} is ${t.name}`);
    check(meta.inputs[i].datatype === t.type.oip,
          `${t.name} is ${t.type.oip}, not ${meta.inputs[i].datatype}`);
    check(meta.inputs[i].shape.map(Number).join() === t.dims.join(),
          `${t.name} has shape [${t.dims}]`);
  });
  console.log(`ok ModelMetadata ${name}`);

  for (const typed of [false, true]) {
    const way = typed ? 'typed' : 'raw';
    if (typed && inputs.some((t) => t.type.field === null)) continue;
    const request = {
      model_name: name,
      id: `node-${way}`,
      inputs: inputs.map((t) => {
        const input = {name: t.name, datatype: t.type.oip, shape: t.dims};
        if (typed) {
          input.contents = {[t.type.field]: values(t.type, t.raw)};
        }
        return input;
      }),
      outputs: expected.map((t) => ({name: t.name})),
    };
    if (!typed) request.raw_input_contents = inputs.map((t) => t.raw);
    const reply = await call(client, 'ModelInfer', request);
    check(reply.id === request.id, `id ${reply.id} echoed`);
    check(reply.outputs.length === expected.length, 'every output answered');
    check(reply.raw_output_contents.length === expected.length,
          'outputs travel in raw_output_contents');
    expected.forEach((e, i) => {
      const out = reply.outputs[i];
      check(out.name === e.name, `output ${i} is ${e.name}`);
      check(out.datatype === e.type.oip, `${e.name} is ${e.type.oip}`);
      check(out.shape.map(Number).join() === e.dims.join(),
            `${e.name} has shape [${e.dims}], not [${out.shape}]`);
      const type = datatypeByOip(out.datatype);
      check(sameValues(type, values(type, reply.raw_output_contents[i]),
                       values(e.type, e.raw)),
            `${name} ${way}: ${e.name} equals the expected output`);
    });
    console.log(`ok ModelInfer ${way} ${name}: ${expected.length} output(s) ` +
                `equal the expected`);
  }

  const stats = await call(client, 'ModelStatistics', {name});
  check(stats.model_stats.length === 1, 'statistics of one model');
  const success = Number(stats.model_stats[0].inference_stats.success.count);
  check(success >= 1, `${success} successful inferences counted`);
  console.log(`ok ModelStatistics ${name}: ${success} successes`);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const definition = protoLoader.loadSync(
      path.join(args.protos, 'grpc_service.proto'), {
        keepCase: true,
        longs: String,
        enums: String,
        bytes: Buffer,
        defaults: true,
        oneofs: true,
        includeDirs: [args.protos],
      });
  const inference = grpc.loadPackageDefinition(definition).inference;
  const client = new inference.GRPCInferenceService(
      args.address, grpc.credentials.createInsecure());
  const onnx = protobuf.loadSync(args.onnx_proto);

  const live = await call(client, 'ServerLive', {});
  check(live.live, 'server is live');
  const ready = await call(client, 'ServerReady', {});
  check(ready.ready, 'server is ready');
  const server = await call(client, 'ServerMetadata', {});
  check(server.name === 'glint', `server is ${server.name}`);
  console.log(`ok ServerLive, ServerReady, ServerMetadata (${server.name} ` +
              `${server.version})`);
  for (const dir of args.cases) await runCase(client, onnx, dir);
  client.close();
  console.log(`node client: all checks passed for ${args.cases.length} case(s)`);
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
