"""attention.py — linattn.attention, attention_backward and attention_weights: the library's
la_attention, la_attention_lse, la_attention_backward and la_attention_weights on NumPy
arrays.

Shapes (layout="bhnd", the default, as PyTorch's scaled_dot_product_attention):
    q (N, d_k), (H, N, d_k) or (B, H, N, d_k); k (…, M, d_k); v (…, M, d_v); out (…, N, d_v)
with layout="bnhd" (FlashAttention's, PyTorch's (B, N, H, d) before a transpose):
    q (N, H, d_k) or (B, N, H, d_k); k, v and out likewise.
"""
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Tuple, Union

import numpy as np

from . import _lib
from ._problem import (DTYPES, LAYOUTS, Call, as_heads, element_type, invalid, readable,
                       strides_of)
from .registry import Variant, variant as find_variant

VariantName = Union[str, Variant]


class _NoThreads:
    """threads_for_call(None): nothing to set or restore."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NO_THREADS = _NoThreads()


def threads_for_call(threads: Optional[int]):
    """A context: la_set_num_threads(threads) for the body, the count asked for before
    restored after (nothing when threads is None)."""
    return _NO_THREADS if threads is None else _threads_set(threads)


@contextmanager
def _threads_set(threads: int) -> Iterator[None]:
    before = _lib.num_threads_requested()
    _lib.check(_lib.set_num_threads(int(threads)), "linattn: threads = %r" % (threads,))
    try:
        yield
    finally:
        _lib.set_num_threads(before)


class _Prepared:
    """q, k, v of one call as 4-D (B, H, rows, d) views the library reads in place, the
    call's problem with their strides, and the element type."""

    def __init__(self, q: Any, k: Any, v: Any, variant: VariantName, layout: str, options: dict,
                 params: dict):
        self.variant = find_variant(variant)
        if layout not in LAYOUTS:
            raise invalid("linattn: layout %r is not one of %s" % (layout, ", ".join(LAYOUTS)))
        self.layout = layout
        arrays = {"q": q, "k": k} if v is None else {"q": q, "k": k, "v": v}
        self.dtype = element_type(arrays)
        self.la_dtype = DTYPES[self.dtype]
        self.ndim = np.ndim(q)
        if np.ndim(k) != self.ndim or (v is not None and np.ndim(v) != self.ndim):
            raise invalid("linattn: q, k, v must have the same number of dimensions (%s)"
                          % ", ".join("%s %d" % (name, np.ndim(a))
                                      for name, a in arrays.items()))
        q4 = as_heads(q, "q", layout, self.dtype)
        k4 = as_heads(k, "k", layout, self.dtype)
        v4 = k4[..., :1] if v is None else as_heads(v, "v", layout, self.dtype)
        (b, h, n, d_k), (m, d_v) = q4.shape, v4.shape[2:]
        if k4.shape != (b, h, m, d_k) or v4.shape[:3] != (b, h, m):
            raise invalid("linattn: q %s, k %s%s do not fit together: q (B, H, N, d_k), k "
                          "(B, H, M, d_k), v (B, H, M, d_v) in layout %s"
                          % (np.shape(q), np.shape(k), "" if v is None else
                             ", v %s" % (np.shape(v),), layout))
        self.dims = (b, h, n, m, d_k, d_v)
        self.call = Call(self.variant, self.dims, params=params, **options)
        p = self.call.problem
        self.q, p.stride_q = self._read(q4)
        self.k, p.stride_k = self._read(k4)
        self.v, p.stride_v = self._read(v4)

    @staticmethod
    def _read(a: np.ndarray) -> Tuple[np.ndarray, _lib.Strides]:
        a, strides = readable(a)
        return a, _lib.Strides(*strides)

    def shaped(self, rows: int, d: int) -> Tuple[int, ...]:
        """The caller's shape of a (B, H, rows, d) array in this call's layout and rank."""
        b, h = self.dims[:2]
        if self.ndim == 2:
            return (rows, d)
        if self.layout == "bhnd":
            return (h, rows, d) if self.ndim == 3 else (b, h, rows, d)
        return (rows, h, d) if self.ndim == 3 else (b, rows, h, d)

    def output(self, out: Optional[np.ndarray]) -> Tuple[np.ndarray, np.ndarray]:
        """The output array (out, checked, or a new one) and its 4-D view; the view's strides
        go into the problem."""
        b, h, n, _, _, d_v = self.dims
        shape = self.shaped(n, d_v)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)
        else:
            check_output(out, "out", shape, self.dtype)
        o4 = as_heads(out, "out", self.layout, self.dtype)
        strides = _strides_in_place(o4, "out")
        self.call.problem.stride_out = _lib.Strides(*strides)
        return out, o4

    def lse_shape(self) -> Tuple[int, ...]:
        """The caller's shape of lse: q's without its last axis."""
        return self.shaped(self.dims[2], 1)[:-1]

    def lse_view(self, lse: np.ndarray) -> np.ndarray:
        """A contiguous (B, H, N) log-sum-exp as the caller sees it (a view)."""
        if self.layout == "bnhd":
            lse = lse.transpose(0, 2, 1)
        return lse.reshape(self.lse_shape()) if self.ndim < 4 else lse

    def lse_contiguous(self, lse: Any) -> np.ndarray:
        """The caller's lse as the contiguous (B, H, N) array the library reads."""
        a = np.asarray(lse)
        if a.dtype != self.dtype:
            raise _lib.error(_lib.EDTYPE, "linattn: lse is %s, q %s" % (a.dtype, self.dtype))
        if a.shape != self.lse_shape():
            raise invalid("linattn: lse is %s, not %s" % (a.shape, self.lse_shape()))
        b, h, n = self.dims[:3]
        if self.layout == "bnhd":
            a = a.reshape(b, n, h).transpose(0, 2, 1)
        return np.ascontiguousarray(a.reshape(b, h, n))

    def grad_view(self, g: np.ndarray) -> np.ndarray:
        """A contiguous (B, H, rows, d) gradient in the caller's shape (a view)."""
        b, h, rows, d = g.shape
        if self.layout == "bnhd":
            g = g.transpose(0, 2, 1, 3)
        return g.reshape(self.shaped(rows, d))


def _strides_in_place(a4: np.ndarray, name: str) -> Tuple[int, int, int]:
    """The la_strides of an output the library writes in place, or a refusal."""
    strides = strides_of(a4)
    if strides is None:
        raise invalid("linattn: %s cannot be written in place (its last axis must be "
                      "contiguous and its rows must not overlap)" % name)
    return strides


def check_output(out: Any, name: str, shape: Tuple[int, ...], dtype: np.dtype) -> None:
    """Refuses an output array the call cannot write: not a NumPy array, another type or
    shape, or read-only."""
    if not isinstance(out, np.ndarray):
        raise invalid("linattn: %s must be a NumPy array" % name)
    if out.dtype != dtype:
        raise _lib.error(_lib.EDTYPE, "linattn: %s is %s, the inputs %s" % (name, out.dtype,
                                                                           dtype))
    if out.shape != tuple(shape):
        raise invalid("linattn: %s is %s, not %s" % (name, out.shape, tuple(shape)))
    if not out.flags.writeable:
        raise invalid("linattn: %s is read-only" % name)


def attention(q: Any, k: Any, v: Any, variant: VariantName = "softmax", *,
              causal: bool = False, key_lengths: Any = None, layout: str = "bhnd",
              causal_align: str = "top-left", mask: Any = None, key_padding_mask: Any = None,
              out: Optional[np.ndarray] = None, return_lse: bool = False,
              threads: Optional[int] = None, workspace_limit: Optional[int] = None,
              **params: Any) -> Union[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """Attention of one registry variant on q, k, v (la_attention).

    Parameters
    ----------
    q : array_like, (N, d_k), (H, N, d_k) or (B, H, N, d_k); with layout="bnhd"
        (N, H, d_k) or (B, N, H, d_k)
    k : array_like, shaped as q with M rows
    v : array_like, shaped as k with d_v columns
        float32 or float64, all three the same. An array whose last axis is contiguous
        and whose rows do not overlap is read in place whatever its other strides (a
        slice of a KV cache, a transposed (B, N, H, d) tensor); any other (a list,
        broadcast or reversed arrays) is copied once into a C-contiguous array.
    variant : str or Variant
        A registry row (linattn.variants()): "softmax", "linear", "favor", ...
    causal : bool
        Query i sees keys j <= i (top-left aligned when M != N, unless causal_align).
    key_lengths : array_like of int, (B,), optional
        Keys j >= key_lengths[b] are hidden from batch entry b.
    layout : {"bhnd", "bnhd"}
    causal_align : {"top-left", "bottom-right"}
        With causal and M != N: bottom-right lets query i see j <= i + M - N (decoding).
    mask : array_like of bool, (N, M) or (B*H, N, M), optional
        True hides key j from query i (PyTorch's boolean attn_mask); variants whose
        Variant.masks has "mask".
    key_padding_mask : array_like of bool, (B, M), optional
        True hides key j of batch entry b ((M,) for a batch of one); variants whose
        Variant.masks has "key_mask".
    out : ndarray, optional
        Written in place: shaped as the result, of the inputs' type, writeable.
    return_lse : bool
        Also return each row's log-sum-exp, shaped as q without its last axis (variants
        with the "lse" capability: softmax), which attention_backward takes.
    threads : int, optional
        Threads for this call (la_set_num_threads; the setting before is restored).
    workspace_limit : int, optional
        Bytes of scratch the kernel may hold (LA_EBUDGET above it).
    **params
        The variant's parameters (Variant.parameters): scale, feature_map ("elu",
        "relu"), eps, chunk, window, proj_rank, proj_e and proj_f ((proj_rank, M)
        float64), features, proj_w (FAVOR+'s W, (features, d_k) float64), seed, score_w
        and score_v, score_dim, rel_k and rel_v ((2K+1, d_k), (2K+1, d_v)),
        max_distance. A parameter the variant does not read is refused.

    Returns
    -------
    out : ndarray, (…, N, d_v) in q's layout and type
    lse : ndarray, q's shape without its last axis (return_lse only)

    Raises
    ------
    ValueError
        Bad shapes, types, masks, parameters or variant names (the library's message:
        "invalid argument", "unsupported data type", ...); LA_EBUDGET, LA_EOVERFLOW.
    MemoryError
        LA_ENOMEM.
    FloatingPointError
        LA_ERANGE: the values would overflow float32 (use float64).
    """
    options = dict(causal=causal, key_lengths=key_lengths, causal_align=causal_align,
                   mask=mask, key_padding_mask=key_padding_mask,
                   workspace_limit=workspace_limit)
    call = _Prepared(q, k, v, variant, layout, options, params)
    return _forward(call, out, return_lse, threads)


def _forward(call: _Prepared, out: Optional[np.ndarray], return_lse: bool,
             threads: Optional[int]):
    """Runs a prepared call's forward: out, and (return_lse) its lse in the caller's shape."""
    out, o4 = call.output(out)
    what = "linattn.attention (%s)" % call.variant.name
    if return_lse:
        if "lse" not in call.variant.capabilities:
            raise invalid("%s: return_lse: the variant has no log-sum-exp" % what)
        b, h, n = call.dims[:3]
        lse = np.empty((b, h, n), dtype=call.dtype)
        with threads_for_call(threads):
            status = _lib.attention_lse(call.variant.kernel, call.call.problem, call.la_dtype,
                                        _lib.address(call.q), _lib.address(call.k),
                                        _lib.address(call.v), _lib.address(o4),
                                        _lib.address(lse))
        _lib.check(status, what)
        return out, call.lse_view(lse)
    with threads_for_call(threads):
        status = _lib.attention(call.variant.kernel, call.call.problem, call.la_dtype,
                                _lib.address(call.q), _lib.address(call.k),
                                _lib.address(call.v), _lib.address(o4))
    _lib.check(status, what)
    return out


def attention_backward(q: Any, k: Any, v: Any, d_out: Any, variant: VariantName = "softmax",
                       *, out: Any = None, lse: Any = None, causal: bool = False,
                       key_lengths: Any = None, layout: str = "bhnd",
                       causal_align: str = "top-left", mask: Any = None,
                       key_padding_mask: Any = None, threads: Optional[int] = None,
                       workspace_limit: Optional[int] = None,
                       **params: Any) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of a loss through attention(q, k, v, variant, ...) (la_attention_backward).

    Parameters
    ----------
    q, k, v, variant, causal, key_lengths, layout, causal_align, mask, key_padding_mask,
    threads, workspace_limit, **params
        As attention's; the variant must have a backward (Variant.backward).
    d_out : array_like, shaped as attention's output
        ∂L/∂out. The backward reads q, k, v, out and d_out as C-contiguous (B, H, ·, d)
        arrays: each that is not (every one with layout="bnhd") is copied once.
    out : array_like, optional
        The forward's output on the same inputs; computed here when not given.
    lse : array_like, optional
        softmax only: attention(..., return_lse=True)'s log-sum-exp, which then is not
        recomputed. Given with out (both from the same forward).

    Returns
    -------
    d_q, d_k, d_v : ndarray
        Shaped as q, k, v in their layout (with layout="bnhd", transposed views of
        contiguous (B, H, ·, d) arrays).

    Raises
    ------
    ValueError, MemoryError, FloatingPointError
        As attention's; ValueError also for a variant without a backward.
    """
    options = dict(causal=causal, key_lengths=key_lengths, causal_align=causal_align,
                   mask=mask, key_padding_mask=key_padding_mask,
                   workspace_limit=workspace_limit)
    call = _Prepared(q, k, v, variant, layout, options, params)
    what = "linattn.attention_backward (%s)" % call.variant.name
    if not call.variant.backward:
        raise invalid("%s: the variant has no backward" % what)
    if lse is not None and out is None:
        raise invalid("%s: lse given without out" % what)
    b, h, n, m, d_k, d_v = call.dims
    if out is None:
        if "lse" in call.variant.capabilities:
            out, lse = _forward(call, None, True, threads)
        else:
            out = _forward(call, None, False, threads)
    out = _same_type(out, "out", call.dtype)
    if out.shape != call.shaped(n, d_v):
        raise invalid("%s: out is %s, not %s" % (what, out.shape, call.shaped(n, d_v)))
    # The backward runs on contiguous q, k, v and out (copied when strided): its d_out, d_q,
    # d_k, d_v are then contiguous (B, H, ·, d) whatever the library makes of strides there.
    o4 = np.ascontiguousarray(as_heads(out, "out", layout, call.dtype))
    call.q, call.k, call.v = (np.ascontiguousarray(a) for a in (call.q, call.k, call.v))
    p = call.call.problem
    p.stride_q = p.stride_k = p.stride_v = p.stride_out = _lib.Strides(0, 0, 0)
    lse_c = None if lse is None else call.lse_contiguous(lse)
    d4 = as_heads(_same_type(d_out, "d_out", call.dtype), "d_out", layout, call.dtype)
    if d4.shape != (b, h, n, d_v):
        raise invalid("%s: d_out is %s, not %s" % (what, np.shape(d_out),
                                                   call.shaped(n, d_v)))
    d4 = np.ascontiguousarray(d4)
    d_q = np.empty((b, h, n, d_k), dtype=call.dtype)
    d_k_ = np.empty((b, h, m, d_k), dtype=call.dtype)
    d_v_ = np.empty((b, h, m, d_v), dtype=call.dtype)
    with threads_for_call(threads):
        status = _lib.attention_backward(
            call.variant.kernel, call.call.problem, call.la_dtype, _lib.address(call.q),
            _lib.address(call.k), _lib.address(call.v), _lib.address(o4),
            None if lse_c is None else _lib.address(lse_c), _lib.address(d4),
            _lib.address(d_q), _lib.address(d_k_), _lib.address(d_v_))
    _lib.check(status, what)
    return call.grad_view(d_q), call.grad_view(d_k_), call.grad_view(d_v_)


def _same_type(x: Any, name: str, dtype: np.dtype) -> np.ndarray:
    """x as an array of dtype: NumPy arrays must already be; other sequences are read."""
    if isinstance(x, np.ndarray):
        if x.dtype != dtype:
            raise _lib.error(_lib.EDTYPE, "linattn: %s is %s, q %s" % (name, x.dtype, dtype))
        return x
    return np.asarray(x, dtype=dtype)


def attention_weights(q: Any, k: Any, variant: VariantName = "softmax", *,
                      causal: bool = False, key_lengths: Any = None, layout: str = "bhnd",
                      causal_align: str = "top-left", mask: Any = None,
                      key_padding_mask: Any = None, threads: Optional[int] = None,
                      workspace_limit: Optional[int] = None, **params: Any) -> np.ndarray:
    """The attention matrix A with attention(q, k, v) = A·v (la_attention_weights), for
    variants with the "weights" capability.

    Parameters
    ----------
    q, k, variant, causal, key_lengths, layout, causal_align, mask, key_padding_mask,
    threads, workspace_limit, **params
        As attention's (v is not needed).

    Returns
    -------
    ndarray, (N, M), (H, N, M) or (B, H, N, M), in q's type, whichever q's layout
        Hidden entries 0; a query that sees no key gets a zero row.
    """
    options = dict(causal=causal, key_lengths=key_lengths, causal_align=causal_align,
                   mask=mask, key_padding_mask=key_padding_mask,
                   workspace_limit=workspace_limit)
    call = _Prepared(q, k, None, variant, layout, options, params)
    what = "linattn.attention_weights (%s)" % call.variant.name
    if "weights" not in call.variant.capabilities:
        raise invalid("%s: the variant has no attention matrix" % what)
    b, h, n, m = call.dims[:4]
    weights = np.empty((b, h, n, m), dtype=call.dtype)
    with threads_for_call(threads):
        status = _lib.attention_weights(call.variant.kernel, call.call.problem, call.la_dtype,
                                        _lib.address(call.q), _lib.address(call.k),
                                        _lib.address(weights))
    _lib.check(status, what)
    shape = {2: (n, m), 3: (h, n, m), 4: (b, h, n, m)}[call.ndim]
    return weights.reshape(shape)
