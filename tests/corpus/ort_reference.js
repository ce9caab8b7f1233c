#!/usr/bin/env node
// Reference outputs for the corpus from ONNX Runtime's CPU provider.
//
//   node tests/corpus/ort_reference.js MANIFEST_DIR [--models a,b] [--time ITERS] [--threads N]
//
// Reads MANIFEST_DIR/manifest.json (written by export_models.py and
// make_opset_graphs.py). For each model with a file: loads NAME.onnx, feeds
// NAME/input_K.npy to the graph's inputs in order, runs once and writes
// NAME/ort_output_K.npy for each output in the model's order. Prints one line
// per model: "NAME ok", "NAME ort_error: ..." or "NAME skipped: ..." (an
// entry the manifest records as not exported or dropped, with its reason).
// Entries with "shape_sets" (a model with dynamic axes) run the same way in
// NAME/shape_S for S = 1..count, on the same session.
// With --time ITERS, also runs ITERS more times and prints
// "NAME ort_ms_p50 X". Writes MANIFEST_DIR/ort_reference.json: the ORT
// version and, per model, status, error, output names/dtypes/shapes, p50.
// Exits 1 when any model fails in ORT (or an input is missing), 2 on usage.
//
// Sessions: intraOpNumThreads = --threads (default 2), interOpNumThreads 1,
// executionMode sequential, all graph optimizations, CPU provider only.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// ---------------------------------------------------------------- .npy I/O

// descr -> [ORT type, TypedArray, bytes per element]
const NPY_TYPES = {
  '<f4': ['float32', Float32Array, 4],
  '<f8': ['float64', Float64Array, 8],
  '<f2': ['float16', Uint16Array, 2],
  '<i8': ['int64', BigInt64Array, 8],
  '<u8': ['uint64', BigUint64Array, 8],
  '<i4': ['int32', Int32Array, 4],
  '<u4': ['uint32', Uint32Array, 4],
  '<i2': ['int16', Int16Array, 2],
  '<u2': ['uint16', Uint16Array, 2],
  '|i1': ['int8', Int8Array, 1],
  '|u1': ['uint8', Uint8Array, 1],
  '|b1': ['bool', Uint8Array, 1],
};
const ORT_TO_DESCR = {};
for (const [descr, [type]] of Object.entries(NPY_TYPES)) ORT_TO_DESCR[type] = descr;

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf[6];
  let headerLen, start;
  if (major === 1) {
    headerLen = buf.readUInt16LE(8);
    start = 10;
  } else {
    headerLen = buf.readUInt32LE(8);
    start = 12;
  }
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${file}: bad header ${header}`);
  if (fortran[1] === 'True') throw new Error(`${file}: fortran_order is not supported`);
  let d = descr[1];
  if (d === '=f4' || d === '<f4') d = '<f4';
  const t = NPY_TYPES[d];
  if (!t) throw new Error(`${file}: dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length)
    .map((s) => Number(s));
  const count = dims.reduce((a, b) => a * b, 1);
  const offset = start + headerLen;
  if (buf.length - offset !== count * t[2]) {
    throw new Error(`${file}: ${buf.length - offset} data bytes, want ${count * t[2]}`);
  }
  // Copy into an aligned buffer of its own.
  const bytes = new Uint8Array(count * t[2]);
  buf.copy(bytes, 0, offset);
  let data = new t[1](bytes.buffer, 0, count);
  if (t[0] === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return { type: t[0], dims, data };
}

function writeNpy(file, type, dims, data) {
  const descr = ORT_TO_DESCR[type];
  if (!descr) throw new Error(`cannot write dtype ${type} to .npy`);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (type === 'bool') {
    body = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  } else {
    body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  }
  // Written beside and renamed: a reader never sees a partial file.
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
  fs.renameSync(tmp, file);
}

// Removes NAME/ort_output_K.npy for K >= keep (all with keep 0): stale
// outputs of an earlier run must not pass for this one's.
function removeStaleOutputs(dir, keep) {
  if (!fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir)) {
    const m = /^ort_output_(\d+)\.npy$/.exec(f);
    if (m && Number(m[1]) >= keep) fs.unlinkSync(path.join(dir, f));
  }
}

// ---------------------------------------------------------------- main

function usage(msg) {
  if (msg) console.error(`ort_reference: ${msg}`);
  console.error('usage: node ort_reference.js MANIFEST_DIR [--models a,b] [--time ITERS] [--threads N]');
  process.exit(2);
}

function parseArgs(argv) {
  const a = { dir: null, models: null, time: 0, threads: 2 };
  for (let i = 0; i < argv.length; i++) {
    const s = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${s} needs a value`);
      return argv[++i];
    };
    if (s === '--models') a.models = value().split(',').filter((x) => x);
    else if (s === '--time') a.time = Number(value());
    else if (s === '--threads') a.threads = Number(value());
    else if (s === '-h' || s === '--help') usage();
    else if (s.startsWith('--')) usage(`unknown flag ${s}`);
    else if (a.dir === null) a.dir = s;
    else usage(`extra argument ${s}`);
  }
  if (a.dir === null) usage('MANIFEST_DIR is required');
  if (!Number.isInteger(a.time) || a.time < 0) usage('--time wants an integer >= 0');
  if (!Number.isInteger(a.threads) || a.threads < 1) usage('--threads wants an integer >= 1');
  return a;
}

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

async function runModel(dir, entry, args) {
  const sessionOptions = {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const session = await ort.InferenceSession.create(path.join(dir, entry.file), sessionOptions);
  // Runs the inputs in `sub` (NAME, or NAME/shape_S for the S-th other
  // shape of a model with dynamic axes) and writes the outputs beside them.
  const runIn = async (sub) => {
    const feeds = {};
    session.inputNames.forEach((name, k) => {
      const t = readNpy(path.join(sub, `input_${k}.npy`));
      feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
    });
    const results = await session.run(feeds);
    const outputs = [];
    session.outputNames.forEach((name, k) => {
      const t = results[name];
      writeNpy(path.join(sub, `ort_output_${k}.npy`), t.type, t.dims, t.data);
      outputs.push({ name, dtype: t.type, shape: Array.from(t.dims) });
    });
    removeStaleOutputs(sub, outputs.length);
    return { feeds, outputs };
  };
  const { feeds, outputs } = await runIn(path.join(dir, entry.name));
  for (let s = 1; s <= (entry.shape_sets || []).length; s++) {
    await runIn(path.join(dir, entry.name, `shape_${s}`));
  }
  let p50 = null;
  if (args.time > 0) {
    const ms = [];
    for (let i = 0; i < args.time; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    ms.sort((x, y) => x - y);
    p50 = percentile(ms, 50);
  }
  await session.release();
  return { outputs, p50 };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const manifest = JSON.parse(fs.readFileSync(path.join(args.dir, 'manifest.json'), 'utf8'));
  let entries = manifest.models;
  if (args.models) {
    const byName = new Map(entries.map((e) => [e.name, e]));
    const unknown = args.models.filter((m) => !byName.has(m));
    if (unknown.length) usage(`not in the manifest: ${unknown.join(',')}`);
    entries = args.models.map((m) => byName.get(m));
  }
  ort.env.logLevel = 'error';
  const summaryFile = path.join(args.dir, 'ort_reference.json');
  const summary = { models: {} };
  let failed = 0;
  for (const entry of entries) {
    const name = entry.name;
    const reason = entry.export_error ? `export_error: ${entry.export_error}`
      : entry.dropped ? `dropped: ${entry.dropped}` : !entry.file ? 'no file' : null;
    if (reason) {
      removeStaleOutputs(path.join(args.dir, name), 0);
      console.log(`${name} skipped: ${reason}`);
      summary.models[name] = { status: 'skipped', reason };
      continue;
    }
    const t0 = Date.now();
    try {
      const r = await runModel(args.dir, entry, args);
      console.log(`${name} ok`);
      if (r.p50 !== null) console.log(`${name} ort_ms_p50 ${r.p50.toFixed(3)}`);
      summary.models[name] = {
        status: 'ok', outputs: r.outputs, ort_ms_p50: r.p50, wall_s: (Date.now() - t0) / 1000,
      };
    } catch (e) {
      const msg = String(e && e.message ? e.message : e).replace(/\s+/g, ' ').trim();
      removeStaleOutputs(path.join(args.dir, name), 0);
      console.log(`${name} ort_error: ${msg}`);
      summary.models[name] = { status: 'ort_error', error: msg };
      failed++;
    }
  }
  // Merged into the file as it is now (entries of other models kept).
  let all = { models: {} };
  if (fs.existsSync(summaryFile)) {
    try {
      all = JSON.parse(fs.readFileSync(summaryFile, 'utf8'));
    } catch (e) {
      all = { models: {} };
    }
  }
  all.onnxruntime = ort.env.versions.node || ort.env.versions.common;
  all.threads = args.threads;
  Object.assign(all.models, summary.models);
  const tmp = `${summaryFile}.tmp${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(all, null, 1) + '\n');
  fs.renameSync(tmp, summaryFile);
  process.exit(failed ? 1 : 0);
}

module.exports = { readNpy, writeNpy };

if (require.main === module) {
  main().catch((e) => {
    console.error(`ort_reference: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
