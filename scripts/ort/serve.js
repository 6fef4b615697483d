#!/usr/bin/env node
// A long-lived ONNX Runtime (CPU) worker for scripts/difftest: node's start-up
// (~0.3 s) would otherwise cost more than running a small graph.
//
// Reads one JSON request per line on stdin:
//   {"model": PATH, "threads": 1, "inputs": {NAME: {"dims": [...], "type": T, "data": BASE64}}}
// (data: the little-endian bytes of ORT type T: float32 (the default),
// float16 (bit patterns), float64, int64, int32, int8, uint8, bool (one byte
// each)) and writes one JSON line per request:
//   {"outputs": {NAME: {"dims": [...], "type": T, "data": BASE64}}}   or   {"error": MESSAGE}
// Comparison is left to the caller, so it uses one measure for every peer.
'use strict';

const readline = require('readline');
const ort = require('onnxruntime-node');

// The typed array ORT takes and gives for each tensor type.
const ARRAYS = {
  float32: Float32Array, float16: Uint16Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, int8: Int8Array, uint8: Uint8Array, bool: Uint8Array,
};

function toTensor(spec) {
  const type = spec.type || 'float32';
  const Array = ARRAYS[type];
  if (!Array) throw new Error(`input of type ${type}`);
  const bytes = Buffer.from(spec.data, 'base64');
  // A copy: the decoded buffer may start at an offset the typed array cannot take.
  const data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(type, data, spec.dims);
}

function fromTensor(t) {
  if (!ARRAYS[t.type]) throw new Error(`output of type ${t.type}`);
  const buf = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  return { dims: t.dims.map(Number), type: t.type, data: buf.toString('base64') };
}

async function handle(req) {
  const session = await ort.InferenceSession.create(req.model, {
    graphOptimizationLevel: req.optimize === false ? 'disabled' : 'all',
    intraOpNumThreads: req.threads || 1,
    logSeverityLevel: 3,
  });
  const feeds = {};
  for (const name of session.inputNames) feeds[name] = toTensor(req.inputs[name]);
  const result = await session.run(feeds);
  const outputs = {};
  for (const name of session.outputNames) outputs[name] = fromTensor(result[name]);
  return { outputs };
}

const rl = readline.createInterface({ input: process.stdin, terminal: false });
// Requests are answered strictly in order: one at a time.
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let reply;
    try {
      reply = await handle(JSON.parse(line));
    } catch (e) {
      reply = { error: String(e && e.message ? e.message : e).split('\n')[0] };
    }
    process.stdout.write(JSON.stringify(reply) + '\n');
  });
});
