#!/usr/bin/env node
// A long-lived ONNX Runtime (CPU) worker for scripts/difftest: node's start-up
// (~0.3 s) would otherwise cost more than running a small graph.
//
// Reads one JSON request per line on stdin:
//   {"model": PATH, "threads": 1, "inputs": {NAME: {"dims": [...], "data": BASE64}}}
// (data: little-endian float32) and writes one JSON line per request:
//   {"outputs": {NAME: {"dims": [...], "data": BASE64}}}   or   {"error": MESSAGE}
// Comparison is left to the caller, so it uses one measure for every peer.
'use strict';

const readline = require('readline');
const ort = require('onnxruntime-node');

function toTensor(spec) {
  const bytes = Buffer.from(spec.data, 'base64');
  const data = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor('float32', data, spec.dims);
}

function fromTensor(t) {
  if (t.type !== 'float32') throw new Error(`output of type ${t.type}`);
  const buf = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  return { dims: t.dims.map(Number), data: buf.toString('base64') };
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
