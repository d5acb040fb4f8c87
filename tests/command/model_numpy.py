#!/usr/bin/python3
"""model_numpy.py — `linattn model` against a float64 NumPy nn.Transformer built from the
layers of tests/command/block_numpy.py (no PyTorch needed; `make check-torch` runs
tests/command/model_torch.py against PyTorch itself).

Usage: /usr/bin/python3 tests/command/model_numpy.py BUILD/linattn   (run by `make test`)

Writes random weights in nn.Transformer's state_dict layout (encoder.layers.{i}.*,
encoder.norm.*, decoder.layers.{i}.*, decoder.norm.*; float32 files for --precision
float32, float64 for float64), computes memory = encoder.norm(encoder layers(src)) and
y = decoder.norm(decoder layers(tgt, memory)) with a causal target, and requires
‖y − ref‖ / ‖ref‖ < 1e-5 in float32 and < 1e-11 in float64. Cases: post-LN and pre-LN,
softmax and linear attention (the cross-attention its own kernel or --variant's), 1 to 3
layers a side, (N, D) and (B, N, D), float inputs and int64/int32 token ids embedded by
src_embedding.weight and tgt_embedding.weight (a row lookup, no scaling).
Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "model_numpy: N passed, N failed".
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from block_numpy import (TOL, decoder_layer, encoder_layer, layer_norm,  # noqa: E402
                         random_weights)


def random_model(rng, d, d_ff, enc_layers, dec_layers):
    """nn.Transformer's state_dict, every tensor random."""
    w = {}
    for side, layers in (("encoder", enc_layers), ("decoder", dec_layers)):
        for i in range(layers):
            for key, t in random_weights(rng, d, d_ff, decoder=side == "decoder").items():
                w["%s.layers.%d.%s" % (side, i, key)] = t
        w[side + ".norm.weight"] = 1 + rng.normal(0, 0.1, d)
        w[side + ".norm.bias"] = rng.normal(0, 0.1, d)
    return w


def layer_of(w, prefix):
    return {k[len(prefix):]: t for k, t in w.items() if k.startswith(prefix)}


def transformer(src, tgt, w, heads, enc_layers, dec_layers, norm, kind, cross_kind, activation):
    """nn.Transformer.forward with tgt_mask causal, nothing else masked. src: (B, M, D)."""
    x = src
    for i in range(enc_layers):
        x = encoder_layer(x, layer_of(w, "encoder.layers.%d." % i), heads, norm, kind, False,
                          activation)
    memory = layer_norm(x, w["encoder.norm.weight"], w["encoder.norm.bias"])
    y = tgt
    for i in range(dec_layers):
        y = decoder_layer(y, memory, layer_of(w, "decoder.layers.%d." % i), heads, norm, kind,
                          cross_kind, True, activation)
    return layer_norm(y, w["decoder.norm.weight"], w["decoder.norm.bias"])


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    linattn = os.path.abspath(sys.argv[1])
    seed = int(os.environ.get("LA_TEST_SEED") or np.random.SeedSequence().entropy % 10**12)
    print("model_numpy: seed %d (replay with LA_TEST_SEED=%d)" % (seed, seed))
    rng = np.random.default_rng(seed)
    tmp = tempfile.mkdtemp(prefix="la_model_")
    passed = failed = 0
    try:
        cases = [(p, nm, k, ck, tok) for p in ("float32", "float64") for nm in ("post", "pre")
                 for k, ck in (("softmax", "softmax"), ("linear", "linear"),
                               ("linear", "softmax"), ("softmax", "linear"))
                 for tok in (False, True)]
        for i, (precision, norm, kind, cross_kind, tokens) in enumerate(cases):
            d = [8, 12, 16][i % 3]
            heads = [1, 2, 4][(i // 3) % 3]
            d_ff = [20, 32][i % 2]
            enc_layers, dec_layers = [(1, 2), (2, 1), (3, 2)][(i // 2) % 3]
            m, n = [(5, 1), (9, 12), (30, 17)][i % 3]
            batched = i % 4 < 2
            activation = "gelu" if i % 5 == 0 else "relu"
            dtype = np.float32 if precision == "float32" else np.float64
            folder = os.path.join(tmp, "w%d" % i)
            os.makedirs(folder)
            w = {}
            for key, t in random_model(rng, d, d_ff, enc_layers, dec_layers).items():
                arr = np.ascontiguousarray(t.astype(dtype))
                np.save(os.path.join(folder, key + ".npy"), arr)
                w[key] = arr.astype(np.float64)
            lead = (2,) if batched else ()
            if tokens:
                tables = {}
                for side, vocab in (("src", 13), ("tgt", 6)):
                    table = rng.normal(0, 1, (vocab, d)).astype(dtype)
                    np.save(os.path.join(folder, side + "_embedding.weight.npy"), table)
                    tables[side] = table.astype(np.float64)
                int_type = np.int64 if i % 3 else np.int32
                src = rng.integers(0, 13, lead + (m,)).astype(int_type)
                tgt = rng.integers(0, 6, lead + (n,)).astype(int_type)
                src64, tgt64 = tables["src"][src], tables["tgt"][tgt]
            else:
                src = rng.normal(0, 1, lead + (m, d)).astype(dtype)
                tgt = rng.normal(0, 1, lead + (n, d)).astype(dtype)
                src64, tgt64 = src.astype(np.float64), tgt.astype(np.float64)
            paths = [os.path.join(tmp, "%s%d.npy" % (s, i)) for s in ("src", "tgt", "y")]
            np.save(paths[0], src)
            np.save(paths[1], tgt)
            args = [linattn, "model", "--weights", folder, "--src", paths[0], "--tgt", paths[1],
                    "--out", paths[2], "--heads", str(heads), "--norm", norm, "--variant", kind,
                    "--precision", precision, "--activation", activation] + \
                (["--cross-variant", cross_kind] if cross_kind != kind else [])
            shape = lead + (n, d)
            what = "%s %s-LN self %s cross %s %s L=%d L2=%d H=%d D=%d M=%d shape=%s %s" % (
                precision, norm, kind, cross_kind, "tokens" if tokens else "floats",
                enc_layers, dec_layers, heads, d, m, shape, activation)
            p = subprocess.run(args, capture_output=True, text=True)
            if p.returncode != 0:
                failed += 1
                print("FAIL: %s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
                continue
            y = np.load(paths[2])
            ref = transformer(src64.reshape((-1, m, d)), tgt64.reshape((-1, n, d)), w, heads,
                              enc_layers, dec_layers, norm, kind, cross_kind,
                              activation).reshape(shape)
            err = np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref)
            if y.shape != shape or y.dtype != dtype or not np.isfinite(err) \
                    or err >= TOL[precision]:
                failed += 1
                print("FAIL: %s: shape %s dtype %s relative error %.3g" % (
                    what, y.shape, y.dtype, err))
            else:
                passed += 1
    finally:
        shutil.rmtree(tmp)
    print("model_numpy: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
