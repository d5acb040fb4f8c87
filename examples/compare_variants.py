"""compare_variants.py — softmax attention against the variants that approximate it: each
one's relative error to softmax and its time, on your arrays or random ones.

    python examples/compare_variants.py                   # random (8, 2048, 64) float32
    python examples/compare_variants.py q.npy k.npy v.npy  # (N, d), (H, N, d) or (B, H, N, d)
"""
import sys
import time

import numpy as np

import linattn

if len(sys.argv) == 4:
    q, k, v = (np.load(path) for path in sys.argv[1:])
else:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((8, 2048, 64), dtype=np.float32) for _ in range(3))

exact = linattn.attention(q, k, v, "softmax")
print("%-10s %14s %10s" % ("variant", "error vs softmax", "time (ms)"))
for name, params in [("softmax", {}), ("linear", {}), ("hard", {}),
                     ("favor", {"features": 256}), ("local", {"window": 128})]:
    start = time.perf_counter()
    y = linattn.attention(q, k, v, name, **params)
    ms = 1e3 * (time.perf_counter() - start)
    error = np.linalg.norm(y - exact) / np.linalg.norm(exact)
    print("%-10s %14.3g %10.2f" % (name, error, ms))
