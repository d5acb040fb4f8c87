#!/usr/bin/python3
"""peer_torch.py — PyTorch's attention on the same shapes as `linattn bench`, as a peer.

Usage: /usr/bin/python3 scripts/peer_torch.py [--pass forward|train] [--n LIST]
                                              [--linattn BUILD/linattn]
(needs Debian's python3-torch: `scripts/ensure-deps torch`, or `make check-torch`,
installs it)

Times, on 2 threads, B = 1, H = 8, d = 64, float32, N = 1024 and 4096:
  softmax attention written as PyTorch code usually is (QKᵀ/√d, softmax, ·V: unfused,
  the N×N scores materialized; PyTorch 1.13 has no fused attention for the CPU),
  linear attention from standard operators (elu+1, φ(K)ᵀV, the normaliser), and with
  --pass train causal linear attention from standard operators too (the prefix states
  by cumsum of the outer products φ(k_j) v_jᵀ: what autograd stores, O(N·d²) memory).
--pass forward (the default) times the forward alone; --pass train the forward and
autograd's backward of L = Σ out ∘ dO (dO random, fixed), i.e. a training step's
attention. Median of 5 (softmax, causal linear) or 20 (linear) calls after one
warm-up. Compare with `build/linattn bench --pass train --variant softmax,linear
--n 1024,4096` run right after: two processes, so the ratio is only as good as the
machine is quiet. With --linattn (forward only; `make bench-peers` passes it) the script
runs that `linattn bench --format csv` itself right after, on the same N, and prints the
ratios linattn/PyTorch of the medians.
"""
import argparse, subprocess, time, torch

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--pass", dest="pass_", choices=("forward", "train"), default="forward")
ap.add_argument("--n", default="1024,4096", help="comma-separated N (default 1024,4096)")
ap.add_argument("--linattn", help="BUILD/linattn: print the ratios linattn/PyTorch (forward)")
args = ap.parse_args()
train = args.pass_ == "train"
torch.set_num_threads(2)
H, d = 8, 64


def softmax_attn(q, k, v):
    s = (q @ k.transpose(-1, -2)) / d ** 0.5
    return torch.softmax(s, dim=-1) @ v


def linear_attn(q, k, v):
    fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    kv = fk.transpose(-1, -2) @ v
    z = fk.sum(dim=-2)
    return (fq @ kv) / ((fq * z.unsqueeze(-2)).sum(-1, keepdim=True) + 1e-6)


def causal_linear_attn(q, k, v):
    fq, fk = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    s = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (B, H, N, d, d)
    z = torch.cumsum(fk, dim=-2)
    num = (fq.unsqueeze(-2) @ s).squeeze(-2)
    return num / ((fq * z).sum(-1, keepdim=True) + 1e-6)


def median_time(fn, q, k, v, runs):
    dout = torch.randn(q.shape[0], H, q.shape[2], d)

    def step():
        if not train:
            with torch.no_grad():
                fn(q, k, v)
            return
        for t in (q, k, v):
            t.grad = None
        fn(q, k, v).backward(dout)

    step()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


what = "forward+backward" if train else "forward"
peer = {}
for N in (int(x) for x in args.n.split(",")):
    q, k, v = (torch.randn(1, H, N, d, requires_grad=train) for _ in range(3))
    med = median_time(softmax_attn, q, k, v, 5)
    peer[("softmax", N)] = med
    print("torch %s unfused softmax attention %s N=%d H=%d d=%d 2 threads: median %.4f s"
          % (torch.__version__, what, N, H, d, med))
    med = median_time(linear_attn, q, k, v, 20)
    peer[("linear", N)] = med
    print("torch %s linear attention (elu+1, standard ops) %s N=%d: median %.5f s"
          % (torch.__version__, what, N, med))
    if train:
        med = median_time(causal_linear_attn, q, k, v, 5)
        print("torch %s causal linear attention (cumsum of outer products) %s N=%d: median %.5f s"
              % (torch.__version__, what, N, med))

if args.linattn and not train:
    out = subprocess.run([args.linattn, "bench", "--variant", "softmax,linear", "--n", args.n,
                          "--heads", str(H), "--d", str(d), "--threads", "2", "--format", "csv"],
                         capture_output=True, text=True, check=True).stdout
    lines = [l for l in out.splitlines() if l and not l.startswith("#")]
    header = lines[0].split(",")
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        key = (row["variant"], int(row["n"]))
        if row["status"] == "ok" and key in peer:
            ours = float(row["median_s"])
            print("ratio linattn/torch %s N=%d: %.3fx (%.4g s / %.4g s)"
                  % (key[0], key[1], ours / peer[key], ours, peer[key]))
