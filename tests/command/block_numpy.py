#!/usr/bin/python3
"""block_numpy.py — `linattn block` against an independent float64 NumPy implementation of
torch.nn.TransformerEncoderLayer(D, H, d_ff, dropout=0, batch_first=True) and of
TransformerDecoderLayer (--layer decoder), and its handling of bad weights and input.

Usage: /usr/bin/python3 tests/block_numpy.py BUILD/linattn   (run by `make test`)

Part 1 writes random weights in PyTorch's layout to a folder of .npy files named by
their state_dict keys (float32 files for --precision float32, float64 for float64),
computes the layer in NumPy exactly as PyTorch's encoder layer does (post-LN, and
pre-LN = norm_first=True; ReLU and GELU; softmax, and the paper's elu+1 linear
attention; causal or not; H = 1, H = D and between; X of shape (N, D) and (B, N, D)),
and requires ‖y − ref‖ / ‖ref‖ < 1e-5 in float32 and < 1e-11 in float64; then the same
for decoder layers (masked self-attention, cross-attention over a memory of another length,
FFN; each attention softmax or linear on its own, --variant and --cross-variant).
Part 2: a missing, misshapen or non-float weight file, X of the wrong width, heads that
do not divide D, an unknown flag, and for a decoder a missing cross-attention tensor, a
memory of the wrong width or batch, and --memory without --layer decoder each exit 2 with exactly one stderr line starting
"linattn: " (naming the file at fault where there is one) and leave no output.
Part 3: --positions sinusoidal and learned added to X, rotary in the
self-attention (softmax: q, k rotated; linear: RoFormer's form) and relative (Shaw et al.,
given and drawn tables) against the same NumPy layer, and their bad input refused.

PyTorch itself is not used here (`make check-torch` runs tests/block_torch.py against
it); the reference follows the formulas of torch.nn.MultiheadAttention and
TransformerEncoderLayer.forward.
Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "block_numpy: N passed, N failed".
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

TOL = {"float32": 1e-5, "float64": 1e-11}
LN_EPS = 1e-5
LINEAR_EPS = 1e-6  # LA_DEFAULT_EPS


# ---------------------------------------------------------------- the reference


def layer_norm(x, gamma, beta):
    """LayerNorm over the last axis, biased variance, ε = 1e-5."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta


def gelu(x):
    """Exact GELU, 0.5·x·(1 + erf(x/√2)) (PyTorch's default approximate='none')."""
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def attention_heads(q, k, v, kind, causal):
    """q, k, v: (B, H, N, d_h) → (B, H, N, d_h)."""
    n = q.shape[2]
    m = k.shape[2]
    mask = np.tril(np.ones((n, m), dtype=bool)) if causal else np.ones((n, m), dtype=bool)
    if kind == "softmax":
        scores = np.einsum("bhnd,bhmd->bhnm", q, k) / math.sqrt(q.shape[-1])
        scores = np.where(mask, scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        return weights @ v
    # linear attention, φ = elu + 1: y_i = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ / (φ(q_i)ᵀ Σ_j φ(k_j) + ε)
    phi = lambda x: np.where(x >= 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    a = np.einsum("bhnd,bhmd->bhnm", phi(q), phi(k)) * mask
    return (a @ v) / (a.sum(axis=-1, keepdims=True) + LINEAR_EPS)


def self_attention(x, w, heads, kind, causal, prefix="self_attn", kv=None):
    """nn.MultiheadAttention(x, kv, kv): packed in_proj, heads, out_proj. x: (B, N, D),
    kv: (B, M, D), x itself when None."""
    kv = x if kv is None else kv
    b, n, d = x.shape
    m, dh = kv.shape[1], d // heads
    w_in, b_in = w[prefix + ".in_proj_weight"], w[prefix + ".in_proj_bias"]
    split = lambda t, rows: t.reshape(b, rows, heads, dh).transpose(0, 2, 1, 3)
    q = split(x @ w_in[:d].T + b_in[:d], n)
    k = split(kv @ w_in[d:2 * d].T + b_in[d:2 * d], m)
    v = split(kv @ w_in[2 * d:].T + b_in[2 * d:], m)
    o = attention_heads(q, k, v, kind, causal).transpose(0, 2, 1, 3).reshape(b, n, d)
    return o @ w[prefix + ".out_proj.weight"].T + w[prefix + ".out_proj.bias"]


def encoder_layer(x, w, heads, norm, kind, causal, activation):
    """TransformerEncoderLayer.forward with dropout off."""
    act = gelu if activation == "gelu" else (lambda t: np.maximum(t, 0.0))
    ff = lambda t: act(t @ w["linear1.weight"].T + w["linear1.bias"]) @ w["linear2.weight"].T \
        + w["linear2.bias"]
    ln1 = lambda t: layer_norm(t, w["norm1.weight"], w["norm1.bias"])
    ln2 = lambda t: layer_norm(t, w["norm2.weight"], w["norm2.bias"])
    if norm == "pre":
        x = x + self_attention(ln1(x), w, heads, kind, causal)
        return x + ff(ln2(x))
    x = ln1(x + self_attention(x, w, heads, kind, causal))
    return ln2(x + ff(x))


def decoder_layer(x, mem, w, heads, norm, kind, cross_kind, causal, activation):
    """TransformerDecoderLayer.forward with dropout off; tgt_mask causal or None."""
    act = gelu if activation == "gelu" else (lambda t: np.maximum(t, 0.0))
    ff = lambda t: act(t @ w["linear1.weight"].T + w["linear1.bias"]) @ w["linear2.weight"].T \
        + w["linear2.bias"]
    ln = lambda t, i: layer_norm(t, w["norm%d.weight" % i], w["norm%d.bias" % i])
    sa = lambda t: self_attention(t, w, heads, kind, causal)
    ca = lambda t: self_attention(t, w, heads, cross_kind, False, "multihead_attn", mem)
    if norm == "pre":
        x = x + sa(ln(x, 1))
        x = x + ca(ln(x, 2))
        return x + ff(ln(x, 3))
    x = ln(x + sa(x), 1)
    x = ln(x + ca(x), 2)
    return ln(x + ff(x), 3)


# ---------------------------------------------------------------- fixtures


def random_weights(rng, d, d_ff, decoder=False):
    """A state_dict in PyTorch's shapes, every tensor random (biases, γ and β too)."""
    w = {
        "self_attn.in_proj_weight": rng.normal(0, 1 / math.sqrt(d), (3 * d, d)),
        "self_attn.in_proj_bias": rng.normal(0, 0.1, 3 * d),
        "self_attn.out_proj.weight": rng.normal(0, 1 / math.sqrt(d), (d, d)),
        "self_attn.out_proj.bias": rng.normal(0, 0.1, d),
        "linear1.weight": rng.normal(0, 1 / math.sqrt(d), (d_ff, d)),
        "linear1.bias": rng.normal(0, 0.1, d_ff),
        "linear2.weight": rng.normal(0, 1 / math.sqrt(d_ff), (d, d_ff)),
        "linear2.bias": rng.normal(0, 0.1, d),
        "norm1.weight": 1 + rng.normal(0, 0.1, d),
        "norm1.bias": rng.normal(0, 0.1, d),
        "norm2.weight": 1 + rng.normal(0, 0.1, d),
        "norm2.bias": rng.normal(0, 0.1, d),
    }
    if decoder:
        w.update({
            "multihead_attn.in_proj_weight": rng.normal(0, 1 / math.sqrt(d), (3 * d, d)),
            "multihead_attn.in_proj_bias": rng.normal(0, 0.1, 3 * d),
            "multihead_attn.out_proj.weight": rng.normal(0, 1 / math.sqrt(d), (d, d)),
            "multihead_attn.out_proj.bias": rng.normal(0, 0.1, d),
            "norm3.weight": 1 + rng.normal(0, 0.1, d),
            "norm3.bias": rng.normal(0, 0.1, d),
        })
    return w


def save_weights(folder, w, dtype):
    """One file per key; returns the weights as float64 holding exactly the saved values."""
    os.makedirs(folder, exist_ok=True)
    saved = {}
    for key, t in w.items():
        arr = np.ascontiguousarray(t.astype(dtype))
        np.save(os.path.join(folder, key + ".npy"), arr)
        saved[key] = arr.astype(np.float64)
    return saved


class Runner:
    def __init__(self, linattn, tmp):
        self.linattn, self.tmp = linattn, tmp
        self.passed = self.failed = 0

    def fail(self, what):
        self.failed += 1
        print("FAIL:", what)

    def run(self, args):
        return subprocess.run([self.linattn, "block"] + args, capture_output=True, text=True)


# ---------------------------------------------------------------- part 1: numerics


def check_numerics(r, rng):
    cases = []
    for precision in ("float32", "float64"):
        for norm in ("post", "pre"):
            for kind in ("softmax", "linear"):
                for causal in (False, True):
                    cases.append((precision, norm, kind, causal))
    for i, (precision, norm, kind, causal) in enumerate(cases):
        d = [8, 12, 16][i % 3]
        heads = [1, d, 4][(i // 3) % 3]
        if d % heads:
            heads = 2
        d_ff = [20, 32][i % 2]
        activation = "gelu" if i % 5 == 0 else "relu"
        batched = i % 2 == 0
        n = [1, 7, 70][i % 3]
        dtype = np.float32 if precision == "float32" else np.float64
        folder = os.path.join(r.tmp, "w%d" % i)
        w = save_weights(folder, random_weights(rng, d, d_ff), dtype)
        shape = (2, n, d) if batched else (n, d)
        x = rng.normal(0, 1, shape).astype(dtype)
        x_path, out = os.path.join(r.tmp, "x%d.npy" % i), os.path.join(r.tmp, "y%d.npy" % i)
        np.save(x_path, x)
        args = ["--weights", folder, "--x", x_path, "--out", out, "--heads", str(heads),
                "--norm", norm, "--variant", kind, "--precision", precision,
                "--activation", activation] + (["--causal"] if causal else [])
        what = "%s %s-LN %s causal=%s H=%d D=%d shape=%s %s" % (
            precision, norm, kind, causal, heads, d, shape, activation)
        p = r.run(args)
        if p.returncode != 0:
            r.fail("%s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
            continue
        y = np.load(out)
        xb = x.astype(np.float64).reshape((-1, n, d))
        ref = encoder_layer(xb, w, heads, norm, kind, causal, activation).reshape(shape)
        err = np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref)
        if y.shape != shape or y.dtype != dtype or not np.isfinite(err) or err >= TOL[precision]:
            r.fail("%s: shape %s dtype %s relative error %.3g" % (what, y.shape, y.dtype, err))
        else:
            r.passed += 1


def check_decoder_numerics(r, rng):
    cases = []
    for precision in ("float32", "float64"):
        for norm in ("post", "pre"):
            for kind in ("softmax", "linear"):
                for cross_kind in ("softmax", "linear"):
                    cases.append((precision, norm, kind, cross_kind, (len(cases) // 2) % 2 == 0))
    for i, (precision, norm, kind, cross_kind, causal) in enumerate(cases):
        d = [8, 12, 16][i % 3]
        heads = [1, 2, 4, d][(i // 2) % 4]
        d_ff = [20, 32][i % 2]
        activation = "gelu" if i % 3 == 1 else "relu"
        batched = i % 2 == 1
        n, m = [(1, 5), (7, 3), (33, 40), (9, 9)][i % 4]
        dtype = np.float32 if precision == "float32" else np.float64
        folder = os.path.join(r.tmp, "dw%d" % i)
        w = save_weights(folder, random_weights(rng, d, d_ff, decoder=True), dtype)
        shape, mem_shape = ((2, n, d), (2, m, d)) if batched else ((n, d), (m, d))
        x = rng.normal(0, 1, shape).astype(dtype)
        mem = rng.normal(0, 1, mem_shape).astype(dtype)
        x_path, mem_path = os.path.join(r.tmp, "dx%d.npy" % i), os.path.join(r.tmp, "dm%d.npy" % i)
        out = os.path.join(r.tmp, "dy%d.npy" % i)
        np.save(x_path, x)
        np.save(mem_path, mem)
        # --cross-variant given only when it differs, so its default (--variant's) is used too
        args = ["--layer", "decoder", "--weights", folder, "--x", x_path, "--memory", mem_path,
                "--out", out, "--heads", str(heads), "--norm", norm, "--variant", kind,
                "--precision", precision, "--activation", activation] + \
            (["--causal"] if causal else []) + \
            (["--cross-variant", cross_kind] if cross_kind != kind or i % 4 == 0 else [])
        what = "decoder %s %s-LN self %s cross %s causal=%s H=%d D=%d shape=%s M=%d %s" % (
            precision, norm, kind, cross_kind, causal, heads, d, shape, m, activation)
        p = r.run(args)
        if p.returncode != 0:
            r.fail("%s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
            continue
        y = np.load(out)
        ref = decoder_layer(x.astype(np.float64).reshape((-1, n, d)),
                            mem.astype(np.float64).reshape((-1, m, d)), w, heads, norm, kind,
                            cross_kind, causal, activation).reshape(shape)
        err = np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref)
        if y.shape != shape or y.dtype != dtype or not np.isfinite(err) or err >= TOL[precision]:
            r.fail("%s: shape %s dtype %s relative error %.3g" % (what, y.shape, y.dtype, err))
        else:
            r.passed += 1


# ---------------------------------------------------------------- part 2: refusals


def check_refusals(r, rng):
    d, d_ff = 8, 16
    good = os.path.join(r.tmp, "good")
    save_weights(good, random_weights(rng, d, d_ff), np.float32)
    x_path = os.path.join(r.tmp, "x_bad.npy")
    np.save(x_path, rng.normal(0, 1, (5, d)).astype(np.float32))

    def variant(name, mutate):
        folder = os.path.join(r.tmp, name)
        shutil.copytree(good, folder)
        mutate(folder)
        return folder

    missing = variant("missing", lambda f: os.remove(os.path.join(f, "linear2.bias.npy")))
    shaped = variant("shaped", lambda f: np.save(os.path.join(f, "norm2.weight.npy"),
                                                 np.ones(d + 1, np.float32)))
    ints = variant("ints", lambda f: np.save(os.path.join(f, "norm1.bias.npy"),
                                             np.zeros(d, np.int64)))
    nan = variant("nan", lambda f: np.save(os.path.join(f, "linear1.bias.npy"),
                                           np.full(d_ff, np.nan, np.float32)))
    wide = os.path.join(r.tmp, "x_wide.npy")
    np.save(wide, np.zeros((5, d + 1), np.float32))
    cases = [
        ("missing tensor", ["--weights", missing, "--x", x_path, "--heads", "2"],
         "linear2.bias.npy"),
        ("misshapen tensor", ["--weights", shaped, "--x", x_path, "--heads", "2"],
         "norm2.weight.npy"),
        ("integer tensor", ["--weights", ints, "--x", x_path, "--heads", "2"], "norm1.bias.npy"),
        ("NaN tensor", ["--weights", nan, "--x", x_path, "--heads", "2"], "linear1.bias.npy"),
        ("no such folder", ["--weights", os.path.join(r.tmp, "nowhere"), "--x", x_path,
                            "--heads", "2"], "nowhere"),
        ("X of the wrong width", ["--weights", good, "--x", wide, "--heads", "2"], "x_wide.npy"),
        ("heads not dividing D", ["--weights", good, "--x", x_path, "--heads", "3"], "--heads"),
        ("unknown flag", ["--weights", good, "--x", x_path, "--heads", "2", "--bogus"],
         "--bogus"),
        ("bad norm", ["--weights", good, "--x", x_path, "--heads", "2", "--norm", "middle"],
         "--norm"),
    ]
    dgood = os.path.join(r.tmp, "dgood")
    save_weights(dgood, random_weights(rng, d, d_ff, decoder=True), np.float32)
    dmissing = os.path.join(r.tmp, "dmissing")
    shutil.copytree(dgood, dmissing)
    os.remove(os.path.join(dmissing, "multihead_attn.out_proj.bias.npy"))
    mem = os.path.join(r.tmp, "mem.npy")
    np.save(mem, rng.normal(0, 1, (4, d)).astype(np.float32))
    mem_wide = os.path.join(r.tmp, "mem_wide.npy")
    np.save(mem_wide, np.zeros((4, d + 2), np.float32))
    mem_batched = os.path.join(r.tmp, "mem_batched.npy")
    np.save(mem_batched, np.zeros((3, 4, d), np.float32))
    dec = lambda folder, memory: ["--layer", "decoder", "--weights", folder, "--x", x_path,
                                  "--heads", "2"] + (["--memory", memory] if memory else [])
    cases += [
        ("decoder: missing cross-attention tensor", dec(dmissing, mem),
         "multihead_attn.out_proj.bias.npy"),
        ("decoder: encoder weights", dec(good, mem), "multihead_attn.in_proj_weight.npy"),
        ("decoder: memory of the wrong width", dec(dgood, mem_wide), "mem_wide.npy"),
        ("decoder: memory batched, X not", dec(dgood, mem_batched), "mem_batched.npy"),
        ("decoder: no --memory", dec(dgood, None), "--memory"),
        ("encoder: --memory", ["--weights", good, "--x", x_path, "--heads", "2", "--memory", mem],
         "--memory"),
        ("encoder: --cross-variant", ["--weights", good, "--x", x_path, "--heads", "2",
                                      "--cross-variant", "linear"], "--cross-variant"),
        ("decoder: bad --cross-variant", dec(dgood, mem) + ["--cross-variant", "nonesuch"],
         "--cross-variant"),
        ("bad --layer", ["--layer", "middle", "--weights", good, "--x", x_path, "--heads", "2"],
         "--layer"),
    ]
    for what, args, named in cases:
        out = os.path.join(r.tmp, "refused.npy")
        p = r.run(args + ["--out", out])
        lines = p.stderr.strip().split("\n")
        leftovers = [f for f in os.listdir(r.tmp) if f.startswith("refused.npy")]
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("linattn: ") \
                or named not in lines[0] or leftovers:
            r.fail("%s: exit %d, stderr %r, files %s" % (what, p.returncode, p.stderr, leftovers))
        else:
            r.passed += 1


# ---------------------------------------------------------------- part 3: positions


def splitmix64(state):
    mask = (1 << 64) - 1
    state = (state + 0x9E3779B97F4A7C15) & mask
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return state, z ^ (z >> 31)


def relative_tables(K, dh, seed):
    """a^K, a^V (2K+1, d_h) as la_kernel_draw draws them (lib/attention/kernels.h: la_relative_embeddings)."""
    rows, values, state = 2 * K + 1, [], seed
    while len(values) < 2 * rows * dh:
        state, x1 = splitmix64(state)
        state, x2 = splitmix64(state)
        u1, u2 = (x1 >> 11) * 2.0 ** -53, (x2 >> 11) * 2.0 ** -53
        r = math.sqrt(-2.0 * math.log(1.0 - u1))
        values += [r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)]
    drawn = np.array(values[:2 * rows * dh])
    return drawn[:rows * dh].reshape(rows, dh), drawn[rows * dh:].reshape(rows, dh)


def rotate(x):
    """RoPE on (..., n, d): pair (2c, 2c+1) of row i rotated by i·10000^(−2c/d)."""
    n, d = x.shape[-2:]
    angle = np.arange(n)[:, None] * 10000.0 ** (-2.0 * np.arange(d // 2) / d)[None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * np.cos(angle) - b * np.sin(angle)
    out[..., 1::2] = a * np.sin(angle) + b * np.cos(angle)
    return out


def attention_positions(q, k, v, kind, causal, positions, tables):
    """attention_heads with rotary (softmax: q, k rotated; linear: RoFormer's numerator
    R φ(q)·R φ(k) over the unrotated denominator) or relative positions (Shaw et al.)."""
    n = q.shape[2]
    mask = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    if positions == "rotary" and kind == "linear":
        phi = lambda x: np.where(x >= 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
        num = np.einsum("bhnd,bhmd->bhnm", rotate(phi(q)), rotate(phi(k))) * mask
        den = (np.einsum("bhnd,bhmd->bhnm", phi(q), phi(k)) * mask).sum(-1, keepdims=True)
        return (num @ v) / (den + LINEAR_EPS)
    if positions == "rotary":
        return attention_heads(rotate(q), rotate(k), v, kind, causal)
    a_k, a_v = tables
    K = (a_k.shape[0] - 1) // 2
    idx = np.clip(np.arange(n)[None, :] - np.arange(n)[:, None], -K, K) + K
    scores = (np.einsum("bhnd,bhmd->bhnm", q, k) + np.einsum("bhnd,nmd->bhnm", q, a_k[idx]))
    scores = np.where(mask, scores / math.sqrt(q.shape[-1]), -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v + np.einsum("bhnm,nme->bhne", weights, a_v[idx])


def encoder_layer_positions(x, w, heads, norm, kind, causal, positions, tables):
    """encoder_layer (post-LN or pre-LN, ReLU) with positions in its self-attention."""
    def attn(t):
        b, n, d = t.shape
        dh = d // heads
        qkv = t @ w["self_attn.in_proj_weight"].T + w["self_attn.in_proj_bias"]
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(b, n, heads, dh).transpose(0, 2, 1, 3)
                   for i in range(3))
        o = attention_positions(q, k, v, kind, causal, positions, tables)
        o = o.transpose(0, 2, 1, 3).reshape(b, n, d)
        return o @ w["self_attn.out_proj.weight"].T + w["self_attn.out_proj.bias"]
    ff = lambda t: np.maximum(t @ w["linear1.weight"].T + w["linear1.bias"], 0.0) \
        @ w["linear2.weight"].T + w["linear2.bias"]
    ln1 = lambda t: layer_norm(t, w["norm1.weight"], w["norm1.bias"])
    ln2 = lambda t: layer_norm(t, w["norm2.weight"], w["norm2.bias"])
    if norm == "pre":
        x = x + attn(ln1(x))
        return x + ff(ln2(x))
    x = ln1(x + attn(x))
    return ln2(x + ff(x))


def check_positions(r, rng):
    """--positions through block: sinusoidal and learned added to X; rotary (softmax and
    linear) and relative (given and drawn tables) in the self-attention; bad input refused."""
    d, d_ff, heads, n = 8, 16, 2, 11
    dh = d // heads
    cases = [("sinusoidal", "softmax", []), ("learned", "linear", ["table"]),
             ("rotary", "softmax", []), ("rotary", "linear", []),
             ("relative", "softmax", ["--max-distance", "2", "--seed", "7"]),
             ("relative", "softmax", ["given"])]
    for i, (positions, kind, extra) in enumerate(cases):
        for precision in ("float32", "float64"):
            for causal in (False, True):
                norm = ["post", "pre"][i % 2]
                dtype = np.float32 if precision == "float32" else np.float64
                folder = os.path.join(r.tmp, "pw%d%s" % (i, precision))
                w = save_weights(folder, random_weights(rng, d, d_ff), dtype)
                x = rng.normal(0, 1, (2, n, d)).astype(dtype)
                x_path, out = os.path.join(r.tmp, "px.npy"), os.path.join(r.tmp, "py.npy")
                np.save(x_path, x)
                args = ["--weights", folder, "--x", x_path, "--out", out, "--heads", str(heads),
                        "--norm", norm, "--variant", kind, "--precision", precision,
                        "--positions", positions] + [e for e in extra if e not in ("table", "given")]
                if causal:
                    args.append("--causal")
                xb = x.astype(np.float64)
                tables = None
                if positions == "sinusoidal":
                    pos, c = np.arange(n)[:, None], np.arange(d)[None, :]
                    angle = pos / 10000.0 ** ((c - c % 2) / d)
                    xb = xb + np.where(c % 2 == 0, np.sin(angle), np.cos(angle))
                elif positions == "learned":
                    table = rng.normal(0, 1, (n + 3, d))
                    np.save(os.path.join(r.tmp, "ptable.npy"), table)
                    args += ["--position-table", os.path.join(r.tmp, "ptable.npy")]
                    xb = xb + table[:n]
                elif positions == "relative" and "given" in extra:
                    tables = (rng.normal(0, 1, (7, dh)), rng.normal(0, 1, (7, dh)))
                    np.save(os.path.join(r.tmp, "pak.npy"), tables[0])
                    np.save(os.path.join(r.tmp, "pav.npy"), tables[1])
                    args += ["--relative", os.path.join(r.tmp, "pak.npy") + "," +
                             os.path.join(r.tmp, "pav.npy")]
                elif positions == "relative":
                    tables = relative_tables(2, dh, 7)
                if precision == "float32":
                    xb = xb.astype(np.float32).astype(np.float64)
                if positions in ("sinusoidal", "learned"):
                    ref = encoder_layer(xb, w, heads, norm, kind, causal, "relu")
                else:
                    ref = encoder_layer_positions(xb, w, heads, norm, kind, causal, positions,
                                                  tables)
                what = "positions %s %s %s causal=%s %s" % (positions, kind, " ".join(extra),
                                                              causal, precision)
                p = r.run(args)
                if p.returncode != 0:
                    r.fail("%s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
                    continue
                y = np.load(out).astype(np.float64)
                err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
                if y.shape != ref.shape or not np.isfinite(err) or err >= TOL[precision]:
                    r.fail("%s: relative error %.3g" % (what, err))
                else:
                    r.passed += 1
    # refusals: one line, exit 2, nothing written
    good = os.path.join(r.tmp, "pw0float32")
    x_path = os.path.join(r.tmp, "px.npy")
    np.save(x_path, rng.normal(0, 1, (5, d)).astype(np.float32))
    np.save(os.path.join(r.tmp, "pbad.npy"), np.zeros((5, dh + 1)))
    base = ["--weights", good, "--x", x_path, "--heads", "2"]
    refusals = [
        ("--positions relative with linear", base + ["--variant", "linear", "--positions",
                                                      "relative"], "--positions"),
        ("--max-distance 0", base + ["--positions", "relative", "--max-distance", "0"],
         "--max-distance"),
        ("--relative of the wrong width", base + [
            "--positions", "relative", "--relative",
            os.path.join(r.tmp, "pbad.npy") + "," + os.path.join(r.tmp, "pbad.npy")],
         "--relative"),
        ("--position-table too short", base + [
            "--positions", "learned", "--position-table", os.path.join(r.tmp, "pbad.npy")],
         "--position-table"),
        ("rotary with odd D/H", base[:-1] + ["8", "--positions", "rotary"], "--positions"),
        ("--seed with rotary", base + ["--positions", "rotary", "--seed", "3"], "--seed"),
        ("unknown --positions", base + ["--positions", "alibi"], "--positions"),
    ]
    for what, args, named in refusals:
        out = os.path.join(r.tmp, "prefused.npy")
        p = r.run(args + ["--out", out])
        lines = p.stderr.strip().split("\n")
        leftovers = [f for f in os.listdir(r.tmp) if f.startswith("prefused.npy")]
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("linattn: ") \
                or named not in lines[0] or leftovers:
            r.fail("%s: exit %d, stderr %r, files %s" % (what, p.returncode, p.stderr, leftovers))
        else:
            r.passed += 1


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    seed = int(os.environ.get("LA_TEST_SEED") or np.random.SeedSequence().entropy % 10**12)
    print("block_numpy: seed %d (replay with LA_TEST_SEED=%d)" % (seed, seed))
    rng = np.random.default_rng(seed)
    tmp = tempfile.mkdtemp(prefix="la_block_")
    try:
        r = Runner(os.path.abspath(sys.argv[1]), tmp)
        check_numerics(r, rng)
        check_decoder_numerics(r, rng)
        check_refusals(r, rng)
        check_positions(r, rng)
    finally:
        shutil.rmtree(tmp)
    print("block_numpy: %d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
