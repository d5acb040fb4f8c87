#!/usr/bin/python3
"""check_torch_train.py — `linattn train` against PyTorch 1.13: one step of the same model
on the same batch gives the same loss, the same gradient of every tensor, and the same
weights after one AdamW step (with gradient clipping).

Usage: /usr/bin/python3 scripts/check_torch_train.py BUILD/linattn   (run by `make check-torch`)

For each case (float32 and float64; softmax and linear attention; pre-LN and post-LN; and
softmax pre-LN with learned positions and the head tied to the embedding) two
runs of `linattn train --task copy --steps 1` on a small model:
  A  --lr 0 --clip 0: its checkpoint holds the initial weights (a rate of 0 leaves them)
     and AdamW's first moment m = (1 − β₁)·g, so g = m / (1 − β₁); its log's train_loss
     is the batch's loss;
  B  --lr 0.01 --clip 0.5 --weight-decay 0.1: its checkpoint holds the weights after one
     clipped AdamW step.
PyTorch builds the model train.h describes with its own modules: nn.Embedding plus the
sinusoidal table, nn.TransformerEncoderLayer (dropout 0, norm_first, a causal additive
mask) — for linear attention the same layer with its attention computed by standard ops,
φ(x) = elu(x) + 1, y_i = Σ_{j<=i} φ(q_i)·φ(k_j) v_j / (Σ_{j<=i} φ(q_i)·φ(k_j) + 1e-6) —
then nn.LayerNorm and nn.Linear; loads A's weights; rebuilds the copy task's batch from the
seed (the generator of lib/train/tasks.c, in Python); and runs cross_entropy, backward,
clip_grad_norm_ and torch.optim.AdamW (in float32 on linattn's gradients, once those are
compared: Adam's first step lr·g/(|g| + ε) magnifies the float32 rounding of a gradient
near ε; in float64 on PyTorch's own). And every layer of A's checkpoint, loaded by
`linattn block --prefix layers.i.`, against the same PyTorch layer on a random input.
Relative errors (‖a − b‖ / ‖b‖ per tensor) must be
below 1e-4 in float32 and 1e-10 in float64. Exits 1 on any failure.
"""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TOL = {"float32": 1e-4, "float64": 1e-10}
V_COPY, D, H, FF, L, N, B = 12, 16, 2, 24, 2, 12, 3
BETA1 = 0.9

# ---------------------------------------------------------------- the batches (tasks.c)
M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """la_train_rng: draw i is mix64(mix64(seed) + i·γ), i = 1, 2, …"""

    def __init__(self, seed):
        self.key, self.counter = mix64(seed), 0

    def next(self):
        self.counter += 1
        return mix64((self.key + self.counter * GAMMA) & M64)

    def below(self, n):
        limit = M64 - M64 % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def copy_batch(seed, batch, n):
    """la_train_task_batch for copy (max length n/2): tokens, targets (batch, n)"""
    rng = Rng(seed)
    tok = np.zeros((batch, n), np.int64)
    tgt = np.full((batch, n), -1, np.int64)
    for b in range(batch):
        length = 1 + rng.below(n // 2)
        for i in range(length):
            x = 1 + rng.below(10)
            tok[b, i] = x
            if length + 1 + i < n:
                tok[b, length + 1 + i] = x
            tgt[b, length + i] = x
        tok[b, length] = 11
    return torch.tensor(tok), torch.tensor(tgt)


# ---------------------------------------------------------------- the model in PyTorch

class LinearAttentionLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer with causal linear attention in place of softmax: the
    same parameters, the same arrangement of norms and residuals."""

    def _sa_block(self, x, attn_mask, key_padding_mask):
        b, n, d = x.shape
        h = self.self_attn.num_heads
        qkv = F.linear(x, self.self_attn.in_proj_weight, self.self_attn.in_proj_bias)
        q, k, v = (t.reshape(b, n, h, d // h).transpose(1, 2) for t in qkv.split(d, -1))
        fq, fk = F.elu(q) + 1, F.elu(k) + 1
        a = (fq @ fk.transpose(-1, -2)) * torch.ones(n, n, dtype=x.dtype).tril()
        y = (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)
        y = y.transpose(1, 2).reshape(b, n, d)
        return self.dropout1(self.self_attn.out_proj(y))


class Model(nn.Module):
    def __init__(self, attention, pre_ln, learned, tied, dtype):
        super().__init__()
        layer = LinearAttentionLayer if attention == "linear" else nn.TransformerEncoderLayer
        self.embedding = nn.Embedding(V_COPY, D)
        self.layers = nn.ModuleList(
            [layer(D, H, FF, dropout=0.0, batch_first=True, norm_first=pre_ln)
             for _ in range(L)])
        self.norm = nn.LayerNorm(D, eps=1e-5)
        self.head = nn.Linear(D, V_COPY)
        if tied:
            self.head.weight = self.embedding.weight
        if learned:
            self.pos_embedding = nn.Embedding(N, D)
        t = torch.arange(N, dtype=torch.float64)[:, None]
        i = torch.arange(0, D, 2, dtype=torch.float64)
        pos = torch.zeros(N, D, dtype=torch.float64)
        pos[:, 0::2] = torch.sin(t / 10000 ** (i / D))
        pos[:, 1::2] = torch.cos(t / 10000 ** (i / D))
        self.register_buffer("positions", pos)
        self.to(dtype)

    def forward(self, tokens):
        x = self.embedding(tokens) + (self.pos_embedding.weight if hasattr(self, "pos_embedding")
                                      else self.positions)
        mask = torch.full((N, N), float("-inf"), dtype=x.dtype).triu(1)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.head(self.norm(x))


# ---------------------------------------------------------------- the check

def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


def train_run(binary, tmp, name, flags):
    ck, log = os.path.join(tmp, name), os.path.join(tmp, name + ".csv")
    p = subprocess.run([binary, "train", "--steps", "1", "--eval-every", "1", "--checkpoint",
                        ck, "--log", log] + flags, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("linattn train failed: " + p.stderr.strip())
    with open(log) as f:
        rows = [l for l in f.read().splitlines() if l and not l.startswith("#")]
    loss = float(dict(zip(rows[0].split(","), rows[1].split(",")))["train_loss"])
    return ck, loss


def check_case(binary, tmp, precision, attention, norm, seed, learned=False, tied=False):
    dtype = torch.float32 if precision == "float32" else torch.float64
    tol = TOL[precision]
    flags = ["--task", "copy", "--attention", attention, "--norm", norm, "--precision",
             precision, "--d-model", str(D), "--heads", str(H), "--d-ff", str(FF), "--layers",
             str(L), "--seq-len", str(N), "--batch", str(B), "--seed", str(seed), "--warmup",
             "0", "--threads", "1", "--positions", "learned" if learned else "sinusoidal",
             "--head", "tied" if tied else "separate"]
    tag = "%s %s %s-LN%s%s" % (precision, attention, norm, " learned" if learned else "",
                               " tied" if tied else "")
    a, loss_a = train_run(binary, tmp, tag.replace(" ", "_") + "_a",
                          flags + ["--lr", "0", "--clip", "0"])
    b, _ = train_run(binary, tmp, tag.replace(" ", "_") + "_b",
                     flags + ["--lr", "0.01", "--clip", "0.5", "--weight-decay", "0.1"])
    model = Model(attention, norm == "pre", learned, tied, dtype)
    model.train()
    # the parameters (a tied head.weight is embedding.weight: one file, one parameter)
    state = {k: torch.tensor(np.load(os.path.join(a, k + ".npy")))
             for k, _ in model.named_parameters()}
    missing = model.load_state_dict(state, strict=False).missing_keys
    assert set(missing) <= {"positions", "head.weight"}, missing
    failures = []
    # every layer of the checkpoint through `linattn block --prefix layers.i.` on a random
    # input against the same PyTorch layer (the check of loading a layer from a checkpoint)
    x = np.random.default_rng(seed).standard_normal((B, N, D)).astype(
        np.float32 if precision == "float32" else np.float64)
    mask = torch.full((N, N), float("-inf"), dtype=dtype).triu(1)
    x_path, y_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(x_path, x)
    for i, layer in enumerate(model.layers):
        p = subprocess.run([binary, "block", "--weights", a, "--prefix", "layers.%d." % i,
                            "--x", x_path, "--out", y_path, "--heads", str(H), "--norm", norm,
                            "--causal", "--variant", attention, "--precision", precision,
                            "--threads", "1"], capture_output=True, text=True)
        if p.returncode != 0:
            failures.append("block --prefix layers.%d.: %s" % (i, p.stderr.strip()))
            continue
        with torch.no_grad():
            want = layer(torch.tensor(x), src_mask=mask).double().numpy()
        e = rel(np.load(y_path), want)
        if not e < tol:
            failures.append("block --prefix layers.%d.: %.1e" % (i, e))
    tokens, targets = copy_batch(seed, B, N)
    logits = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, V_COPY), targets.reshape(-1), ignore_index=-1)
    loss.backward()
    e = abs(loss_a - loss.item()) / abs(loss.item())
    if not e < tol:
        failures.append("loss %.12g, PyTorch %.12g (%.1e)" % (loss_a, loss.item(), e))
    worst = 0.0
    for k, t in model.named_parameters():
        g = np.load(os.path.join(a, "optim.exp_avg." + k + ".npy")).astype(np.float64) / (1 - BETA1)
        e = rel(g, t.grad.double().numpy())
        worst = max(worst, e)
        if not e < tol:
            failures.append("gradient of %s: %.1e" % (k, e))
        if precision == "float32":
            # Adam's first step moves θ by lr·g/(|g| + ε): for an element whose gradient is
            # near ε = 1e-8 (a ReLU unit that hardly fires) a float32 rounding of g moves
            # θ by a visible part of lr. The step is compared on linattn's gradients,
            # which the lines above compared with PyTorch's; in float64 on PyTorch's own.
            t.grad = torch.tensor(g, dtype=dtype)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.1)
    opt.step()
    for k, t in model.named_parameters():
        ours, theirs = np.load(os.path.join(b, k + ".npy")), t.detach().double().numpy()
        if attention == "softmax" and k.endswith("in_proj_bias"):
            # the keys' bias: its gradient is zero in exact arithmetic (a softmax row does
            # not change when q·b_k is added to all its scores), so what either side
            # computes is rounding noise, and Adam's step m/(√v + ε) turns noise above ε
            # into ±lr either way. Only its bound is checked; the rest as every tensor.
            start = state[k].double().numpy()[D:2 * D]
            if not np.all(np.abs(ours[D:2 * D] - start) <= 0.0101):
                failures.append("%s: a key bias moved more than lr" % k)
            ours = np.concatenate([ours[:D], ours[2 * D:]])
            theirs = np.concatenate([theirs[:D], theirs[2 * D:]])
        e = rel(ours, theirs)
        worst = max(worst, e)
        if not e < tol:
            failures.append("%s after the step: %.1e" % (k, e))
    print("%s: %s (loss %.6f, worst relative error %.1e)"
          % (tag, "ok" if not failures else "FAILED: " + "; ".join(failures[:4]),
             loss.item(), worst))
    return not failures


def main():
    if len(sys.argv) != 2:
        print("usage: check_torch_train.py BUILD/linattn", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    env_seed = os.environ.get("LA_TEST_SEED")
    seed = int(env_seed) if env_seed else int.from_bytes(os.urandom(3), "little")
    print("check_torch_train: seed %d (replay with LA_TEST_SEED=%d)" % (seed, seed))
    torch.set_num_threads(1)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for precision in ("float32", "float64"):
            for attention in ("softmax", "linear"):
                for norm in ("pre", "post"):
                    if check_case(binary, tmp, precision, attention, norm, seed):
                        passed += 1
                    else:
                        failed += 1
            # learned positions and a head tied to the embedding
            if check_case(binary, tmp, precision, "softmax", "pre", seed, True, True):
                passed += 1
            else:
                failed += 1
    print("check_torch_train: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
