#!/usr/bin/env node
// Numerical check of ONNX models with ONNX Runtime (CPU) as the peer.
//
//   node scripts/ort/compare.js REFERENCE.onnx CANDIDATE.onnx [--inputs DIR] [--rtol 1e-5] [--threads 1]
//       Runs both models on the same inputs and compares every output by name.
//   node scripts/ort/compare.js MODEL.onnx --expect DIR [--inputs DIR] [--rtol 1e-5] [--threads 1]
//       Runs one model on DIR's input_N.pb (or --inputs DIR's) and compares
//       with DIR's output_N.pb (the ONNX backend-test layout written by
//       scripts/export_models.py).
//   node scripts/ort/compare.js --time MODEL.onnx [--threads 1] [--iterations 20] [--dim NAME=SIZE ...]
//       Prints the median, min and max latency of one model.
//
// --dim NAME=SIZE (repeatable) gives the symbolic dim NAME that size in the
// generated inputs (scripts/bench_session.py times batches this way).
//
// Inputs: DIR's input_N.pb (serialized onnx.TensorProto; N-th model input, or
// the input whose name the tensor carries) when given; otherwise deterministic
// pseudo-random values of the declared shape, symbolic dims set to 1 (or --dim's size)
// (generateInputs: floats in [-1, 1), integers 0-3, bools).
//
// Relative difference of one output: max|ref - cand| / max|ref| over the
// whole tensor. Per-element |a-b|/|a| explodes wherever the reference crosses
// zero (a single logit near 0 would fail any fused model); scaling by the
// tensor's largest magnitude asks instead "how large is the worst error next
// to the values this tensor carries", which is what float re-association in a
// fused kernel perturbs. A reference of all zeros passes only an exact match.
// NaN must match NaN at the same place; a shape, type or name mismatch fails.
//
// Exit status: 0 all outputs within rtol; 1 some output is not, or a model
// failed to run; 2 usage error, or a file that cannot be read or loaded.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');
const { onnx } = require('onnx-proto');

const USAGE = `usage: node compare.js REFERENCE.onnx CANDIDATE.onnx [--inputs DIR] [--rtol 1e-5] [--threads 1]
       node compare.js MODEL.onnx --expect DIR [--inputs DIR] [--rtol 1e-5] [--threads 1]
       node compare.js --time MODEL.onnx [--threads 1] [--iterations 20] [--dim NAME=SIZE ...]`;

// Bad command lines and unreadable files: exit status 2, not a verdict.
class UsageError extends Error {}

function parseArgs(argv) {
  const opts = { files: [], inputs: null, expect: null, rtol: 1e-5, threads: 1, time: false, iterations: 20, dims: {} };
  const fail = (message) => {
    throw new UsageError(`${message}\n${USAGE}`);
  };
  const value = (i, flag) => {
    if (i + 1 >= argv.length) fail(`${flag} needs a value`);
    return argv[i + 1];
  };
  const number = (text, flag, isValid) => {
    const n = Number(text);
    if (!isValid(n)) fail(`bad value for ${flag}: ${text}`);
    return n;
  };
  const positiveInt = (n) => Number.isInteger(n) && n > 0;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    switch (arg) {
      case '--inputs': opts.inputs = value(i++, arg); break;
      case '--expect': opts.expect = value(i++, arg); break;
      case '--rtol': opts.rtol = number(value(i++, arg), arg, (n) => n >= 0); break;
      case '--threads': opts.threads = number(value(i++, arg), arg, positiveInt); break;
      case '--iterations': opts.iterations = number(value(i++, arg), arg, positiveInt); break;
      case '--time': opts.time = true; break;
      case '--dim': {
        const m = /^([^=]+)=([1-9][0-9]*)$/.exec(value(i++, arg));
        if (!m) fail(`--dim takes NAME=SIZE, got ${argv[i]}`);
        opts.dims[m[1]] = Number(m[2]);
        break;
      }
      case '-h': case '--help': opts.help = true; break;
      default:
        if (arg.startsWith('--')) fail(`unknown option ${arg}`);
        opts.files.push(arg);
    }
  }
  if (opts.help) return opts;
  const wanted = opts.time || opts.expect ? 1 : 2;
  if (opts.files.length !== wanted) fail(`expected ${wanted} model file(s), got ${opts.files.length}`);
  if (opts.time && opts.expect) fail('--time and --expect do not go together');
  return opts;
}

// --- TensorProto <-> ort.Tensor --------------------------------------------

const T = onnx.TensorProto.DataType;
// Per ONNX type: ORT's type name, the typed array ORT uses for it, and the
// repeated TensorProto field that holds the values when raw_data is empty.
const TYPES = {
  [T.FLOAT]: { ort: 'float32', array: Float32Array, field: 'floatData' },
  [T.DOUBLE]: { ort: 'float64', array: Float64Array, field: 'doubleData' },
  [T.FLOAT16]: { ort: 'float16', array: Uint16Array, field: 'int32Data' }, // bit patterns
  [T.INT32]: { ort: 'int32', array: Int32Array, field: 'int32Data' },
  [T.INT64]: { ort: 'int64', array: BigInt64Array, field: 'int64Data' },
  [T.INT8]: { ort: 'int8', array: Int8Array, field: 'int32Data' },
  [T.UINT8]: { ort: 'uint8', array: Uint8Array, field: 'int32Data' },
  [T.BOOL]: { ort: 'bool', array: Uint8Array, field: 'int32Data' },
};

function readTensor(file) {
  let proto;
  try {
    proto = onnx.TensorProto.decode(fs.readFileSync(file));
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${e.message}`);
  }
  const type = TYPES[proto.dataType];
  if (!type) throw new UsageError(`${file}: unsupported tensor data type ${proto.dataType}`);
  if (proto.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) {
    throw new UsageError(`${file}: external tensor data is not supported`);
  }
  const dims = proto.dims.map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (proto.rawData && proto.rawData.length) {
    // Copy: the decoded bytes are a view at an arbitrary offset, and typed
    // arrays need their element alignment. (raw_data is little-endian, as is
    // every machine this runs on.)
    const bytes = Uint8Array.from(proto.rawData);
    data = new type.array(bytes.buffer, 0, bytes.length / type.array.BYTES_PER_ELEMENT);
  } else if (type.array === BigInt64Array) {
    data = BigInt64Array.from(proto[type.field], (v) => BigInt(v.toString()));
  } else {
    data = type.array.from(proto[type.field]);
  }
  if (data.length !== count) {
    throw new UsageError(`${file}: ${data.length} values for shape [${dims}]`);
  }
  return { name: proto.name, tensor: new ort.Tensor(type.ort, data, dims) };
}

// Test-data files are numbered; the N-th belongs to the N-th model input or
// output, unless the tensor names one that exists (old backend tests count
// initializers as inputs, so names are the safer key when present).
function readTestData(dir, prefix, names) {
  if (!fs.existsSync(dir)) throw new UsageError(`no such folder ${dir}`);
  const result = {};
  for (let n = 0; ; n++) {
    const file = path.join(dir, `${prefix}_${n}.pb`);
    if (!fs.existsSync(file)) break;
    const { name, tensor } = readTensor(file);
    const key = names.includes(name) ? name : names[n];
    if (key === undefined) throw new UsageError(`${file}: the model has only ${names.length} ${prefix}s`);
    result[key] = tensor;
  }
  const missing = names.filter((name) => !(name in result));
  if (missing.length) throw new UsageError(`${dir}: no ${prefix} file for ${missing.join(', ')}`);
  return result;
}

// mulberry32: a tiny seeded generator, so generated inputs are identical on
// every run and for both models.
function random(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Inputs as RandomInputs (include/onnxfuse/tensor_io.h) draws them: floats
// uniform in [-1, 1) (float16: that value rounded to half), integers
// floor(4u), bools u < 0.5, u from mulberry32 seeded with the input's index + 1.
function generateInputs(session, modelFile, dims = {}) {
  const feeds = {};
  session.inputNames.forEach((name, index) => {
    const meta = (session.inputMetadata || []).find((m) => m.name === name);
    if (!meta || !meta.isTensor || !(meta.type in GENERATED)) {
      throw new UsageError(`${modelFile}: input ${name} is not a tensor of a generated type; give --inputs DIR`);
    }
    const shape = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : dims[d] || 1));
    const next = random(index + 1);
    const count = shape.reduce((a, b) => a * b, 1);
    const data = new GENERATED[meta.type].array(count);
    for (let i = 0; i < count; i++) data[i] = GENERATED[meta.type].value(next());
    feeds[name] = new ort.Tensor(meta.type, data, shape);
  });
  return feeds;
}

const GENERATED = {
  float32: { array: Float32Array, value: (u) => u * 2 - 1 },
  float64: { array: Float64Array, value: (u) => Math.fround(u * 2 - 1) },
  float16: { array: Uint16Array, value: (u) => floatToHalf(Math.fround(u * 2 - 1)) },
  int64: { array: BigInt64Array, value: (u) => BigInt(Math.floor(u * 4)) },
  int32: { array: Int32Array, value: (u) => Math.floor(u * 4) },
  int8: { array: Int8Array, value: (u) => Math.floor(u * 4) },
  uint8: { array: Uint8Array, value: (u) => Math.floor(u * 4) },
  bool: { array: Uint8Array, value: (u) => (u < 0.5 ? 1 : 0) },
};

// IEEE 754 binary16 bits of a float32 value, rounded to nearest, ties to even
// (as FloatToHalf in src/ir/tensor_values.cc).
function floatToHalf(value) {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e;
    let half = full >>> shift;
    const rest = full & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1))) half++;
  return sign | half;
}

// --- running and comparing --------------------------------------------------

// `level`: ONNX Runtime's graph optimization level. 'all' (the default) is
// how users run it; 'disabled' runs every node as the model states it (a
// QDQ model's QuantizeLinear and DequantizeLinear as such, around float
// convolutions, instead of fused into int8 kernels).
async function load(file, threads, level = 'all') {
  if (!fs.existsSync(file)) throw new UsageError(`no such file ${file}`);
  try {
    return await ort.InferenceSession.create(file, { graphOptimizationLevel: level, intraOpNumThreads: threads });
  } catch (e) {
    throw new UsageError(`cannot load ${file}: ${firstLine(e.message)}`);
  }
}

async function run(session, feeds, file) {
  try {
    return await session.run(feeds);
  } catch (e) {
    throw new Error(`${file} failed to run: ${firstLine(e.message)}`);
  }
}

function firstLine(text) {
  return String(text).split('\n')[0];
}

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function asNumbers(tensor) {
  if (tensor.type === 'float16' && tensor.data instanceof Uint16Array) return Array.from(tensor.data, halfToFloat);
  return Array.from(tensor.data, Number);
}

// Returns { maxAbs, rel, problem } for one output; problem is a reason the
// tensors cannot be compared at all.
function difference(ref, cand) {
  if (ref.type !== cand.type) return { problem: `type ${ref.type} vs ${cand.type}` };
  if (ref.dims.join() !== cand.dims.join()) return { problem: `shape [${ref.dims}] vs [${cand.dims}]` };
  const a = asNumbers(ref);
  const b = asNumbers(cand);
  let maxAbs = 0;
  let maxRef = 0;
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]) || Number.isNaN(b[i])) {
      if (Number.isNaN(a[i]) !== Number.isNaN(b[i])) maxAbs = Infinity;
      continue;
    }
    // Infinities must match exactly; otherwise their difference is NaN/Inf.
    const d = a[i] === b[i] ? 0 : Math.abs(a[i] - b[i]);
    maxAbs = Math.max(maxAbs, Number.isNaN(d) ? Infinity : d);
    if (Number.isFinite(a[i])) maxRef = Math.max(maxRef, Math.abs(a[i]));
  }
  const rel = maxAbs === 0 ? 0 : maxRef === 0 ? Infinity : maxAbs / maxRef;
  return { maxAbs, rel };
}

function report(expected, actual, rtol) {
  let ok = true;
  for (const name of Object.keys(expected)) {
    const cand = actual[name];
    const { maxAbs, rel, problem } = cand ? difference(expected[name], cand) : { problem: 'missing from candidate' };
    const pass = !problem && rel <= rtol;
    ok = ok && pass;
    const detail = problem || `shape [${expected[name].dims}]  max_abs ${maxAbs.toExponential(3)}  max_rel ${rel.toExponential(3)}`;
    console.log(`${pass ? 'ok  ' : 'FAIL'}  ${name}  ${detail}`);
  }
  const extra = Object.keys(actual).filter((name) => !(name in expected));
  if (extra.length) console.log(`note: candidate outputs not in the reference: ${extra.join(', ')}`);
  console.log(`${ok ? 'PASS' : 'FAIL'} (rtol ${rtol})`);
  return ok;
}

async function time(opts) {
  const file = opts.files[0];
  const session = await load(file, opts.threads);
  const feeds = generateInputs(session, file, opts.dims);
  // Warm-up runs let ORT allocate its arenas and fault in the weights.
  for (let i = 0; i < 3; i++) await run(session, feeds, file);
  const ms = [];
  for (let i = 0; i < opts.iterations; i++) {
    const start = process.hrtime.bigint();
    await run(session, feeds, file);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ms.sort((x, y) => x - y);
  const median = ms[Math.floor(ms.length / 2)];
  console.log(`${file}  threads ${opts.threads}  median ${median.toFixed(3)} ms  min ${ms[0].toFixed(3)}  max ${ms[ms.length - 1].toFixed(3)}  (${ms.length} runs)`);
  return true;
}

async function compare(opts) {
  if (opts.expect) {
    const file = opts.files[0];
    const session = await load(file, opts.threads);
    const feeds = readTestData(opts.inputs || opts.expect, 'input', session.inputNames);
    const expected = readTestData(opts.expect, 'output', session.outputNames);
    return report(expected, await run(session, feeds, file), opts.rtol);
  }
  const [refFile, candFile] = opts.files;
  const ref = await load(refFile, opts.threads);
  const cand = await load(candFile, opts.threads);
  const feeds = opts.inputs ? readTestData(opts.inputs, 'input', ref.inputNames) : generateInputs(ref, refFile);
  const missing = cand.inputNames.filter((name) => !(name in feeds));
  if (missing.length) throw new UsageError(`${candFile}: inputs ${missing.join(', ')} are not inputs of ${refFile}`);
  // Feed each model only the inputs it declares: ORT rejects unknown names.
  const pick = (names) => Object.fromEntries(names.map((name) => [name, feeds[name]]));
  const expected = await run(ref, pick(ref.inputNames), refFile);
  const actual = await run(cand, pick(cand.inputNames), candFile);
  return report(expected, actual, opts.rtol);
}

async function main() {
  try {
    const opts = parseArgs(process.argv.slice(2));
    if (opts.help) {
      console.log(USAGE);
      return;
    }
    process.exitCode = (await (opts.time ? time(opts) : compare(opts))) ? 0 : 1;
  } catch (e) {
    console.error(`compare: ${e.message}`);
    process.exitCode = e instanceof UsageError ? 2 : 1;
  }
}

// scripts/ort/infer.js reuses the test-data reader.
module.exports = { UsageError, readTensor, readTestData, load, run, TYPES };

if (require.main === module) main();
