#!/usr/bin/python3
"""model_torch.py — `linattn model` against PyTorch's own torch.nn.Transformer.

Usage: /usr/bin/python3 tests/command/model_torch.py BUILD/linattn   (run by `make check-torch`)

For each case it builds nn.Transformer(D, H, L, L2, d_ff, dropout=0, activation,
batch_first=True, norm_first) with PyTorch's own random initialisation (biases, γ and β
then randomised too, so that none is trivially 0 or 1), saves its state_dict as one .npy
per key, runs `linattn model` on the same source and target, and requires
‖y − y_torch‖ / ‖y_torch‖ below 1e-5 in float32 and 1e-11 in float64, PyTorch given
tgt_mask = generate_square_subsequent_mask(N). Cases: post-LN and pre-LN, ReLU and GELU,
1 to 3 layers on each side (not the same number), source and target of different
lengths, (N, D) and (B, N, D); and token ids (int64, or int32) embedded by nn.Embedding
tables saved as src_embedding.weight.npy and tgt_embedding.weight.npy. Softmax attention
only: PyTorch has no linear attention (tests/command/block_numpy.py checks linear layers).
Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "model_torch: N passed, N failed".
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
                for tokens in (False, True):
                    cases.append((precision, norm, activation, tokens))
    return cases


def randomise(model):
    """PyTorch's own initialisation, then biases, γ and β random too (none 0 or 1)."""
    with torch.no_grad():
        for name, t in model.named_parameters():
            if name.endswith("bias"):
                t.normal_(0, 0.1)
            elif ".norm" in name or name.startswith("norm"):
                t.normal_(1, 0.1)
    model.eval()


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: model_torch.py BUILD/linattn")
    linattn = sys.argv[1]
    seed = int(os.environ.get("LA_TEST_SEED", int.from_bytes(os.urandom(4), "little")))
    print("model_torch: torch %s, seed %d (replay with LA_TEST_SEED=%d)" % (
        torch.__version__, seed, seed))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (precision, norm, activation, tokens) in enumerate(case_list()):
            d = [8, 16, 32][i % 3]
            heads = [1, 4, d][(i // 3) % 3]
            d_ff = [24, 64][i % 2]
            enc_layers, dec_layers = [(1, 2), (2, 1), (3, 2)][i % 3]
            m, n = [(5, 1), (9, 12), (40, 17)][(i // 2) % 3]
            batched = i % 2 == 1
            dtype = torch.float32 if precision == "float32" else torch.float64
            np_dtype = np.float32 if precision == "float32" else np.float64
            model = torch.nn.Transformer(
                d, heads, enc_layers, dec_layers, d_ff, dropout=0.0, activation=activation,
                batch_first=True, norm_first=norm == "pre", dtype=dtype)
            randomise(model)
            folder = os.path.join(tmp, "w%d" % i)
            os.makedirs(folder)
            for key, t in model.state_dict().items():
                np.save(os.path.join(folder, key + ".npy"), t.detach().numpy())
            lead = (2,) if batched else ()
            if tokens:
                vocab_src, vocab_tgt = 11, 7
                src_emb = torch.nn.Embedding(vocab_src, d, dtype=dtype)
                tgt_emb = torch.nn.Embedding(vocab_tgt, d, dtype=dtype)
                np.save(os.path.join(folder, "src_embedding.weight.npy"),
                        src_emb.weight.detach().numpy())
                np.save(os.path.join(folder, "tgt_embedding.weight.npy"),
                        tgt_emb.weight.detach().numpy())
                int_type = np.int64 if i % 4 < 2 else np.int32
                src = rng.integers(0, vocab_src, lead + (m,)).astype(int_type)
                tgt = rng.integers(0, vocab_tgt, lead + (n,)).astype(int_type)
                with torch.no_grad():
                    src_t = src_emb(torch.from_numpy(src.astype(np.int64)))
                    tgt_t = tgt_emb(torch.from_numpy(tgt.astype(np.int64)))
            else:
                src = rng.normal(0, 1, lead + (m, d)).astype(np_dtype)
                tgt = rng.normal(0, 1, lead + (n, d)).astype(np_dtype)
                src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(tgt)
            src_path, tgt_path = os.path.join(tmp, "s%d.npy" % i), os.path.join(tmp, "t%d.npy" % i)
            out = os.path.join(tmp, "y%d.npy" % i)
            np.save(src_path, src)
            np.save(tgt_path, tgt)
            mask = torch.nn.Transformer.generate_square_subsequent_mask(n).to(dtype)
            with torch.no_grad():
                if not batched:
                    src_t, tgt_t = src_t.unsqueeze(0), tgt_t.unsqueeze(0)
                ref = model(src_t, tgt_t, tgt_mask=mask)
                ref = (ref if batched else ref.squeeze(0)).double().numpy()
            args = [linattn, "model", "--weights", folder, "--src", src_path, "--tgt", tgt_path,
                    "--out", out, "--heads", str(heads), "--norm", norm, "--activation",
                    activation, "--precision", precision]
            shape = lead + (n, d)
            what = "%s %s-LN %s %s L=%d L2=%d H=%d D=%d M=%d shape=%s" % (
                precision, norm, activation, "tokens %s" % src.dtype if tokens else "floats",
                enc_layers, dec_layers, heads, d, m, shape)
            p = subprocess.run(args, capture_output=True, text=True)
            if p.returncode != 0:
                failed += 1
                print("FAIL: %s: exit %d: %s" % (what, p.returncode, p.stderr.strip()))
                continue
            y = np.load(out)
            err = np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref)
            if y.shape != shape or y.dtype != np_dtype or not np.isfinite(err) \
                    or err >= TOL[precision]:
                failed += 1
                print("FAIL: %s: shape %s dtype %s, relative error %.3g" % (
                    what, y.shape, y.dtype, err))
            else:
                passed += 1
                print("ok: %s: relative error %.2g" % (what, err))
    print("model_torch: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
