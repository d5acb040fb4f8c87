#!/usr/bin/python3
"""block_torch.py — `linattn block` against PyTorch's own torch.nn.TransformerEncoderLayer
and TransformerDecoderLayer (--layer decoder).

Usage: /usr/bin/python3 tests/command/block_torch.py BUILD/linattn   (run by `make check-torch`)

tests/command/block_numpy.py (part of `make test`) checks `linattn block` against a NumPy
re-implementation written from PyTorch's formulas; this script closes the remaining gap
by running PyTorch itself (Debian's python3-torch, 1.13). For each case it builds
nn.TransformerEncoderLayer(D, H, d_ff, dropout=0, activation, batch_first=True,
norm_first) with PyTorch's own random initialisation (biases, γ and β then randomised
too, so that none is trivially 0 or 1), saves its state_dict as one .npy per key, runs
`linattn block` on the same X, and requires ‖y − y_torch‖ / ‖y_torch‖ below 1e-5 in
float32 and 1e-11 in float64. Cases: post-LN and pre-LN, ReLU and GELU, causal (PyTorch
given the additive −inf mask above the diagonal) or not, X of shape (N, D) and (B, N, D),
H = 1, H = D and between. Decoder layers likewise (nn.TransformerDecoderLayer, the
same options, tgt_mask causal or None, a memory of another length than X). Softmax
attention only: PyTorch has no linear attention.
Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "block_torch: N passed, N failed".
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

TOL = {"float32": 1e-5, "float64": 1e-11}


def case_list():
    cases = []
    for precision in ("float32", "float64"):
        for norm in ("post", "pre"):
            for activation in ("relu", "gelu"):
                for causal in (False, True):
                    cases.append((precision, norm, activation, causal))
    return cases


def randomise(layer):
    """PyTorch's own initialisation, then biases, γ and β random too (none 0 or 1)."""
    with torch.no_grad():
        for name, t in layer.named_parameters():
            if name.endswith("bias"):
                t.normal_(0, 0.1)
            elif name.startswith("norm"):
                t.normal_(1, 0.1)
    layer.eval()


def save_state(layer, folder):
    os.makedirs(folder)
    for key, t in layer.state_dict().items():
        np.save(os.path.join(folder, key + ".npy"), t.detach().numpy())


def check_decoder_layers(linattn, tmp, rng):
    """nn.TransformerDecoderLayer against `linattn block --layer decoder`."""
    passed = failed = 0
    for i, (precision, norm, activation, causal) in enumerate(case_list()):
        d = [8, 16, 32][i % 3]
        heads = [1, d, 4][(i // 3) % 3]
        d_ff = [24, 64][i % 2]
        n, m = [(1, 6), (9, 4), (70, 33)][(i // 2) % 3]
        batched = i % 2 == 0
        dtype = torch.float32 if precision == "float32" else torch.float64
        np_dtype = np.float32 if precision == "float32" else np.float64
        layer = torch.nn.TransformerDecoderLayer(
            d, heads, d_ff, dropout=0.0, activation=activation, batch_first=True,
            norm_first=norm == "pre", dtype=dtype)
        randomise(layer)
        folder = os.path.join(tmp, "dw%d" % i)
        save_state(layer, folder)
        shape, mem_shape = ((2, n, d), (2, m, d)) if batched else ((n, d), (m, d))
        x = rng.normal(0, 1, shape).astype(np_dtype)
        mem = rng.normal(0, 1, mem_shape).astype(np_dtype)
        x_path, mem_path = os.path.join(tmp, "dx%d.npy" % i), os.path.join(tmp, "dm%d.npy" % i)
        out = os.path.join(tmp, "dy%d.npy" % i)
        np.save(x_path, x)
        np.save(mem_path, mem)
        mask = torch.nn.Transformer.generate_square_subsequent_mask(n).to(dtype) if causal \
            else None
        with torch.no_grad():
            xt, mt = torch.from_numpy(x), torch.from_numpy(mem)
            if not batched:
                xt, mt = xt.unsqueeze(0), mt.unsqueeze(0)
            ref = layer(xt, mt, tgt_mask=mask)
            ref = (ref if batched else ref.squeeze(0)).double().numpy()
        args = [linattn, "block", "--layer", "decoder", "--weights", folder, "--x", x_path,
                "--memory", mem_path, "--out", out, "--heads", str(heads), "--norm", norm,
                "--activation", activation, "--precision", precision] + \
            (["--causal"] if causal else [])
        what = "decoder %s %s-LN %s causal=%s H=%d D=%d shape=%s M=%d" % (
            precision, norm, activation, causal, heads, d, shape, m)
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            failed += 1
            print("FAIL: %s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
            continue
        y = np.load(out).astype(np.float64)
        err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
        if y.shape != shape or not np.isfinite(err) or err >= TOL[precision]:
            failed += 1
            print("FAIL: %s: shape %s, relative error %.3g" % (what, y.shape, err))
        else:
            passed += 1
            print("ok: %s: relative error %.2g" % (what, err))
    return passed, failed


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: block_torch.py BUILD/linattn")
    linattn = sys.argv[1]
    seed = int(os.environ.get("LA_TEST_SEED", int.from_bytes(os.urandom(4), "little")))
    print("block_torch: torch %s, seed %d (replay with LA_TEST_SEED=%d)" % (torch.__version__, seed, seed))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (precision, norm, activation, causal) in enumerate(case_list()):
            d = [8, 16, 32][i % 3]
            heads = [1, d, 4][(i // 3) % 3]
            d_ff = [24, 64][i % 2]
            n = [1, 9, 70][(i // 2) % 3]
            batched = i % 2 == 1
            dtype = torch.float32 if precision == "float32" else torch.float64
            layer = torch.nn.TransformerEncoderLayer(
                d, heads, d_ff, dropout=0.0, activation=activation, batch_first=True,
                norm_first=norm == "pre", dtype=dtype)
            randomise(layer)
            folder = os.path.join(tmp, "w%d" % i)
            save_state(layer, folder)
            shape = (2, n, d) if batched else (n, d)
            x = rng.normal(0, 1, shape).astype(np.float32 if precision == "float32" else np.float64)
            x_path, out = os.path.join(tmp, "x%d.npy" % i), os.path.join(tmp, "y%d.npy" % i)
            np.save(x_path, x)
            mask = torch.triu(torch.full((n, n), float("-inf"), dtype=dtype), 1) if causal else None
            with torch.no_grad():
                xt = torch.from_numpy(x)
                ref = layer(xt if batched else xt.unsqueeze(0), src_mask=mask)
                ref = (ref if batched else ref.squeeze(0)).double().numpy()
            args = [linattn, "block", "--weights", folder, "--x", x_path, "--out", out,
                    "--heads", str(heads), "--norm", norm, "--activation", activation,
                    "--precision", precision] + (["--causal"] if causal else [])
            what = "%s %s-LN %s causal=%s H=%d D=%d shape=%s" % (
                precision, norm, activation, causal, heads, d, shape)
            p = subprocess.run(args, capture_output=True, text=True)
            if p.returncode != 0:
                failed += 1
                print("FAIL: %s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
                continue
            y = np.load(out).astype(np.float64)
            err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
            if y.shape != shape or not np.isfinite(err) or err >= TOL[precision]:
                failed += 1
                print("FAIL: %s: shape %s, relative error %.3g" % (what, y.shape, err))
            else:
                passed += 1
                print("ok: %s: relative error %.2g" % (what, err))
        p, f = check_decoder_layers(linattn, tmp, rng)
        passed, failed = passed + p, failed + f
    print("block_torch: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
