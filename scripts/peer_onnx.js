#!/usr/bin/env node
// peer_onnx.js — ONNX Runtime's CPU attention as a peer of `linattn bench`.
//
// Usage: node scripts/peer_onnx.js BUILD/linattn [N]      (`make bench-peers` runs it)
// Needs onnxruntime-node in build/onnx (`make bench-peers` installs it from npm:
// ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix build/onnx onnxruntime-node@1.30.0;
// the CPU binaries are in the package, the skipped install step only fetches CUDA's).
//
// Times, on 2 threads (intra-op 2, inter-op 1), B = 1, H = 8, d = 64, float32, N = 4096
// (or the N given), each the median of 5 runs after one warm-up:
//   softmax         ONNX opset 23 `Attention` on Q, K, V of (1, 8, N, 64), scale 1/√d;
//   softmax_causal  the same with is_causal = 1;
//   linear          linear attention as a graph of standard operators: φ = Elu + 1,
//                   φ(K)ᵀV (Transpose, MatMul), z = ReduceSum φ(K), φ(Q)·[S | z], Div;
// then runs `linattn bench` on the same shapes (--format csv, --threads 2: the next
// process, back to back) and prints linattn's median / ONNX Runtime's for each: the
// goals are softmax <= 0.5x and causal softmax <= 0.2x.
// Each graph is first checked at N = 8 against a float64 plain-loop reference (exit 1 when
// one does not compute its attention). The graphs are written here as ONNX protobuf bytes (the few message fields they need),
// so the script needs no package beyond onnxruntime-node.
'use strict';

const path = require('path');
const { execFileSync } = require('child_process');

const root = path.resolve(__dirname, '..');
let ort;
try {
  ort = require(path.join(root, 'build/onnx/node_modules/onnxruntime-node'));
} catch (e) {
  console.error('peer_onnx: onnxruntime-node is not in build/onnx (make bench-peers installs it): ' +
                e.message.split('\n')[0]);
  process.exit(2);
}
const binary = process.argv[2];
if (!binary) {
  console.error('usage: node scripts/peer_onnx.js BUILD/linattn [N]');
  process.exit(2);
}
const N = Number(process.argv[3] || 4096), H = 8, D = 64, THREADS = 2, RUNS = 5;

// ---------------------------------------------------------------- protobuf, the few bits used

function varint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
  return out;
}
const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => [...key(field, 0), ...varint(n)];
const bytes = (field, b) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field, s) => bytes(field, [...Buffer.from(s, 'utf8')]);
const msg = (field, parts) => bytes(field, parts.flat());

// onnx.proto: TensorProto.DataType FLOAT = 1, INT64 = 7; AttributeProto.type INT = 2, INTS = 7
const FLOAT = 1, INT64 = 7;
function valueInfo(field, name, elemType, dims) {
  const shape = dims.map((d) => msg(1, [int(1, d)])); // Dimension.dim_value
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, elemType), msg(2, shape)])])]);
}
function attrInt(name, v) {
  return msg(5, [str(1, name), int(20, 2), int(3, v)]);
}
function attrInts(name, vs) {
  return msg(5, [str(1, name), int(20, 7), ...vs.map((v) => int(8, v))]);
}
function node(op, inputs, outputs, attrs = []) {
  return msg(1, [...inputs.map((s) => str(1, s)), ...outputs.map((s) => str(2, s)), str(4, op),
                 ...attrs]);
}
// ModelProto: ir_version 11 (opset 23), opset_import {"" 23}, graph
function model(nodes, inputs, outputs) {
  const graph = msg(7, [...nodes, str(2, 'g'), ...inputs, ...outputs]);
  return Uint8Array.from([...int(1, 11), ...graph, ...msg(8, [str(1, ''), int(2, 23)])]);
}

// ---------------------------------------------------------------- the graphs

const qkv = (n) => ['q', 'k', 'v'].map((s) => valueInfo(11, s, FLOAT, [1, H, n, D]));
function softmaxGraph(n, causal) {
  return model([node('Attention', ['q', 'k', 'v'], ['y'], causal ? [attrInt('is_causal', 1)] : [])],
               qkv(n), [valueInfo(12, 'y', FLOAT, [1, H, n, D])]);
}
// y = φ(Q)·(φ(K)ᵀV) / (φ(Q)·Σ_j φ(k_j) + eps), φ = elu + 1
function linearGraph(n) {
  const nodes = [
    node('Elu', ['q'], ['eq']), node('Add', ['eq', 'one'], ['fq']),
    node('Elu', ['k'], ['ek']), node('Add', ['ek', 'one'], ['fk']),
    node('Transpose', ['fk'], ['fkt'], [attrInts('perm', [0, 1, 3, 2])]),
    node('MatMul', ['fkt', 'v'], ['s']),                        // (1, H, d, d)
    node('MatMul', ['fq', 's'], ['num']),                       // (1, H, N, d)
    node('ReduceSum', ['fk', 'axes'], ['z'], [attrInt('keepdims', 1)]), // (1, H, 1, d)
    node('Transpose', ['z'], ['zt'], [attrInts('perm', [0, 1, 3, 2])]),
    node('MatMul', ['fq', 'zt'], ['den']),                      // (1, H, N, 1)
    node('Add', ['den', 'eps'], ['den_eps']),
    node('Div', ['num', 'den_eps'], ['y']),
  ];
  return model(nodes, [...qkv(n), valueInfo(11, 'one', FLOAT, [1]), valueInfo(11, 'eps', FLOAT, [1]),
                       valueInfo(11, 'axes', INT64, [1])],
               [valueInfo(12, 'y', FLOAT, [1, H, n, D])]);
}

// ---------------------------------------------------------------- the graphs checked

// Plain-loop float64 references of one (n, D) head at offset h·n·D: softmax (causal or not)
// and linear attention with φ = elu + 1.
function reference(kind, q, k, v, n) {
  const y = new Float64Array(H * n * D);
  const phi = (x) => (x >= 0 ? x + 1 : Math.exp(x));
  for (let h = 0; h < H; h++) {
    const o = h * n * D;
    for (let i = 0; i < n; i++) {
      const keys = kind === 'softmax_causal' ? i + 1 : n;
      const w = new Float64Array(keys);
      for (let j = 0; j < keys; j++) {
        let dot = 0;
        for (let c = 0; c < D; c++) {
          dot += kind === 'linear' ? phi(q[o + i * D + c]) * phi(k[o + j * D + c])
                                   : q[o + i * D + c] * k[o + j * D + c];
        }
        w[j] = kind === 'linear' ? dot : dot / Math.sqrt(D);
      }
      if (kind !== 'linear') {
        const max = Math.max(...w);
        for (let j = 0; j < keys; j++) w[j] = Math.exp(w[j] - max);
      }
      const sum = w.reduce((a, b) => a + b, 0) + (kind === 'linear' ? 1e-6 : 0);
      for (let c = 0; c < D; c++) {
        let acc = 0;
        for (let j = 0; j < keys; j++) acc += w[j] * v[o + j * D + c];
        y[o + i * D + c] = acc / sum;
      }
    }
  }
  return y;
}

// Each graph at n = 8 against its reference: ‖y − ref‖ / ‖ref‖ below 1e-5, or exit 1.
async function checkGraphs() {
  const n = 8, count = H * n * D;
  const q = randn(count, 11), k = randn(count, 12), v = randn(count, 13);
  for (const [kind, graph] of [['softmax', softmaxGraph(n, false)], ['softmax_causal', softmaxGraph(n, true)],
                               ['linear', linearGraph(n)]]) {
    const session = await ort.InferenceSession.create(graph, { executionProviders: ['cpu'] });
    const out = await session.run(feedsOf(q, k, v, n, kind === 'linear'));
    await session.release();
    const y = out.y.data, ref = reference(kind, q, k, v, n);
    let num = 0, den = 0;
    for (let i = 0; i < count; i++) num += (y[i] - ref[i]) ** 2, den += ref[i] ** 2;
    const err = Math.sqrt(num / den);
    if (!(err < 1e-5)) {
      console.error(`peer_onnx: the ${kind} graph does not compute ${kind} attention (relative error ${err})`);
      process.exit(1);
    }
    console.log(`peer_onnx: the ${kind} graph matches a float64 reference at N = ${n} (relative error ${err.toExponential(1)})`);
  }
}

function feedsOf(q, k, v, n, linear) {
  const feeds = {
    q: new ort.Tensor('float32', q, [1, H, n, D]),
    k: new ort.Tensor('float32', k, [1, H, n, D]),
    v: new ort.Tensor('float32', v, [1, H, n, D]),
  };
  if (!linear) return feeds;
  return {
    ...feeds,
    one: new ort.Tensor('float32', Float32Array.from([1]), [1]),
    eps: new ort.Tensor('float32', Float32Array.from([1e-6]), [1]),
    axes: new ort.Tensor('int64', BigInt64Array.from([2n]), [1]),
  };
}

// ---------------------------------------------------------------- timing

function randn(count, seed) {
  // a small LCG and Box–Muller: fixed inputs, no dependency
  let s = BigInt(seed);
  const next = () => {
    s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
    return (Number(s >> 11n) + 0.5) / 2 ** 53;
  };
  const x = new Float32Array(count);
  for (let i = 0; i < count; i++) x[i] = Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
  return x;
}

async function medianTime(graph, feeds) {
  const session = await ort.InferenceSession.create(graph, {
    executionProviders: ['cpu'], intraOpNumThreads: THREADS, interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
  await session.run(feeds); // warm-up
  const times = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) * 1e-9);
  }
  await session.release();
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

// linattn bench's median per series on the same shapes, from its csv
function linattnMedians() {
  const run = (extra) => execFileSync(binary, ['bench', '--n', String(N), '--heads', String(H),
                                               '--d', String(D), '--threads', String(THREADS),
                                               '--format', 'csv', ...extra],
                                      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const medians = {};
  for (const text of [run(['--variant', 'softmax,linear']), run(['--variant', 'softmax', '--causal'])]) {
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
    const header = lines[0].split(',');
    for (const line of lines.slice(1)) {
      const row = Object.fromEntries(line.split(',').map((v, i) => [header[i], v]));
      if (row.status === 'ok' && row.variant !== 'sgemm') medians[row.variant] = Number(row.median_s);
    }
  }
  return medians;
}

async function main() {
  await checkGraphs();
  const count = H * N * D;
  const q = randn(count, 1), k = randn(count, 2), v = randn(count, 3);
  const feeds = feedsOf(q, k, v, N, false), linearFeeds = feedsOf(q, k, v, N, true);
  const peer = {};
  const cases = [['softmax', softmaxGraph(N, false), feeds], ['softmax_causal', softmaxGraph(N, true), feeds],
                 ['linear', linearGraph(N), linearFeeds]];
  for (const [name, graph, f] of cases) {
    try {
      peer[name] = await medianTime(graph, f);
      console.log(`onnxruntime-node ${ort.env.versions.node} ${name} N=${N} H=${H} d=${D} ` +
                  `${THREADS} threads: median ${peer[name].toFixed(4)} s`);
    } catch (e) {
      console.log(`onnxruntime-node ${name}: failed: ${e.message.split('\n')[0]}`);
    }
  }
  const ours = linattnMedians();
  const goals = { softmax: 0.5, softmax_causal: 0.2 };
  for (const name of Object.keys(peer)) {
    if (!(name in ours)) continue;
    const ratio = ours[name] / peer[name];
    const goal = name in goals ? `  (goal <= ${goals[name]}x: ${ratio <= goals[name] ? 'met' : 'not met'})` : '';
    console.log(`ratio linattn/onnxruntime ${name}: ${ratio.toFixed(3)}x ` +
                `(${ours[name].toFixed(4)} s / ${peer[name].toFixed(4)} s)${goal}`);
  }
}

main().catch((e) => {
  console.error('peer_onnx: ' + e.message);
  process.exit(1);
});
