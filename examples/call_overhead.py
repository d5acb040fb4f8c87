"""call_overhead.py — what calling linattn from Python adds to the kernel: the best time of
linattn.attention against the best time of the bare library call on the same arrays and
problem (ctypes only, everything prepared), float32 softmax.

    python examples/call_overhead.py [--threads T]
"""
import argparse
import time

import numpy as np

import linattn
from linattn import _lib
from linattn.attention import _Prepared


def best_seconds(fn, repeats, rounds=7):
    """The fastest of rounds averages over repeats calls."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        best = min(best, (time.perf_counter() - start) / repeats)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    linattn.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    print("%-22s %12s %12s %12s" % ("shape (H, N, d)", "Python (us)", "C call (us)",
                                     "difference"))
    for h, n, d, repeats in ((1, 64, 64, 2000), (8, 4096, 64, 3)):
        q, k, v = (rng.standard_normal((h, n, d), dtype=np.float32) for _ in range(3))
        call = _Prepared(q, k, v, "softmax", "bhnd", {}, {})
        out, o4 = call.output(None)
        addresses = [_lib.address(a) for a in (call.q, call.k, call.v, o4)]
        problem, kernel = call.call.problem, call.variant.kernel

        def bare():
            _lib.attention(kernel, problem, _lib.FLOAT32, *addresses)

        python = best_seconds(lambda: linattn.attention(q, k, v, "softmax"), repeats)
        c = best_seconds(bare, repeats)
        print("%-22s %12.1f %12.1f %+11.1f%s" % (
            (h, n, d), 1e6 * python, 1e6 * c, 1e6 * (python - c),
            " us" if n < 1024 else " us (%+.1f%%)" % (100 * (python - c) / c)))


if __name__ == "__main__":
    main()
