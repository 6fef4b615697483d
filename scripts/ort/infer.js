#!/usr/bin/env node
// Writes ONNX Runtime's (CPU) outputs of one model as reference outputs, in
// the ONNX backend-test layout (scripts/export_zoo.py's references).
//
//   node scripts/ort/infer.js MODEL.onnx DIR [--threads 1] [--optimization all|extended|basic|disabled]
//       Runs MODEL on DIR's input_N.pb and writes DIR/output_N.pb, one
//       serialized onnx.TensorProto per model output, in the model's output
//       order, named after the output. Prints each output's shape and type.
//       --optimization: ONNX Runtime's graph optimization level (default
//       all); disabled runs the model's nodes as they are (compare.js, load).
//
// Exit status: 0 written; 1 the model failed to run; 2 usage error, or a file
// that cannot be read or loaded.
'use strict';

const fs = require('fs');
const path = require('path');
const { onnx } = require('onnx-proto');
const { UsageError, readTestData, load, run, TYPES } = require('./compare.js');

function toProto(name, tensor) {
  const entry = Object.entries(TYPES).find(([, t]) => t.ort === tensor.type);
  if (!entry) throw new Error(`output ${name}: unsupported type ${tensor.type}`);
  const data = tensor.data;
  return onnx.TensorProto.create({
    name,
    dims: tensor.dims.map(Number),
    dataType: Number(entry[0]),
    // Little-endian raw bytes, as numpy_helper.from_array writes them.
    rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  });
}

async function main() {
  const argv = process.argv.slice(2);
  let threads = 1;
  let level = 'all';
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--threads' && i + 1 < argv.length) threads = Number(argv[++i]);
    else if (argv[i] === '--optimization' && i + 1 < argv.length) level = argv[++i];
    else if (argv[i].startsWith('--')) throw new UsageError(`unknown option ${argv[i]}`);
    else files.push(argv[i]);
  }
  if (files.length !== 2 || !(threads > 0) || !['all', 'extended', 'basic', 'disabled'].includes(level))
    throw new UsageError('usage: node infer.js MODEL.onnx DIR [--threads 1] [--optimization all|extended|basic|disabled]');
  const [modelFile, dir] = files;
  const session = await load(modelFile, threads, level);
  const feeds = readTestData(dir, 'input', session.inputNames);
  const outputs = await run(session, feeds, modelFile);
  session.outputNames.forEach((name, n) => {
    const tensor = outputs[name];
    const bytes = onnx.TensorProto.encode(toProto(name, tensor)).finish();
    fs.writeFileSync(path.join(dir, `output_${n}.pb`), bytes);
    console.log(`output_${n}.pb  ${name}  ${tensor.type} [${tensor.dims}]`);
  });
}

main().catch((e) => {
  console.error(`infer: ${e.message}`);
  process.exitCode = e instanceof UsageError ? 2 : 1;
});
