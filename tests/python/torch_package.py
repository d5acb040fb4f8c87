"""torch_package.py — linattn.torch (python/linattn/torch.py) against PyTorch itself.

Usage: BUILD/venv/bin/python tests/python/torch_package.py   (make check-torch)

  gradcheck   torch.autograd.gradcheck in float64 of every registry variant with a
              backward: plain and causal where its rule allows, with key lengths, in the
              bhnd and bnhd layouts (the library's forward and backward against PyTorch's
              finite differences)
  no backward the other variants run under torch.no_grad() with linattn.attention's bits,
              and refuse (ValueError) where a gradient is needed
  modules     SoftmaxAttention and LinearAttention against the formulas in torch ops;
              MultiheadAttention against torch.nn.MultiheadAttention with the same
              state_dict: outputs, averaged and per-head weights, and the gradients of
              inputs and parameters, with bool and -inf masks, key_padding_mask,
              batch_first and unbatched inputs, float64 and float32

Inputs are random with a printed seed; LA_TEST_SEED=N replays. Exits 1 on any failure.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "command"))
import checks  # noqa: E402

import linattn  # noqa: E402
import linattn.torch as lt  # noqa: E402


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return float("inf")
    norm = b.norm().item()
    return (a - b).norm().item() / (norm if norm > 0 else 1.0)


def gradchecks(check, gen):
    for v in linattn.variants():
        if not v.backward:
            continue
        for causal in {"allowed": [False, True], "required": [True], "refused": [False]}[
                v.causal]:
            for layout in ("bhnd", "bnhd"):
                b, h, n, m, d_k, d_v = 2, 2, 5, 6, 3, 4
                shape = (lambda r, d: (b, h, r, d)) if layout == "bhnd" else \
                    (lambda r, d: (b, r, h, d))
                q, k = (torch.randn(shape(r, d_k), generator=gen, dtype=torch.float64,
                                    requires_grad=True) for r in (n, m))
                vv = torch.randn(shape(m, d_v), generator=gen, dtype=torch.float64,
                                 requires_grad=True)
                lengths = [m, 3]

                def fn(q, k, vv):
                    return lt.attention(q, k, vv, v.name, causal=causal, layout=layout,
                                        key_lengths=lengths)
                try:
                    ok = torch.autograd.gradcheck(fn, (q, k, vv), eps=1e-6, atol=1e-6,
                                                  rtol=1e-5)
                except Exception as e:  # noqa: BLE001  (gradcheck raises on a mismatch)
                    ok = False
                    print(str(e).splitlines()[0])
                check(ok, "gradcheck %s causal=%s layout %s, key lengths %s"
                      % (v.name, causal, layout, lengths))


def no_backward(check, gen):
    q, k, vv = (torch.randn(1, 2, 6, 4, generator=gen) for _ in range(3))
    for v in linattn.variants():
        if v.backward:
            continue
        causal = v.causal == "required"
        params = {"proj_rank": 4} if "proj" in v.params else {}  # at most M = 6 rows
        with torch.no_grad():
            y = lt.attention(q, k, vv, v.name, causal=causal, **params)
        want = linattn.attention(q.numpy(), k.numpy(), vv.numpy(), v.name, causal=causal,
                                 **params)
        check(np.array_equal(y.numpy(), want), "%s under no_grad: linattn.attention's bits"
              % v.name)
        qg = q.clone().requires_grad_()
        try:
            lt.attention(qg, k, vv, v.name, causal=causal, **params)
            check(False, "%s with requires_grad: accepted" % v.name)
        except ValueError as e:
            check("no backward" in str(e), "%s with requires_grad: ValueError (%s)"
                  % (v.name, e))


def modules(check, gen):
    q, k, v = (torch.randn(2, 3, 7, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    mask = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)
    scores = (q @ k.transpose(-1, -2) / 2).masked_fill(mask, float("-inf"))
    want = torch.softmax(scores, -1) @ v
    check(rel(lt.SoftmaxAttention(causal=True)(q, k, v), want) < 1e-12,
          "SoftmaxAttention(causal=True): softmax(q kᵀ/√d, causal) v")
    phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
    a = (phi(q) @ phi(k).transpose(-1, -2)).masked_fill(mask, 0.0)
    want = (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)
    for variant in ("linear", "linear_recurrent"):
        got = lt.LinearAttention(causal=True, variant=variant)(q, k, v)
        check(rel(got, want) < 1e-12, "LinearAttention(causal=True, variant=%s): the "
              "causal φ(q)φ(k)ᵀv / (φ(q)·z + eps)" % variant)

    for dtype, tol in ((torch.float64, 1e-11), (torch.float32, 1e-5)):
        for batch_first, batched, masks in ((False, True, "none"), (True, True, "bool"),
                                            (False, True, "float"), (False, False, "bool")):
            E, H, L, S, B = 12, 3, 5, 7, 2
            torch.manual_seed(int(torch.randint(0, 1 << 30, (1,), generator=gen)))
            ours = lt.MultiheadAttention(E, H, batch_first=batch_first, dtype=dtype)
            theirs = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=dtype)
            theirs.load_state_dict(ours.state_dict())
            lead = ((B, L) if batch_first else (L, B)) if batched else (L,)
            lead_kv = ((B, S) if batch_first else (S, B)) if batched else (S,)
            x = torch.randn(lead + (E,), generator=gen, dtype=dtype)
            mem = torch.randn(lead_kv + (E,), generator=gen, dtype=dtype)
            kwargs = {}
            if masks != "none":
                attn = torch.rand(L, S, generator=gen) < 0.3
                attn[:, 0] = False  # no row hidden whole (PyTorch gives NaN there)
                kpm = torch.rand(B if batched else 1, S, generator=gen) < 0.3
                kpm[:, 0] = False
                if not batched:
                    kpm = kpm[0]
                if masks == "float":
                    attn = torch.zeros(L, S, dtype=dtype).masked_fill(attn, float("-inf"))
                kwargs = dict(attn_mask=attn, key_padding_mask=kpm)
            xs = [x.clone().requires_grad_() for _ in range(2)]
            outs = [mod(xi, mem, mem, **kwargs) for mod, xi in ((ours, xs[0]), (theirs, xs[1]))]
            per_head = [mod(x, mem, mem, average_attn_weights=False, **kwargs)[1]
                        for mod in (ours, theirs)]
            for (y, _), xi in zip(outs, xs):
                (y * y).sum().backward()
            grads = [rel(a.grad, b.grad) for a, b in zip(ours.parameters(), theirs.parameters())]
            errs = (rel(outs[0][0], outs[1][0]), rel(outs[0][1], outs[1][1]),
                    rel(per_head[0], per_head[1]), rel(xs[0].grad, xs[1].grad), max(grads))
            check(all(e < tol for e in errs) and outs[0][0].shape == outs[1][0].shape,
                  "MultiheadAttention %s batch_first=%s batched=%s masks %s: output, weights, "
                  "per-head weights, d_x, d_params against PyTorch's: %s"
                  % (str(dtype)[6:], batch_first, batched, masks,
                     ", ".join("%.1g" % e for e in errs)))
    check(sorted(ours.state_dict()) == sorted(theirs.state_dict()),
          "MultiheadAttention's state_dict keys are PyTorch's: %s" % sorted(ours.state_dict()))


def main():
    gen = torch.Generator().manual_seed(checks.seed("torch_package"))
    print("torch %s, linattn %s (%s)" % (torch.__version__, linattn.__version__,
                                        linattn.simd()))
    check = checks.Checks("torch_package")
    gradchecks(check, gen)
    no_backward(check, gen)
    modules(check, gen)
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
