"""bench_python.py — what calling linattn from Python costs, and linattn.torch against
PyTorch's own operators: the numbers of `make bench-python` (docs/performance.md).

Usage: build/venv/bin/python scripts/bench_python.py [--threads T] [--n N] [--out FILE.csv]

One process, one thread count T for linattn and PyTorch (default: linattn's, every core),
float32, B = 1, N = 4,096 in (b) and (c) (--n: another multiple of 64). Every comparison
alternates its contenders run by run and takes the median of each, so both see the same
machine:
  (a) call overhead, softmax, H = 1, N = 64, d = 64, on one thread: linattn.attention's
      median time minus the bare C call's (goal: under 20 us). One thread, because with
      two on a busy 2-core machine the difference swung between 70 and 580 us from run
      to run (25-33 us on one thread): it measured when the second thread got a core
      again, not the package;
  (b) N = 4,096, H = 8, d = 64, softmax and causal linear: linattn.attention's median time
      over the bare C call's (goal: at most 1.03);
  (c) N = 4,096, H = 8, d = 64: forward and backward (autograd, L = sum(out * dO)) of
      linattn.torch.attention against PyTorch's operators: softmax as QKᵀ/√d, softmax, ·V
      (the N×N scores materialized; F.scaled_dot_product_attention where PyTorch has it),
      causal linear attention (elu+1, eps 1e-6) as the prefix sums of the outer products
      φ(k_j) v_jᵀ by cumsum (fast-transformers' reference formulation) and in chunks of 64
      (intra-chunk masked products plus the chunks' prefix states). Before timing, each
      pair's outputs and gradients are compared (norm-wise relative error at most 1e-3):
      a mismatch exits 1. Skipped when torch is not installed.
The bare C call is la_attention through ctypes on a problem and arrays prepared once
(examples/call_overhead.py's method): the kernel and ctypes' own call, none of the
package's checking, conversion or output allocation. It differs from a C program's call
only by ctypes' call, so (a) is what the package adds over ctypes, and (b) compares with
the kernel itself, in the same process, on the same arrays and threads.
The table is printed and written with the machine (lscpu's model name, cores), date,
commit and load average to FILE.csv (default build/bench-python.csv).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import linattn
from linattn import _lib
from linattn.attention import _Prepared

H, N, D = 8, 4096, 64
EPS = 1e-6  # linattn's default eps, LA_DEFAULT_EPS
TOLERANCE = 1e-3


def medians(contenders, runs, repeats=1):
    """The median over runs of each contender's mean time per call (seconds), the
    contenders alternating run by run after one warm-up call each."""
    for fn in contenders:
        fn()
    times = [[] for _ in contenders]
    for _ in range(runs):
        for fn, ts in zip(contenders, times):
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            ts.append((time.perf_counter() - start) / repeats)
    return [float(np.median(ts)) for ts in times]


def bare_call(q, k, v, variant, causal):
    """la_attention through ctypes on q, k, v and an output prepared once: a function of
    no arguments (its arrays live as long as it does)."""
    call = _Prepared(q, k, v, variant, "bhnd", {"causal": causal}, {})
    _, o4 = call.output(None)
    arrays = (call.q, call.k, call.v, o4)
    addresses = [_lib.address(a) for a in arrays]
    kernel, problem, dtype = call.variant.kernel, call.call.problem, call.la_dtype

    def run(arrays=arrays):
        _lib.check(_lib.attention(kernel, problem, dtype, *addresses), "la_attention")
    return run


def row(part, what, variant, causal, h, n, linattn_s, reference, reference_s, metric,
        value, goal="", verdict=""):
    return dict(part=part, what=what, variant=variant, causal=int(causal), heads=h, n=n,
                d=D, threads=linattn.get_num_threads(), linattn_s=linattn_s, reference=reference, reference_s=reference_s,
                metric=metric, value=value, goal=goal, verdict=verdict)


def call_overhead(rng):
    """(a): linattn.attention against the bare call at H = 1, N = 64, on one thread."""
    q, k, v = (rng.standard_normal((1, 64, D), dtype=np.float32) for _ in range(3))
    bare = bare_call(q, k, v, "softmax", False)
    before = _lib.num_threads_requested()
    linattn.set_num_threads(1)
    try:
        py, c = medians([lambda: linattn.attention(q, k, v, "softmax"), bare], runs=21,
                        repeats=200)
    finally:
        linattn.set_num_threads(before)
    us = 1e6 * (py - c)
    r = row("a", "call overhead", "softmax", False, 1, 64, py, "C call (ctypes)", c,
            "difference_us", us, "< 20", "met" if us < 20 else "not met")
    r["threads"] = 1
    return r


def large_call(rng, variant, causal, runs, repeats):
    """(b): linattn.attention over the bare call at H = 8, N = 4,096."""
    q, k, v = (rng.standard_normal((H, N, D), dtype=np.float32) for _ in range(3))
    bare = bare_call(q, k, v, variant, causal)
    py, c = medians([lambda: linattn.attention(q, k, v, variant, causal=causal), bare],
                    runs=runs, repeats=repeats)
    ratio = py / c
    return row("b", "Python call / C call", variant, causal, H, N, py, "C call (ctypes)", c,
               "ratio", ratio, "<= 1.03", "met" if ratio <= 1.03 else "not met")


def torch_peers(torch):
    """(c)'s PyTorch formulations: name -> (variant, causal, function of q, k, v)."""
    F = torch.nn.functional

    def softmax(q, k, v):
        s = (q @ k.transpose(-1, -2)) / D ** 0.5
        return torch.softmax(s, dim=-1) @ v

    def linear_cumsum(q, k, v):
        fq, fk = F.elu(q) + 1, F.elu(k) + 1
        s = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (B, H, N, d, d)
        z = torch.cumsum(fk, dim=-2)                                   # (B, H, N, d)
        num = (fq.unsqueeze(-2) @ s).squeeze(-2)
        return num / ((fq * z).sum(-1, keepdim=True) + EPS)

    def linear_chunked(q, k, v, c=64):
        b, h, n, d = q.shape
        fq = (F.elu(q) + 1).reshape(b, h, n // c, c, d)
        fk = (F.elu(k) + 1).reshape(b, h, n // c, c, d)
        vc = v.reshape(b, h, n // c, c, v.shape[-1])
        # the state before each chunk: the exclusive prefix sums of the chunks' φ(K)ᵀV, φ(K)
        kv, ks = fk.transpose(-1, -2) @ vc, fk.sum(-2)
        s, z = torch.cumsum(kv, dim=2) - kv, torch.cumsum(ks, dim=2) - ks
        # inside a chunk: the masked c × c products φ(q_i)·φ(k_j), j <= i
        a = (fq @ fk.transpose(-1, -2)) * torch.ones(c, c).tril()
        num = fq @ s + a @ vc
        den = (fq * z.unsqueeze(-2)).sum(-1, keepdim=True) + a.sum(-1, keepdim=True)
        return (num / (den + EPS)).reshape(b, h, n, v.shape[-1])

    sdpa = getattr(F, "scaled_dot_product_attention", None)
    return [
        ("softmax", False, "torch SDPA" if sdpa else "torch matmul+softmax+matmul",
         sdpa or softmax),
        ("linear", True, "torch cumsum of outer products", linear_cumsum),
        ("linear", True, "torch chunked (C = 64)", linear_chunked),
    ]


def relative_error(a, b):
    return float((a - b).norm() / b.norm())


def torch_train(torch, seed, threads):
    """(c): forward+backward of linattn.torch.attention against PyTorch's operators."""
    import linattn.torch as lt
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    q, k, v = (torch.randn(1, H, N, D, requires_grad=True) for _ in range(3))
    d_out = torch.randn(1, H, N, D)

    def train_step(fn):
        def run():
            for t in (q, k, v):
                t.grad = None
            fn(q, k, v).backward(d_out)
            return [t.grad for t in (q, k, v)]
        return run

    rows, results = [], {}
    for variant, causal, name, peer in torch_peers(torch):
        ours = train_step(lambda q, k, v: lt.attention(q, k, v, variant, causal=causal))
        theirs = train_step(peer)
        # the same function first: outputs and gradients to float32 rounding
        if (variant, causal) not in results:
            with torch.no_grad():
                out = lt.attention(q, k, v, variant, causal=causal)
            results[variant, causal] = (out, ours())
        out, grads = results[variant, causal]
        with torch.no_grad():
            err = relative_error(out, peer(q, k, v))
        err = max([err] + [relative_error(a, b) for a, b in zip(grads, theirs())])
        if not err <= TOLERANCE:
            sys.exit("bench_python: linattn.torch %s%s and %s disagree: relative error %.3g"
                     % (variant, " causal" if causal else "", name, err))
        t_ours, t_theirs = medians([ours, theirs], runs=5)
        r = row("c", "forward+backward", variant, causal, H, N, t_ours, name, t_theirs,
                "speedup", t_theirs / t_ours)
        r["rel_err"] = err
        rows.append(r)
    return rows


def machine():
    """lscpu's model name and the online cores."""
    name = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True,
                             env=dict(os.environ, LC_ALL="C")).stdout
        name = next((line.split(":", 1)[1].strip() for line in out.splitlines()
                     if line.startswith("Model name:")), "")
    except OSError:
        pass
    return name or "unknown", os.cpu_count() or 0


def commit():
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


COLUMNS = ("part", "what", "variant", "causal", "heads", "n", "d", "threads", "linattn_s", "reference",
           "reference_s", "metric", "value", "goal", "verdict", "rel_err")


def write_csv(path, header, rows):
    """The rows under # header lines, written whole or not at all."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bench-python.", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            for key, value in header:
                f.write("# %s: %s\n" % (key, value))
            f.write(",".join(COLUMNS) + "\n")
            for r in rows:
                f.write(",".join(("%.6g" % r[c]) if isinstance(r.get(c), float)
                                 else str(r.get(c, "")) for c in COLUMNS) + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def print_table(rows):
    print("%-4s %-22s %-26s %2s %12s  %-30s %12s %10s  %s" % (
        "part", "what", "problem", "T", "linattn (s)", "against", "(s)", "result", "goal"))
    for r in rows:
        problem = "%s%s H=%d N=%d" % (r["variant"], " causal" if r["causal"] else "",
                                      r["heads"], r["n"])
        result = {"difference_us": "%+.1f us", "ratio": "%.3f", "speedup": "%.2fx"}[
            r["metric"]] % r["value"]
        goal = (r["goal"] + " " + r["verdict"]).strip()
        print("%-4s %-22s %-26s %2d %12.6f  %-30s %12.6f %10s  %s" % (
            r["part"], r["what"], problem, r["threads"], r["linattn_s"], r["reference"],
            r["reference_s"], result, goal))


def main():
    global N
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for linattn and PyTorch (default: linattn's, every core)")
    ap.add_argument("--out", default="build/bench-python.csv")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=N,
                    help="N of (b) and (c), a multiple of 64 (default 4096)")
    args = ap.parse_args()
    if args.n < 64 or args.n % 64:
        ap.error("--n must be a positive multiple of 64")
    N = args.n
    if args.threads:
        linattn.set_num_threads(args.threads)
    threads = linattn.get_num_threads()
    load_start = os.getloadavg()
    rng = np.random.default_rng(args.seed)
    print("bench-python: %d threads, seed %d, load average %.2f %.2f %.2f"
          % ((threads, args.seed) + load_start))

    rows = [call_overhead(rng),
            large_call(rng, "softmax", False, runs=7, repeats=1),
            large_call(rng, "linear", True, runs=21, repeats=3)]
    try:
        import torch
    except ImportError:
        torch = None
        print("bench-python: (c) skipped: PyTorch is not installed "
              "(scripts/ensure-deps torch installs Debian's python3-torch)")
    if torch is not None:
        rows += torch_train(torch, args.seed, threads)

    print_table(rows)
    load_end = os.getloadavg()
    print("load average at the end: %.2f %.2f %.2f" % load_end)
    cpu, cores = machine()
    write_csv(args.out, [
        ("linattn bench-python", "linattn.attention against the bare C call, and "
         "linattn.torch forward+backward against PyTorch's operators (float32, B = 1, d = 64)"),
        ("command", " ".join([os.path.relpath(sys.executable)] + sys.argv)),
        ("date", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
        ("git_commit", commit()),
        ("cpu", cpu), ("cores", cores), ("threads", threads),
        ("load_start", "%.2f %.2f %.2f" % load_start),
        ("load_end", "%.2f %.2f %.2f" % load_end),
        ("linattn", "%s, %s" % (linattn.__version__, linattn.simd())),
        ("torch", torch.__version__ if torch is not None else "not installed"),
    ], rows)
    print("bench-python: written to %s" % args.out)


if __name__ == "__main__":
    main()
