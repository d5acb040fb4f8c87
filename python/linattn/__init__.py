"""linattn — softmax, linear and approximate attention from NumPy (and PyTorch:
linattn.torch), on the kernels of liblinattn.so through ctypes.

    import numpy as np, linattn
    q = np.random.randn(8, 1024, 64).astype(np.float32)       # (H, N, d_k)
    y = linattn.attention(q, q, q, "linear", causal=True)     # (H, N, d_v)
    dq, dk, dv = linattn.attention_backward(q, q, q, np.ones_like(y), "linear", causal=True)
    [v.name for v in linattn.variants()]                      # the registry's rows

The library is the one this package was installed with (make python), or the one
LINATTN_LIBRARY names. Every call releases the GIL while the kernel runs.
"""
from typing import Dict

from . import _lib
from .attention import attention, attention_backward, attention_weights
from .cost import cost, flops, params
from .registry import Variant, variant, variants
from .state import LinearState


def config() -> Dict[str, str]:
    """What was built and what runs (la_config): version, blis_version, blis_config (the
    BLIS kernel set) and simd ("avx512, tile 8x32 (...), fused softmax 32 queries (...)":
    the float32 register tile, by CPU or timed at first use, or forced by LA_TILE, and the
    fused softmax's queries per task, by CPU or forced by LA_FUSED_QUERIES; "portable
    (LA_SIMD=off)" or "portable (no AVX-512)"), and library, the path of the shared
    library loaded."""
    c = _lib.config()
    return {"version": c.version.decode(), "blis_version": c.blis_version.decode(),
            "blis_config": c.blis_config.decode(), "simd": c.simd.decode(),
            "library": _lib.LIBRARY_PATH}


def simd() -> str:
    """The SIMD path the kernels run on (config()["simd"])."""
    return config()["simd"]


def set_num_threads(n: int) -> None:
    """Threads of every kernel (la_set_num_threads): 1..1024, run on at most the cores;
    0 restores the default (LA_NUM_THREADS, else every core).

    Raises
    ------
    ValueError
        n outside 0..1024.
    """
    _lib.check(_lib.set_num_threads(int(n)), "linattn.set_num_threads(%r)" % (n,))


def get_num_threads() -> int:
    """The threads the kernels run on (la_get_num_threads)."""
    return _lib.get_num_threads()


__version__ = config()["version"]
__all__ = ["attention", "attention_backward", "attention_weights", "LinearState", "variants",
           "variant", "Variant", "cost", "flops", "params", "config", "simd",
           "set_num_threads", "get_num_threads", "__version__"]
