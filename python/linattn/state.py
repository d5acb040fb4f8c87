"""state.py — linattn.LinearState: causal linear attention (or FAVOR+) one token at a time on
the library's recurrent state (la_linear_state_create, la_linear_step, save, restore)."""
import ctypes
import threading
from typing import Any, Optional

import numpy as np

from . import _lib
from ._problem import DTYPES, Call, invalid
from .registry import Variant, variant as find_variant


class LinearState:
    """The recurrent state of causal linear attention for autoregressive decoding: per head
    S (F, d_v) and z (F,), zero at the start, F = d_k for linear attention, F = features
    for FAVOR+.

    Parameters
    ----------
    heads : int
        Independent heads the state serves (B·H for a batch).
    d_k, d_v : int
        Head sizes.
    variant : str or Variant
        One with the "step" capability: "linear" or "linear_recurrent" (stepping reproduces
        linattn.attention(..., "linear_recurrent", causal=True) bit for bit), "favor" or
        "favor_recurrent" (FAVOR+'s random features, the recurrent kernel to rounding).
    dtype : float32 or float64
    **params
        The variant's: feature_map and eps (linear); eps, features, seed and proj_w (FAVOR+).

    Examples
    --------
    >>> st = LinearState(heads=8, d_k=64, d_v=64)
    >>> y = st.step(q_t, k_t, v_t)        # each (8, 64) float32; y (8, 64)
    >>> snapshot = st.save(); st.restore(snapshot)

    A state is not shared between threads stepping at once: step, reset, save and restore
    hold a lock.
    """

    def __init__(self, heads: int, d_k: int, d_v: int, *, variant: Any = "linear",
                 dtype: Any = np.float32, **params: Any):
        self._state = None
        self._lock = threading.Lock()
        v = find_variant(variant)
        if "step" not in v.capabilities:
            raise invalid("linattn.LinearState: variant %s cannot step (variants with the "
                          "'step' capability do)" % v.name)
        self.variant: Variant = v
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPES:
            raise _lib.error(_lib.EDTYPE, "linattn.LinearState: dtype %s, not float32 or "
                             "float64" % self.dtype)
        dims = tuple(Call.count(name, x) for name, x in (("heads", heads), ("d_k", d_k),
                                                          ("d_v", d_v)))
        self.heads, self.d_k, self.d_v = dims
        call = Call(v, (1, dims[0], 1, 1, dims[1], dims[2]), causal=v.causal != "refused",
                    params=params)
        handle = ctypes.c_void_p()
        _lib.check(_lib.linear_state_create(handle, v.kernel, call.problem, DTYPES[self.dtype]),
                   "linattn.LinearState (%s)" % v.name)
        self._state = handle

    def _handle(self) -> ctypes.c_void_p:
        if self._state is None:
            raise invalid("linattn.LinearState: the state is closed")
        return self._state

    def _token(self, x: Any, name: str, d: int) -> np.ndarray:
        a = np.asarray(x)
        if a.dtype != self.dtype:
            raise _lib.error(_lib.EDTYPE, "linattn.LinearState.step: %s is %s, the state %s"
                             % (name, a.dtype, self.dtype))
        if a.size != self.heads * d or a.shape[-1:] != (d,):
            raise invalid("linattn.LinearState.step: %s is %s, not (heads = %d, %d) or "
                          "(B, H, %d) with B·H = heads" % (name, a.shape, self.heads, d, d))
        return np.ascontiguousarray(a)

    def step(self, q_t: Any, k_t: Any, v_t: Any, out: Optional[np.ndarray] = None) -> np.ndarray:
        """One token of every head: S += φ(k_t) v_tᵀ, z += φ(k_t), then
        y_t = φ(q_t)ᵀ S / (φ(q_t)ᵀ z + eps).

        Parameters
        ----------
        q_t, k_t : array_like, (heads, d_k) or (B, H, d_k) with B·H = heads
        v_t : array_like, (heads, d_v) or (B, H, d_v), the state's type
        out : ndarray, optional
            Written in place: C-contiguous, q_t's shape with d_v columns.

        Returns
        -------
        y_t : ndarray, q_t's shape with d_v columns

        Raises
        ------
        ValueError
            Wrong shapes or type.
        FloatingPointError
            LA_ERANGE: the state would overflow its type (state and y_t untouched; reset
            it, or use float64).
        """
        q = self._token(q_t, "q_t", self.d_k)
        k = self._token(k_t, "k_t", self.d_k)
        v = self._token(v_t, "v_t", self.d_v)
        shape = q.shape[:-1] + (self.d_v,)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)
        elif (not isinstance(out, np.ndarray) or out.dtype != self.dtype or out.shape != shape
              or not out.flags.c_contiguous or not out.flags.writeable):
            raise invalid("linattn.LinearState.step: out must be a writeable C-contiguous "
                          "%s array of shape %s" % (self.dtype, shape))
        with self._lock:
            status = _lib.linear_step(self._handle(), _lib.address(q), _lib.address(k),
                                      _lib.address(v), _lib.address(out))
        _lib.check(status, "linattn.LinearState.step")
        return out

    @property
    def position(self) -> int:
        """Tokens stepped since creation or the last reset."""
        return _lib.linear_state_position(self._handle())

    def reset(self) -> None:
        """Back to zero, position 0."""
        with self._lock:
            _lib.linear_state_reset(self._handle())

    def save(self) -> bytes:
        """The whole state (sizes, parameters, position, S, z) in this machine's byte order,
        for restore on a state made with the same arguments."""
        with self._lock:
            handle = self._handle()
            size = _lib.linear_state_save_size(handle)
            buf = ctypes.create_string_buffer(size)
            _lib.check(_lib.linear_state_save(handle, buf, size), "linattn.LinearState.save")
        return buf.raw

    def restore(self, saved: bytes) -> None:
        """Sets S, z and the position from save()'s bytes.

        Raises
        ------
        ValueError
            Bytes not saved from a state of the same variant, type, sizes and parameters, or
            holding values no state can reach (the state is left unchanged).
        """
        data = bytes(saved)
        with self._lock:
            status = _lib.linear_state_restore(self._handle(), data, len(data))
        _lib.check(status, "linattn.LinearState.restore")

    def close(self) -> None:
        """Frees the library's state (also done when the object is collected)."""
        with self._lock:
            if self._state is not None:
                _lib.linear_state_free(self._state)
                self._state = None

    def __enter__(self) -> "LinearState":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_state", None) is not None:
            _lib.linear_state_free(self._state)
            self._state = None

    def __repr__(self) -> str:
        return ("LinearState(heads=%d, d_k=%d, d_v=%d, variant=%r, dtype=%s, position=%s)"
                % (self.heads, self.d_k, self.d_v, self.variant.name, self.dtype.name,
                   "closed" if self._state is None else self.position))
