// Runs one ONNX model through ONNX Runtime (onnxruntime-node) for
// ort_compare: the input is filled with the same deterministic pattern
// Glint's side uses, the output is written as raw float32 to OUT, and the
// latency of each of ITERS runs (after warm-up) is printed as "ms <value>".
//
//   node bench/ort_run.js MODEL DIMS(comma-separated) ITERS THREADS OUT
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, dimsArg, itersArg, threadsArg, out] = process.argv.slice(2);
  const dims = dimsArg.split(',').map(Number);
  const iters = Number(itersArg);
  const threads = Number(threadsArg);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  // Must match InputValue() in ort_compare.cc.
  for (let i = 0; i < n; ++i) data[i] = ((i * 7919) % 1000) / 1000 - 0.5;
  const feeds = {input: new ort.Tensor('float32', data, dims)};
  let result;
  for (let i = 0; i < 3; ++i) result = await session.run(feeds);
  const times = [];
  for (let i = 0; i < iters; ++i) {
    const t0 = process.hrtime.bigint();
    result = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const y = result.output.data;
  fs.writeFileSync(out, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  for (const t of times) console.log(`ms ${t}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
