#!/usr/bin/python3
"""bench_train_torch.py — one training step of the copy model in linattn against the same
model's step in PyTorch 1.13 on the same threads, and where linattn's step goes: the
training case of `make bench-peers` (docs/performance.md).

Usage: /usr/bin/python3 scripts/bench_train_torch.py BUILD/linattn [--threads T] [--rounds R]

The model is `linattn train`'s default for the copy task: 2 layers, D = 64, 4 heads,
d_ff = 128, pre-LN, ReLU, sinusoidal positions, vocabulary 12, N = 64, batch 16, float32;
softmax attention (nn.TransformerEncoderLayer with a causal mask) and causal linear
attention (elu + 1; in PyTorch the masked-product formulation of check_torch_train.py).
A step is forward, cross-entropy on the copied half, backward, clip_grad_norm_(1) and
AdamW, on one batch. linattn's step comes from `linattn train-speed --n 64 --tokens 1024`
(the median of a whole step, then each layer kind alone on the step's shapes); PyTorch's
is the median over repetitions of at least --min-time seconds. The two alternate, R
rounds (default 3), and each side's median over the rounds is reported with the ratio
PyTorch / linattn (goal: at least 2). The projections' and FFN's forward-and-backward
rate is set against BLIS sgemm (2000³) measured by `linattn bench` in the same run
(goal: at least 60%). Exits 1 when torch is missing or a run fails; the goals are
reported, not enforced (the machine may be shared).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

V, D, H, FF, L, N, B = 12, 64, 4, 128, 2, 64, 16
VARIANTS = [("softmax", "softmax"), ("linear_elu", "linear")]
PARTS = ["attention_s", "projections_s", "ffn_s", "norms_s", "head_s", "optimizer_s", "other_s"]


def csv_rows(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
    header = lines[0].split(",")
    return [dict(zip(header, l.split(","))) for l in lines[1:]]


def linattn_round(binary, tmp, threads, min_time, r):
    out = os.path.join(tmp, "speed%d.csv" % r)
    p = subprocess.run([binary, "train-speed", "--n", str(N), "--tokens", str(N * B),
                        "--variants", ",".join(v for v, _ in VARIANTS), "--threads",
                        str(threads), "--min-time", str(min_time), "--out", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("linattn train-speed failed: " + p.stderr.strip()[-300:])
    return {row["variant"]: row for row in csv_rows(out)}


def sgemm_gflops(binary, threads):
    p = subprocess.run([binary, "bench", "--format", "csv", "--n", "64", "--variant", "softmax",
                        "--threads", str(threads), "--reps", "3"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("linattn bench failed: " + p.stderr.strip()[-300:])
    lines = [l for l in p.stdout.splitlines() if l and not l.startswith("#")]
    header = lines[0].split(",")
    for l in lines[1:]:
        row = dict(zip(header, l.split(",")))
        if row["variant"] == "sgemm":
            return float(row["gflops"])
    raise RuntimeError("no sgemm row in linattn bench's output")


def torch_step_time(torch, F, model, tokens, targets, opt, min_time):
    def step():
        opt.zero_grad(set_to_none=False)
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    step()  # warm-up
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.5)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("bench_train_torch.py: torch is not installed (make check-torch)", file=sys.stderr)
        return 1
    import check_torch_train as ctt  # the model of check_torch_train.py, at these sizes
    ctt.V_COPY, ctt.D, ctt.H, ctt.FF, ctt.L, ctt.N = V, D, H, FF, L, N
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    tokens, targets = ctt.copy_batch(0, B, N)
    models = {}
    for name, kind in VARIANTS:
        m = ctt.Model(kind, True, False, False, torch.float32)  # pre-LN, sinusoidal, untied
        m.train()
        models[name] = (m, torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01))
    ours = {name: [] for name, _ in VARIANTS}
    theirs = {name: [] for name, _ in VARIANTS}
    last = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            rows = linattn_round(a.binary, tmp, a.threads, a.min_time, r)
            for name, _ in VARIANTS:
                ours[name].append(float(rows[name]["step_s"]))
                last[name] = rows[name]
                m, opt = models[name]
                theirs[name].append(torch_step_time(torch, F, m, tokens, targets, opt,
                                                    a.min_time))
    sgemm = sgemm_gflops(a.binary, a.threads)
    print("training step of the copy model (L = %d, D = %d, H = %d, d_ff = %d, N = %d, "
          "batch %d, float32), %d threads, torch %s; load average %s"
          % (L, D, H, FF, N, B, a.threads, torch.__version__,
             " ".join(open("/proc/loadavg").read().split()[:3])))
    print("%-11s %12s %12s %14s" % ("variant", "linattn ms", "PyTorch ms", "PyTorch/linattn"))
    for name, _ in VARIANTS:
        o, t = statistics.median(ours[name]), statistics.median(theirs[name])
        print("%-11s %12.3f %12.3f %13.2fx  (goal >= 2x)" % (name, o * 1e3, t * 1e3, t / o))
    print("\nwhere linattn's step goes (each layer kind alone, forward + backward, last round):")
    print("%-11s " % "variant" + " ".join("%11s" % p[:-2] for p in PARTS))
    for name, _ in VARIANTS:
        row = last[name]
        step = float(row["step_s"])
        print("%-11s " % name + " ".join("%10.0f%%" % (100 * float(row[p]) / step) for p in PARTS))
    for name, _ in VARIANTS:
        g = float(last[name]["gemm_gflops"])
        print("%s: projections and FFN, forward + backward: %.1f GFLOP/s = %.0f%% of sgemm "
              "(%.1f GFLOP/s, same run; goal >= 60%%)" % (name, g, 100 * g / sgemm, sgemm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
