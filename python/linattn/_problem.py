"""_problem.py — NumPy arrays to an la_problem: shapes and layouts, element types, masks and
the variants' parameters, each checked against the registry row of the variant that reads
it. Every refusal is a ValueError whose text ends with la_strerror's message (an unknown
keyword a TypeError).
"""
import ctypes
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _lib
from .registry import PARAMETER_NAMES, Variant

DTYPES = {np.dtype(np.float32): _lib.FLOAT32, np.dtype(np.float64): _lib.FLOAT64}
LAYOUTS = ("bhnd", "bnhd")

PARAMETERS = tuple(dict.fromkeys(n for group in PARAMETER_NAMES.values() for n in group))


def invalid(what: str) -> ValueError:
    """A refusal found here, worded as the library's: `WHAT: invalid argument`."""
    return _lib.error(_lib.EINVAL, what)


def element_type(arrays: Dict[str, Any]) -> np.dtype:
    """The one float32 or float64 type of the named arrays (NumPy arrays keep theirs; other
    sequences are read as float64 only when no array gives a type)."""
    first = next(iter(arrays.values()))
    if isinstance(first, np.ndarray) and first.dtype in DTYPES and all(
            isinstance(a, np.ndarray) and a.dtype == first.dtype for a in arrays.values()):
        return first.dtype
    types = {name: a.dtype for name, a in arrays.items() if isinstance(a, np.ndarray)}
    for name, t in types.items():
        if t not in DTYPES:
            raise _lib.error(_lib.EDTYPE, "linattn: %s is %s, not float32 or float64"
                             % (name, t))
    if len(set(types.values())) > 1:
        raise _lib.error(_lib.EDTYPE, "linattn: mixed element types (%s): give all float32 "
                         "or all float64" % ", ".join("%s %s" % kv for kv in types.items()))
    return next(iter(types.values())) if types else np.dtype(np.float64)


def as_heads(x: Any, name: str, layout: str, dtype: np.dtype) -> np.ndarray:
    """x as a 4-D (B, H, rows, d) view, without copying a NumPy array of dtype:
    (rows, d) is B = H = 1; (H, rows, d) [bhnd] or (rows, H, d) [bnhd] is B = 1;
    (B, H, rows, d) [bhnd] or (B, rows, H, d) [bnhd]."""
    a = x if isinstance(x, np.ndarray) and x.dtype == dtype else np.asarray(x, dtype=dtype)
    if a.ndim == 2:
        return a[None, None]
    if a.ndim == 3:
        a = a[None]
    elif a.ndim != 4:
        raise invalid("linattn: %s has %d dimensions, not 2, 3 or 4" % (name, a.ndim))
    return a if layout == "bhnd" else a.transpose(0, 2, 1, 3)


def strides_of(a: np.ndarray) -> Optional[Tuple[int, int, int]]:
    """The la_strides (elements) of a 4-D view, (0, 0, 0) when it is C-contiguous, or None
    when the library cannot read it in place: its last axis not contiguous, a negative or
    unaligned stride, or two (batch, head, row) triples sharing an element (broadcasting).
    Axes of extent 1 take the stride a contiguous array would have there."""
    if a.flags.c_contiguous:
        return (0, 0, 0)
    size = a.itemsize
    b, h, r, d = a.shape
    if a.strides[3] != size and d > 1:
        return None
    if any(s % size for s in a.strides[:3]):
        return None
    s_b, s_h, s_r = (s // size for s in a.strides[:3])
    if r == 1:
        s_r = d
    if h == 1:
        s_h = s_r * (r - 1) + d
    if b == 1:
        s_b = s_h * (h - 1) + s_r * (r - 1) + d
    # the three axes nest without overlap: each, in order of stride, steps past the span
    # of the ones inside it
    span = d
    for stride, extent in sorted(((s_b, b), (s_h, h), (s_r, r))):
        if stride < span:
            return None
        span = stride * (extent - 1) + span
    return (s_b, s_h, s_r)


def readable(a: np.ndarray) -> Tuple[np.ndarray, Tuple[int, int, int]]:
    """a (4-D) and its la_strides, or a C-contiguous copy of a (the one conversion) when
    the library cannot read a in place."""
    s = strides_of(a)
    if s is None:
        a = np.ascontiguousarray(a)
        s = (0, 0, 0)
    return a, s


class Call:
    """One call's la_problem and the arrays it points into (kept alive while it lives)."""

    def __init__(self, v: Variant, dims: Tuple[int, int, int, int, int, int], *,
                 causal: bool = False, key_lengths: Any = None, causal_align: str = "top-left",
                 mask: Any = None, key_padding_mask: Any = None,
                 workspace_limit: Optional[int] = None, params: Dict[str, Any] = None):
        batch, heads, n, m, d_k, d_v = dims
        self.variant = v
        self.keep = []
        p = self.problem = _lib.Problem()
        _lib.problem_init(p, batch, heads, n, m, d_k, d_v)
        p.causal = 1 if causal else 0
        if causal and v.causal == "refused":
            raise invalid("linattn: variant %s refuses causal" % v.name)
        if not causal and v.causal == "required":
            raise invalid("linattn: variant %s requires causal=True" % v.name)
        if causal_align not in ("top-left", "bottom-right"):
            raise invalid("linattn: causal_align %r is not top-left or bottom-right"
                          % (causal_align,))
        p.causal_align = (_lib.CAUSAL_BOTTOM_RIGHT if causal_align == "bottom-right"
                          else _lib.CAUSAL_TOP_LEFT)
        if key_lengths is not None:
            lengths = np.asarray(key_lengths).reshape(-1)
            if lengths.dtype.kind not in "iu":
                raise invalid("linattn: key_lengths are %s, not integers" % lengths.dtype)
            p.key_lengths = self.hold(lengths, np.int64, "key_lengths", (batch,))
        for name, given in (("mask", mask), ("key_padding_mask", key_padding_mask)):
            if given is not None and np.asarray(given).dtype.kind not in "biu":
                raise invalid("linattn: %s is %s, not bool (True = hidden)"
                              % (name, np.asarray(given).dtype))
        if mask is not None:
            if "mask" not in v.masks:
                raise invalid("linattn: variant %s takes no mask" % v.name)
            mk = np.asarray(mask)
            per_head = mk.ndim == 3
            shape = (batch * heads, n, m) if per_head else (n, m)
            p.mask = self.hold(mk, np.uint8, "mask", shape)
            p.mask_per_head = 1 if per_head else 0
        if key_padding_mask is not None:
            if "key_mask" not in v.masks:
                raise invalid("linattn: variant %s takes no key_padding_mask" % v.name)
            kpm = np.asarray(key_padding_mask).reshape(batch, -1) \
                if np.ndim(key_padding_mask) == 1 and batch == 1 else key_padding_mask
            p.key_mask = self.hold(kpm, np.uint8, "key_padding_mask", (batch, m))
        if workspace_limit is not None:
            p.workspace_limit = int(workspace_limit)
        self.set_params(params or {}, d_k, d_v, m)

    def hold(self, x: Any, dtype: Any, name: str, shape: Tuple[int, ...]) -> int:
        """The address of x as a C-contiguous array of dtype and the given shape (a copy
        only when x is not one), kept alive with the call."""
        a = np.ascontiguousarray(x, dtype=dtype)
        if a.shape != tuple(shape):
            raise invalid("linattn: %s is %s, not %s" % (name, a.shape, tuple(shape)))
        self.keep.append(a)
        return _lib.address(a)

    def set_params(self, params: Dict[str, Any], d_k: int, d_v: int, m: int) -> None:
        """The variant's keyword parameters into the problem; a name that is not a parameter
        is a TypeError, one the variant does not read a ValueError."""
        v, p = self.variant, self.problem
        for name in params:
            if name not in PARAMETERS:
                raise TypeError("linattn: unknown parameter %r (parameters: %s)"
                                % (name, ", ".join(PARAMETERS)))
            if name not in v.parameters:
                raise invalid("linattn: variant %s does not read %s (it reads: %s)"
                              % (v.name, name, ", ".join(v.parameters) or "nothing"))
        get = params.get
        if get("scale") is not None:
            p.scale = float(params["scale"])
        if get("feature_map") is not None:
            fm = _lib.c_int()
            status = _lib.feature_map_parse(str(params["feature_map"]).encode(), fm)
            _lib.check(status, "linattn: feature_map %r (elu or relu)" % params["feature_map"])
            p.feature_map = fm.value
        for name in ("eps",):
            if get(name) is not None:
                setattr(p, name, float(params[name]))
        if get("chunk") is not None:
            p.chunk = self.count("chunk", params["chunk"])
        if v.block:
            self.set_block(params, d_k, d_v, m)

    def set_block(self, params: Dict[str, Any], d_k: int, d_v: int, m: int) -> None:
        """The variant's parameter block (la_kernel_info.block): its defaults, the values
        given, and p->params pointing at it (kept alive with the call)."""
        structure, defaults = _lib.BLOCKS[self.variant.block]
        b = structure()
        b.head.kind = self.variant.block
        for name, value in defaults.items():
            setattr(b, name, value)
        self.keep.append(b)
        self.problem.params = ctypes.addressof(b)
        get = params.get
        for name in ("window", "features", "seed", "score_dim", "max_distance", "proj_rank"):
            if get(name) is not None:
                setattr(b, name, self.count(name, params[name]))
        # given tensors: float64, their sizes set from their shapes
        if (get("proj_e") is None) != (get("proj_f") is None):
            raise invalid("linattn: give proj_e and proj_f together")
        if get("proj_e") is not None:
            rank = np.shape(params["proj_e"])[0] if np.ndim(params["proj_e"]) == 2 else -1
            b.proj_e = self.hold(params["proj_e"], np.float64, "proj_e", (rank, m))
            b.proj_f = self.hold(params["proj_f"], np.float64, "proj_f", (rank, m))
            b.proj_rank = rank
        if get("proj_w") is not None:  # FAVOR+: W (features, d_k)
            rows = np.shape(params["proj_w"])[0] if np.ndim(params["proj_w"]) == 2 else -1
            b.proj_w = self.hold(params["proj_w"], np.float64, "proj_w", (rows, d_k))
            b.features = rows
        if get("score_w") is not None:
            if "score_dim" in self.variant.params:  # additive: W (d_a, 2·d_k), v (d_a)
                if get("score_v") is None:
                    raise invalid("linattn: give score_w and score_v together")
                d_a = np.shape(params["score_w"])[0] if np.ndim(params["score_w"]) == 2 else -1
                b.score_w = self.hold(params["score_w"], np.float64, "score_w",
                                      (d_a, 2 * d_k))
                b.score_v = self.hold(params["score_v"], np.float64, "score_v",
                                      (d_a,))
                b.score_dim = d_a
            else:  # general: W (d_k, d_k)
                b.score_w = self.hold(params["score_w"], np.float64, "score_w",
                                      (d_k, d_k))
        elif get("score_v") is not None:
            raise invalid("linattn: give score_w and score_v together")
        if (get("rel_k") is None) != (get("rel_v") is None):
            raise invalid("linattn: give rel_k and rel_v together")
        if get("rel_k") is not None:
            rows = np.shape(params["rel_k"])[0] if np.ndim(params["rel_k"]) == 2 else -1
            if rows < 3 or rows % 2 == 0:
                raise invalid("linattn: rel_k has %d rows, not 2K + 1 >= 3" % rows)
            b.rel_k = self.hold(params["rel_k"], np.float64, "rel_k", (rows, d_k))
            b.rel_v = self.hold(params["rel_v"], np.float64, "rel_v", (rows, d_v))
            b.max_distance = (rows - 1) // 2

    @staticmethod
    def count(name: str, value: Any) -> int:
        """A non-negative integer parameter (the library checks its range)."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise invalid("linattn: %s = %r is not an integer" % (name, value))
        if value < 0:
            raise invalid("linattn: %s = %d is negative" % (name, value))
        return int(value)

    def check(self, what: str) -> None:
        """la_problem_check, raising with its status."""
        _lib.check(_lib.problem_check(self.problem), what)
