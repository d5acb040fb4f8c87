#!/usr/bin/python3
"""attend_torch.py — `linattn attend --mask / --key-padding-mask` against PyTorch's own
masked attention.

Usage: /usr/bin/python3 tests/command/attend_torch.py BUILD/linattn   (run by
`make check-torch`)

PyTorch 1.13 (Debian's python3-torch) has its masked scaled dot-product attention inside
nn.MultiheadAttention: with every projection the identity and no bias, MHA of H heads on
inputs (N, B, H·d) is softmax(Q Kᵀ/√d + attn_mask) V per head, with attn_mask (N, M) or
(B·H, N, M) (bool True = not allowed, or float added to the scores) and key_padding_mask
(B, M) (True = ignore) — exactly what `linattn attend --variant softmax` (and
softmax_materialized) computes with --mask and --key-padding-mask on (B, H, N, d) inputs.
Cases: both masks, bool and additive float masks, shared and per-head attn_mask, with and
without --causal (top-left and bottom-right, given to PyTorch as part of the mask), N < M,
N > M, float32 and float64; ‖y − y_torch‖ / ‖y_torch‖ below 1e-5 in float32 and 1e-11 in
float64. Rows the masks hide whole are avoided: PyTorch gives NaN there, linattn zeros
(tests/attention/test_masks.c checks linattn's zeros).
Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "attend_torch: N passed, N failed".
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

TOL = {"float32": 1e-5, "float64": 1e-11}


def torch_attention(q, k, v, attn_mask, key_padding_mask, dtype):
    """PyTorch's masked attention of (B, H, N, d) arrays through nn.MultiheadAttention
    with identity projections; returns (B, H, N, d)."""
    b, h, n, d = q.shape
    m = k.shape[2]
    e = h * d
    mha = torch.nn.MultiheadAttention(e, h, bias=False, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(e, dtype=dtype).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(e, dtype=dtype))
    mha.eval()

    def seq_first(x, rows):  # (B, H, rows, d) -> (rows, B, H·d): head h in columns h·d..
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1, 3).reshape(rows, b, e)))

    with torch.no_grad():
        y, _ = mha(seq_first(q, n), seq_first(k, m), seq_first(v, m), need_weights=False,
                   attn_mask=None if attn_mask is None else torch.from_numpy(attn_mask),
                   key_padding_mask=None if key_padding_mask is None
                   else torch.from_numpy(key_padding_mask))
    return y.numpy().reshape(n, b, h, d).transpose(1, 2, 0, 3)


def rel_error(y, ref):
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(ref))):
        return np.inf
    return np.linalg.norm(y - ref) / np.linalg.norm(ref)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: attend_torch.py BUILD/linattn")
    linattn = sys.argv[1]
    seed = int(os.environ.get("LA_TEST_SEED", int.from_bytes(os.urandom(4), "little")))
    print("attend_torch: torch %s, seed %d (replay with LA_TEST_SEED=%d)" % (
        torch.__version__, seed, seed))
    rng = np.random.default_rng(seed)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: os.path.join(tmp, name)
        for b, h, n, m, d in [(1, 1, 5, 7, 4), (2, 3, 9, 4, 8), (2, 2, 70, 150, 16)]:
            q, k, v = (rng.standard_normal((b, h, rows, d)) for rows in (n, m, m))
            for name, x in zip("qkv", (q, k, v)):
                np.save(path(name + ".npy"), x)
            for form in ("shared", "per-head", "keys", "both"):
                for kind in ("bool", "float"):
                    for causal in (None, "top-left", "bottom-right"):
                        # hidden pairs: random, but key 0 (top-left causal) and key M − N
                        # (bottom-right: the last key row 0 sees, and every row sees it)
                        # always seen, so that no row is hidden whole
                        shape = (n, m) if form != "per-head" else (b * h, n, m)
                        hidden = rng.random(shape) < 0.3 if form != "keys" else None
                        hidden_keys = rng.random((b, m)) < 0.3 if form in ("keys", "both") \
                            else None
                        seen = 0 if causal != "bottom-right" else max(m - n, 0)
                        if hidden is not None:
                            hidden[..., seen] = False
                        if hidden_keys is not None:
                            hidden_keys[:, seen] = False
                        if causal == "bottom-right" and n > m:
                            continue  # its first N − M rows see no key: NaN in PyTorch
                        args = ["--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy"),
                                "--out", path("y.npy")]
                        torch_mask = hidden
                        if causal:
                            offset = m - n if causal == "bottom-right" else 0
                            future = np.arange(m)[None, :] > np.arange(n)[:, None] + offset
                            torch_mask = future if torch_mask is None else torch_mask | future
                            args += ["--causal", "--causal-align", causal]
                        if hidden is not None:
                            np.save(path("mask.npy"), hidden if kind == "bool"
                                    else np.where(hidden, -np.inf, 0.0))
                            args += ["--mask", path("mask.npy")]
                        if hidden_keys is not None:
                            np.save(path("kpm.npy"), hidden_keys if kind == "bool"
                                    else np.where(hidden_keys, -np.inf, 0.0).astype(np.float32))
                            args += ["--key-padding-mask", path("kpm.npy")]
                        for precision, dtype in (("float32", torch.float32),
                                                 ("float64", torch.float64)):
                            np_dtype = np.float32 if precision == "float32" else np.float64
                            t_mask = None
                            if torch_mask is not None:
                                t_mask = torch_mask if kind == "bool" else \
                                    np.where(torch_mask, -np.inf, 0.0).astype(np_dtype)
                            ref = torch_attention(*(x.astype(np_dtype) for x in (q, k, v)),
                                                  t_mask, hidden_keys, dtype).astype(np.float64)
                            for variant in ("softmax", "softmax_materialized"):
                                label = "%dx%dx%dx%d %s %s causal=%s %s %s" % (
                                    b, h, n, m, form, kind, causal, variant, precision)
                                proc = subprocess.run(
                                    [linattn, "attend", "--variant", variant, "--precision",
                                     precision] + args, capture_output=True, text=True)
                                if proc.returncode != 0:
                                    print("FAIL %s: exit %d: %s" % (label, proc.returncode,
                                                                    proc.stderr.strip()))
                                    failed += 1
                                    continue
                                y = np.load(path("y.npy")).astype(np.float64)
                                e = rel_error(y, ref)
                                if e < TOL[precision]:
                                    passed += 1
                                else:
                                    print("FAIL %s: relative error %.3g (tolerance %g)" % (
                                        label, e, TOL[precision]))
                                    failed += 1
    print("attend_torch: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
