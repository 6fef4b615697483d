#!/usr/bin/env node
// Runs a sequence of calls of one model in one ONNX Runtime (CPU) session and
// times it: ONNX Runtime's side of scripts/bench_dynamic.py
// (scripts/bench.sh --dynamic), whose header describes the workloads.
//
//   node scripts/ort/sequence.js WORKLOAD_DIR [--threads 1] [--dump DIR]
//
// WORKLOAD_DIR/workload.json (written by bench_dynamic.py):
//   {"model": PATH,
//    "feedback": {OUTPUT: INPUT, ...},        each call's OUTPUT is the next call's INPUT
//    "calls": [{"inputs": {NAME: {"file": F, "dims": [...], "type": T}}}, ...]}
// F: the raw little-endian values of ORT type T (float32 or int64), in
// WORKLOAD_DIR. A call names every input the feedback does not give it (the
// first call: all of them).
//
// Prints one JSON line: create_ms (InferenceSession.create, graph
// optimizations "all"), call_ms (each run), rss_before_kb (before create),
// peak_rss_kb and rss_kb (VmHWM and VmRSS at the end), shapes (per call:
// {OUTPUT: dims}). --dump DIR: every call's outputs, DIR/call_N_OUTPUT.bin
// (raw values), written outside the timed region.
//
// Exit status: 0 done; 1 a call failed; 2 usage error, or a file that cannot
// be read or loaded.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { UsageError, load, run } = require('./compare.js');

const ARRAYS = { float32: Float32Array, int64: BigInt64Array };

function status(field) {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : null;
}

function readInput(dir, spec) {
  const Array = ARRAYS[spec.type];
  if (!Array) throw new UsageError(`input type ${spec.type}`);
  const bytes = fs.readFileSync(path.join(dir, spec.file));
  // A copy: the file's buffer may start at an offset the typed array cannot take.
  const data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  return new ort.Tensor(spec.type, data, spec.dims);
}

async function main() {
  const argv = process.argv.slice(2);
  let threads = 1;
  let dump = null;
  const dirs = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--threads' && i + 1 < argv.length) threads = Number(argv[++i]);
    else if (argv[i] === '--dump' && i + 1 < argv.length) dump = argv[++i];
    else if (argv[i].startsWith('--')) throw new UsageError(`unknown option ${argv[i]}`);
    else dirs.push(argv[i]);
  }
  if (dirs.length !== 1 || !(Number.isInteger(threads) && threads > 0)) {
    throw new UsageError('usage: node sequence.js WORKLOAD_DIR [--threads 1] [--dump DIR]');
  }
  const dir = dirs[0];
  let workload;
  try {
    workload = JSON.parse(fs.readFileSync(path.join(dir, 'workload.json'), 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read ${path.join(dir, 'workload.json')}: ${e.message}`);
  }
  // Every call's own inputs are read before the clock starts.
  const given = workload.calls.map((call) => {
    const feeds = {};
    for (const [name, spec] of Object.entries(call.inputs)) feeds[name] = readInput(dir, spec);
    return feeds;
  });
  const rssBefore = status('VmRSS');
  let start = process.hrtime.bigint();
  const session = await load(workload.model, threads);
  const createMs = Number(process.hrtime.bigint() - start) / 1e6;
  const callMs = [];
  const shapes = [];
  let carried = {};
  for (let n = 0; n < given.length; n++) {
    const feeds = { ...carried, ...given[n] };
    start = process.hrtime.bigint();
    const outputs = await run(session, feeds, workload.model);
    callMs.push(Number(process.hrtime.bigint() - start) / 1e6);
    const shape = {};
    for (const name of session.outputNames) {
      const t = outputs[name];
      shape[name] = t.dims.map(Number);
      if (dump) fs.writeFileSync(path.join(dump, `call_${n}_${name}.bin`), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    }
    shapes.push(shape);
    carried = {};
    for (const [output, input] of Object.entries(workload.feedback || {})) carried[input] = outputs[output];
  }
  console.log(JSON.stringify({
    create_ms: createMs, call_ms: callMs, rss_before_kb: rssBefore,
    peak_rss_kb: status('VmHWM'), rss_kb: status('VmRSS'), shapes,
  }));
}

main().catch((e) => {
  console.error(`sequence: ${e.message}`);
  process.exitCode = e instanceof UsageError ? 2 : 1;
});
