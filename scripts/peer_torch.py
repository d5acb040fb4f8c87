#!/usr/bin/python3
"""peer_torch.py — PyTorch's attention on the same shapes as `linattn bench`, as a peer.

Usage: /usr/bin/python3 scripts/peer_torch.py   (needs Debian's python3-torch:
`scripts/ensure-deps torch`, or `make check-torch`, installs it)

Times, on 2 threads, B = 1, H = 8, d = 64, float32, N = 1024 and 4096:
  softmax attention written as PyTorch code usually is (QKᵀ/√d, softmax, ·V: unfused,
  the N×N scores materialised; PyTorch 1.13 has no fused attention for the CPU), and
  linear attention from standard operators (elu+1, φ(K)ᵀV, the normaliser).
Median of 5 (softmax) or 20 (linear) calls after one warm-up. Compare with
`build/linattn bench --variant softmax,linear --n 1024,4096` run right after: two
processes, so the ratio is only as good as the machine is quiet.
"""
import time, torch
torch.set_num_threads(2)
H, d = 8, 64
for N in (1024, 4096):
    q, k, v = (torch.randn(1, H, N, d) for _ in range(3))
    def attn():
        s = (q @ k.transpose(-1, -2)) / d ** 0.5
        return torch.softmax(s, dim=-1) @ v
    attn()
    ts = []
    for _ in range(5):
        t0 = time.perf_counter(); attn(); ts.append(time.perf_counter() - t0)
    ts.sort(); med = ts[2]
    print("torch %s unfused softmax attention N=%d H=%d d=%d 2 threads: median %.4f s, %.1f GFLOP/s" % (torch.__version__, N, H, d, med, 4 * H * N * N * d / med / 1e9))
    # linear attention from standard ops, elu+1
    def lin():
        fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
        kv = fk.transpose(-1, -2) @ v
        z = fk.sum(dim=-2)
        return (fq @ kv) / ((fq * z.unsqueeze(-2)).sum(-1, keepdim=True) + 1e-6)
    lin(); ts = []
    for _ in range(20):
        t0 = time.perf_counter(); lin(); ts.append(time.perf_counter() - t0)
    ts.sort(); med = ts[10]
    print("torch %s linear attention (elu+1, standard ops) N=%d: median %.5f s" % (torch.__version__, N, med))
