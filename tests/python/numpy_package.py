"""numpy_package.py — the linattn Python package (python/linattn) checked against the
float64 NumPy implementations of tests/command/attend_numpy.py and attend_grad_numpy.py,
against the library's own behaviour, and against the `linattn` command.

Usage: BUILD/venv/bin/python tests/python/numpy_package.py BUILD/linattn   (make test runs
it with the python of the venv `make python` installed the package into)

  layout      ctypes' la_problem, la_cost and la_param_count are the C structures: the
              library's la_problem_init and cost functions write on sentinel bytes, and
              every field reads back as the header defines it, nothing past the end; each
              registry row's bits agree with what the library accepts
  forward     every variant, shapes (N, d), (H, N, d), (B, H, N, d), causal, key lengths,
              float32 and float64, given and drawn parameters, against NumPy
  layouts     bnhd, KV-cache slices, reversed and broadcast arrays, out=: the same bits
  masks       mask, key_padding_mask, causal_align against NumPy; refusals
  backward    every variant with a backward against NumPy's gradients; lse reused
  weights     the attention matrix against NumPy
  state       LinearState against the recurrent kernel (bit for bit), save and restore
  cost        la_cost's formulas, PyTorch's parameter counts
  command     `linattn attend` gives the same bits for the same case
  errors      wrong type, rank, shapes, read-only out, unknown variant or parameter: the
              exception class and la_strerror's text
  leaks       10,000 calls (forward, backward, states, errors): tracemalloc and RSS flat
  gil         another Python thread runs while a kernel does

Inputs are random with a printed seed; LA_TEST_SEED=N replays. LA_TEST_PROFILE=quick
keeps a covering subset of the forward cases. Exits 1 on any failure.
"""
import ctypes
import gc
import importlib.metadata
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "command"))
import attend_grad_numpy as gref  # noqa: E402  (the NumPy gradients)
import attend_numpy as ref  # noqa: E402  (the NumPy forward references)
import checks  # noqa: E402

import linattn  # noqa: E402
from linattn import _lib  # noqa: E402

TOL = {np.float32: 1e-5, np.float64: 1e-12}
EPS = 1e-6  # LA_DEFAULT_EPS


def heads(x):
    """(N, d), (H, N, d) or (B, H, N, d) as (B, H, N, d) float64."""
    return ref.to_heads(np.asarray(x, dtype=np.float64))


def message_of(status):
    return _lib.strerror(status).decode()


def raises(check, what, cls, status, fn, *args, **kwargs):
    """fn(*args, **kwargs) raises cls whose text carries la_strerror(status)."""
    try:
        fn(*args, **kwargs)
    except cls as e:
        text = message_of(status) if status is not None else ""
        return check(text in str(e), "%s: %s (%s)" % (what, cls.__name__, e))
    except Exception as e:  # noqa: BLE001  (the wrong class is the failure reported)
        return check(False, "%s: %s, not %s (%s)" % (what, type(e).__name__, cls.__name__, e))
    return check(False, "%s: returned, not %s" % (what, cls.__name__))


# ---------------------------------------------------------------- layout


def layout(check):
    size = ctypes.sizeof(_lib.Problem)
    buf = (ctypes.c_uint8 * (size + 64))(*([0xA5] * (size + 64)))
    p = _lib.Problem.from_buffer(buf)
    _lib.problem_init(p, 2, 3, 5, 7, 8, 4)
    check(bytes(buf[size:]) == b"\xa5" * 64,
          "la_problem_init writes nothing past ctypes' la_problem (%d bytes)" % size)
    want = dict(batch=2, heads=3, n_queries=5, n_keys=7, d_k=8, d_v=4, causal=0,
                key_lengths=None, scale=1 / math.sqrt(8), feature_map=0, eps=EPS, chunk=32,
                workspace_limit=4 << 30, params=None, causal_align=0, mask=None,
                mask_per_head=0, key_mask=None)
    got = {name: getattr(p, name) for name in want}
    bad = {n: (got[n], want[n]) for n in want if got[n] != want[n]}
    check(not bad, "every la_problem field reads back as la_problem_init sets it%s"
          % (": %s" % bad if bad else ""))
    strides = [tuple(getattr(getattr(p, s), f) for f in ("batch", "head", "row"))
               for s in ("stride_q", "stride_k", "stride_v", "stride_out")]
    check(strides == [(0, 0, 0)] * 4, "the four la_strides read back zero: %s" % strides)
    check(_lib.problem_check(p) == _lib.OK, "la_problem_check accepts the problem")

    # each parameter block's defaults as the package sets them (BLOCKS) are the library's:
    # the block given gives the bits of no block at all
    rng = np.random.default_rng(1)
    for v in linattn.variants():
        if not v.block:
            continue
        n, d = 260, 4  # Linformer's default rank (256) needs n >= 256 keys
        q, k, w = (rng.standard_normal((n, d)) for _ in range(3))
        outs = []
        for give in (False, True):
            p = _lib.Problem()
            _lib.problem_init(p, 1, 1, n, n, d, d)
            p.causal = 1 if v.causal == "required" else 0
            structure, defaults = _lib.BLOCKS[v.block]
            b = structure()
            b.head.kind = v.block
            for name, value in defaults.items():
                setattr(b, name, value)
            if give:
                p.params = ctypes.addressof(b)
            out = np.zeros((n, d))
            status = _lib.attention(v.kernel, p, _lib.FLOAT64, _lib.address(q), _lib.address(k),
                                    _lib.address(w), _lib.address(out))
            outs.append((status, out))
        check(outs[0][0] == outs[1][0] == _lib.OK and np.array_equal(outs[0][1], outs[1][1]),
              "%s: the package's default block gives the library's defaults' bits" % v.name)

    size = ctypes.sizeof(_lib.Cost)
    buf = (ctypes.c_uint8 * (size + 64))(*([0xA5] * (size + 64)))
    c = _lib.Cost.from_buffer(buf)
    p = _lib.Problem()
    _lib.problem_init(p, 1, 2, 16, 16, 8, 8)
    status = _lib.attention_cost(0, p, _lib.FLOAT64, c)
    parts = sum(getattr(c, f) for f in ("flops_qk", "flops_softmax", "flops_av", "flops_phi",
                                          "flops_kv", "flops_qs", "flops_normalize"))
    check(status == _lib.OK and bytes(buf[size:]) == b"\xa5" * 64
          and c.flops_total == parts and c.io_bytes == 8 * 2 * 16 * (8 + 8 + 8 + 8),
          "la_attention_cost fills ctypes' la_cost exactly (flops_total %g, io_bytes %g)"
          % (c.flops_total, c.io_bytes))

    size = ctypes.sizeof(_lib.ParamCount)
    buf = (ctypes.c_uint8 * (size + 64))(*([0xA5] * (size + 64)))
    counts = _lib.ParamCount.from_buffer(buf)
    model = _lib.ModelSize(d_model=16, heads=2, d_ff=64, encoder_layers=1)
    status = _lib.param_counts(model, counts)
    check(status == _lib.OK and bytes(buf[size:]) == b"\xa5" * 64
          and counts.mha == 4 * 16 * 16 + 4 * 16 and counts.layer_norm == 32
          and math.isfinite(counts.approx_gap),
          "la_param_counts fills ctypes' la_param_count exactly (mha %d)" % counts.mha)

    # the registry: each row's name as la_kernel_name gives it, and its bits as the library
    # behaves (a shifted field would read another field's bits or a pointer)
    q = np.ones((1, 1, 4, 4))
    for v in linattn.variants():
        check(v.name == _lib.kernel_name(v.kernel).decode()
              and v.family in ("softmax", "linear", "sparse", "low-rank", "random-feature",
                               "score", "position")
              and v.time_exponent in (1.0, 2.0)
              and (v.series[0] is None) == (v.causal == "required")
              and (v.series[1] is None) == (v.causal == "refused"),
              "registry row %s: name, family %s, time exponent %g, series %s, causal %s"
              % (v.name, v.family, v.time_exponent, v.series, v.causal))
        call = linattn._problem.Call(v, (1, 1, 4, 4, 4, 4), causal=v.causal == "required")
        cost = _lib.Cost()
        has_backward = _lib.attention_backward_cost(v.kernel, call.problem, 1, cost) == _lib.OK
        out = np.empty((1, 1, 4, 4))
        has_weights = _lib.attention_weights(v.kernel, call.problem, 1, q.ctypes.data,
                                             q.ctypes.data, out.ctypes.data) == _lib.OK
        lse = np.empty(4)
        has_lse = _lib.attention_lse(v.kernel, call.problem, 1, q.ctypes.data, q.ctypes.data,
                                     q.ctypes.data, out.ctypes.data, lse.ctypes.data) == _lib.OK
        handle = ctypes.c_void_p()
        steps = _lib.linear_state_create(handle, v.kernel, call.problem, 1) == _lib.OK
        _lib.linear_state_free(handle)
        mask = np.zeros((4, 4), dtype=np.uint8)
        call.problem.mask = mask.ctypes.data
        masks = _lib.attention(v.kernel, call.problem, 1, q.ctypes.data, q.ctypes.data,
                               q.ctypes.data, out.ctypes.data) == _lib.OK
        check(has_backward == v.backward and has_weights == ("weights" in v.capabilities)
              and has_lse == ("lse" in v.capabilities)
              and steps == ("step" in v.capabilities) and masks == ("mask" in v.masks),
              "registry row %s: backward %s, weights %s, lse %s, step %s, mask %s as the "
              "library accepts them" % (v.name, has_backward, has_weights, has_lse, steps,
                                        masks))


# ---------------------------------------------------------------- forward


def case_params(variant, rng, d_k, d_v, m):
    """The keyword parameters of one case and what the NumPy reference needs of them."""
    if variant in ("softmax", "softmax_materialized", "hard", "cosine"):
        scale = float(rng.uniform(0.2, 1.5))
        return dict(scale=scale), dict(scale=scale)
    if variant == "linear":
        fm = str(rng.choice(["elu", "relu"]))
        return dict(feature_map=fm, chunk=int(rng.integers(1, 6))), dict(fm=fm)
    if variant == "linear_recurrent":
        fm = str(rng.choice(["elu", "relu"]))
        return dict(feature_map=fm), dict(fm=fm)
    if variant == "local":
        window = int(rng.integers(1, 4))
        return dict(window=window), dict(window=window, scale=1 / math.sqrt(d_k))
    if variant == "linformer":
        rank = int(rng.integers(1, m + 1))
        if rng.random() < 0.5:
            e, f = rng.standard_normal((rank, m)), rng.standard_normal((rank, m))
            return dict(proj_e=e, proj_f=f), dict(e=e, f=f)
        seed = int(rng.integers(0, 1 << 32))
        e, f = ref.linformer_projections(rank, m, seed)
        return dict(proj_rank=rank, seed=seed), dict(e=e, f=f)
    if variant in ("favor", "favor_recurrent"):
        features, seed = int(rng.integers(4, 17)), int(rng.integers(0, 1 << 32))
        if rng.random() < 0.5:  # a W of the caller's (proj_w)
            w = rng.standard_normal((features, d_k))
            return dict(proj_w=w), dict(w=w)
        return (dict(features=features, seed=seed),
                dict(w=ref.favor_features(features, d_k, seed)))
    if variant == "general":
        w = rng.standard_normal((d_k, d_k)) / math.sqrt(d_k)
        return dict(score_w=w), dict(w=w, wv=None)
    if variant == "additive":
        d_a = int(rng.integers(1, 6))
        w, wv = rng.standard_normal((d_a, 2 * d_k)), rng.standard_normal(d_a)
        return dict(score_w=w, score_v=wv), dict(w=w, wv=wv)
    if variant == "relative":
        K = int(rng.integers(1, 4))
        a_k, a_v = rng.standard_normal((2 * K + 1, d_k)), rng.standard_normal((2 * K + 1, d_v))
        return dict(rel_k=a_k, rel_v=a_v), dict(a_k=a_k, a_v=a_v)
    if variant == "taylor":
        scale = float(rng.uniform(-1.0, 1.0))
        return dict(scale=scale), dict(scale=scale)
    return {}, {}  # a variant without a NumPy oracle: its defaults


def c_reference(v, q, k, vv, causal, lengths):
    """The library's float64 oracle (la_ref_attention) of one case, (B, H, N, d_v): the
    check of a variant this file has no NumPy oracle for."""
    b, h, n, d_k = q.shape
    m, d_v = vv.shape[2], vv.shape[3]
    call = linattn._problem.Call(v, (b, h, n, m, d_k, d_v), causal=causal,
                                 key_lengths=lengths)
    x = [np.ascontiguousarray(a, dtype=np.float64) for a in (q, k, vv)]
    out = np.zeros((b, h, n, d_v))
    fn = _lib.lib.la_ref_attention
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_lib.Problem)] + [ctypes.c_void_p] * 4
    fn.restype = ctypes.c_int
    status = fn(v.kernel, call.problem, *(a.ctypes.data for a in x), out.ctypes.data)
    assert status == _lib.OK, "la_ref_attention (%s): status %d" % (v.name, status)
    return out


def reference(variant, q, k, v, causal, lengths, r):
    """The NumPy float64 output of one case, (B, H, N, d_v); None for a variant without a
    NumPy oracle here (the library's own oracle then checks it: c_reference)."""
    if variant in ("softmax", "softmax_materialized"):
        return ref.ref_softmax(q, k, v, r["scale"], causal, lengths)
    if variant == "hard":
        return ref.ref_hard(q, k, v, r["scale"], causal, lengths)
    if variant.startswith("linear"):
        return ref.ref_linear(q, k, v, r["fm"], EPS, causal, lengths)
    if variant == "local":
        return ref.ref_local(q, k, v, r["scale"], causal, lengths, r["window"])
    if variant == "linformer":
        return ref.ref_linformer(q, k, v, r["e"], r["f"], 1 / math.sqrt(q.shape[-1]), lengths)
    if variant.startswith("favor"):
        return ref.ref_favor(q, k, v, r["w"], EPS, causal, lengths)
    if variant in ("general", "additive"):
        return ref.ref_scores(variant, q, k, v, r["w"], r["wv"], 1 / math.sqrt(q.shape[-1]),
                              causal, lengths)
    if variant == "cosine":
        return ref.ref_scores("cosine", q, k, v, None, None, r["scale"], causal, lengths)
    if variant == "taylor":
        return ref.ref_taylor(q, k, v, r["scale"], EPS, causal, lengths)
    if variant == "relative":
        return ref.ref_relative(q, k, v, r["a_k"], r["a_v"], 1 / math.sqrt(q.shape[-1]),
                                causal, lengths)
    return None


def forward(check, rng):
    shapes = [(None, None), (None, 3), (2, 3)]  # (B, H): (N, d), (H, N, d), (B, H, N, d)
    for v in linattn.variants():
        causal_values = {"allowed": [False, True], "required": [True], "refused": [False]}
        for (b, h), causal, with_lengths, dtype in checks.grid(
                shapes, causal_values[v.causal], [False, True], [np.float32, np.float64]):
            n, m = int(rng.integers(1, 10)), int(rng.integers(1, 10))
            d_k, d_v = int(rng.integers(1, 6)), int(rng.integers(1, 6))
            lead = tuple(x for x in (b, h) if x is not None)
            q = rng.standard_normal(lead + (n, d_k))
            k = rng.standard_normal(lead + (m, d_k))
            vv = rng.standard_normal(lead + (m, d_v))
            batch = b or 1
            lengths = rng.integers(0, m + 1, size=batch) if with_lengths else None
            if v.name == "linformer" and lengths is not None:
                lengths = np.maximum(lengths, 1)
            params, r = case_params(v.name, rng, d_k, d_v, m)
            y = linattn.attention(q.astype(dtype), k.astype(dtype), vv.astype(dtype), v.name,
                                  causal=causal, key_lengths=lengths, **params)
            # the reference on the inputs the kernel saw (rounded to dtype), so that only
            # the kernel's own rounding is measured
            seen = [x.astype(dtype).astype(np.float64) for x in (q, k, vv)]
            r_seen = {key: (x.astype(dtype).astype(np.float64) if key in ("a_k", "a_v") else x)
                      for key, x in r.items()}  # relative's tables, rounded as the kernel does
            want = reference(v.name, *(heads(x) for x in seen), causal, lengths, r_seen)
            if want is None:
                want = c_reference(v, *(heads(x) for x in seen), causal, lengths)
            # relative to ‖want‖, or to the values' size where the rows' averages of v
            # cancel to less (one query over a few keys can land near 0)
            scale = max(np.linalg.norm(want), np.sqrt(want.size / max(vv.size, 1))
                        * np.linalg.norm(seen[2]))
            err = (np.linalg.norm(heads(y) - want) / scale if scale > 0 and
                   np.all(np.isfinite(heads(y))) else ref.rel_error(heads(y), want))
            check(y.shape == lead + (n, d_v) and y.dtype == dtype and err < TOL[dtype],
                  "forward %s %s causal=%s lengths=%s %s: relative error %.2g"
                  % (v.name, q.shape, causal, lengths, np.dtype(dtype).name, err))


# ---------------------------------------------------------------- layouts


def layouts(check, rng):
    b, h, n, m, d = 2, 3, 7, 9, 4
    q, k, v = (rng.standard_normal((b, h, r, d)).astype(np.float32) for r in (n, m, m))
    y = linattn.attention(q, k, v, "softmax", causal=True)
    t = lambda x: x.transpose(0, 2, 1, 3)  # noqa: E731
    y_bnhd = linattn.attention(t(q), t(k), t(v), "softmax", causal=True, layout="bnhd")
    check(np.array_equal(t(y_bnhd), y) and y_bnhd.shape == (b, n, h, d),
          "bnhd views (strided, read in place) give bhnd's bits, out (B, N, H, d_v)")
    copies = [np.ascontiguousarray(t(x)) for x in (q, k, v)]
    y_c = linattn.attention(*copies, "softmax", causal=True, layout="bnhd")
    check(np.array_equal(t(y_c), y), "contiguous (B, N, H, d) arrays give the same bits")
    y3 = linattn.attention(copies[0][0], copies[1][0], copies[2][0], "softmax", causal=True,
                           layout="bnhd")
    check(y3.shape == (n, h, d) and np.array_equal(y3, y_c[0]), "bnhd (N, H, d) inputs")
    cache_k = np.zeros((b, h, m + 5, d), dtype=np.float32)
    cache_v = np.zeros((b, h, m + 5, d), dtype=np.float32)
    cache_k[:, :, :m], cache_v[:, :, :m] = k, v
    kslice, vslice = cache_k[:, :, :m], cache_v[:, :, :m]
    in_place = linattn._problem.strides_of(kslice) is not None
    y_cache = linattn.attention(q, kslice, vslice, "softmax", causal=True)
    check(in_place and np.array_equal(y_cache, y),
          "a KV-cache slice (B, H, M of T, d) is read in place, with the same bits")
    y_rev = linattn.attention(q[:, :, :, ::-1], k[:, :, :, ::-1], v, "softmax", causal=True)
    check(linattn._problem.strides_of(q[:, :, :, ::-1]) is None
          and np.allclose(y_rev, y, rtol=1e-5, atol=1e-6),
          "reversed arrays (negative strides) are copied once and computed right")
    k1 = k[:, :1]
    k_b = np.broadcast_to(k1, k.shape)
    y_b = linattn.attention(q, k_b, v, "linear")
    y_bc = linattn.attention(q, np.ascontiguousarray(k_b), v, "linear")
    check(linattn._problem.strides_of(k_b) is None and np.array_equal(y_b, y_bc),
          "broadcast arrays (stride 0) are copied once, with the contiguous bits")
    out = np.full_like(y, np.nan)
    got = linattn.attention(q, k, v, "softmax", causal=True, out=out)
    check(got is out and np.array_equal(out, y), "out= is written in place and returned")
    out_bnhd = np.empty((b, n, h, d), dtype=np.float32)
    linattn.attention(t(q), t(k), t(v), "softmax", causal=True, layout="bnhd", out=out_bnhd)
    check(np.array_equal(out_bnhd, y_bnhd), "out= in bnhd")
    lists = linattn.attention(q[0, 0].tolist(), k[0, 0].tolist(), v[0, 0].tolist())
    check(lists.dtype == np.float64 and np.allclose(
        lists, linattn.attention(q[0, 0].astype(np.float64), k[0, 0].astype(np.float64),
                                 v[0, 0].astype(np.float64)), rtol=0, atol=0),
          "lists are read as float64")


# ---------------------------------------------------------------- masks


def masks(check, rng):
    b, h, n, m, d = 2, 2, 6, 8, 4
    q, k, v = (rng.standard_normal((b, h, r, d)) for r in (n, m, m))
    mask = rng.random((n, m)) < 0.3
    kpm = rng.random((b, m)) < 0.3
    allowed = ~mask[None, None] & ~kpm[:, None, None, :]
    for variant in ("softmax", "softmax_materialized"):
        y = linattn.attention(q, k, v, variant, mask=mask, key_padding_mask=kpm, causal=True)
        want = ref.ref_softmax(q, k, v, 1 / math.sqrt(d), True, None, allowed)
        err = ref.rel_error(y, want)
        check(err < 1e-12, "%s with mask, key_padding_mask, causal: error %.2g" % (variant, err))
    per_head = rng.random((b * h, n, m)) < 0.3
    y = linattn.attention(q, k, v, "hard", mask=per_head)
    want = ref.ref_hard(q, k, v, 1 / math.sqrt(d), False, None, ~per_head.reshape(b, h, n, m))
    check(ref.rel_error(y, want) < 1e-12, "hard with a per-head mask (B·H, N, M)")
    y = linattn.attention(q, k, v, "linear", key_padding_mask=kpm, causal=True)
    want = ref.ref_linear(q, k, v, "elu", EPS, True, None, ~kpm)
    check(ref.rel_error(y, want) < 1e-12, "linear with key_padding_mask, causal")
    raises(check, "linear refuses mask", ValueError, _lib.EINVAL,
           linattn.attention, q, k, v, "linear", mask=mask)
    y = linattn.attention(q, k, v, "softmax", causal=True, causal_align="bottom-right")
    want = ref.ref_softmax(q, k, v, 1 / math.sqrt(d), "bottom-right", None)
    check(ref.rel_error(y, want) < 1e-12, "softmax causal_align bottom-right")


# ---------------------------------------------------------------- backward


def softmax_term_sizes(q, k, v, d_out, opts):
    """What the terms of softmax's d_q = dS·k·scale and d_k = dSᵀ·q·scale add up to in
    absolute value, dS = P ∘ (dP − D): the scale of their rounding errors (d_q and d_k
    themselves cancel to zero where a query sees one key)."""
    n, m = q.shape[2], k.shape[2]
    mask = ref.key_mask(n, m, opts["causal"], opts["lengths"], q.shape[0])
    scores = np.where(mask, np.einsum("bhnd,bhmd->bhnm", q, k) * opts["scale"], -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    e = np.where(mask, np.exp(scores - np.where(np.isfinite(row_max), row_max, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    dP = d_out @ np.swapaxes(v, -1, -2)
    D = np.sum(d_out * (P @ v), axis=-1, keepdims=True)
    terms = P * (np.abs(dP) + np.abs(D))
    return (terms @ np.abs(k) * opts["scale"],
            np.swapaxes(terms, -1, -2) @ np.abs(q) * opts["scale"])


def scaled_error(got, want, size):
    """‖got − want‖ over the size of the gradient's terms; where no query sees a key (every
    term 0), 0 when got is all zeros, else inf."""
    scale = np.linalg.norm(size)
    if scale == 0:
        return 0.0 if not np.any(got) else np.inf
    return np.linalg.norm(got.astype(np.float64) - want) / scale


def backward(check, rng):
    for variant, causal, dtype in [("softmax", False, np.float64), ("softmax", True, np.float64),
                                   ("softmax", True, np.float32),
                                   ("softmax_materialized", True, np.float64),
                                   ("hard", False, np.float64), ("linear", False, np.float64),
                                   ("linear", True, np.float64),
                                   ("linear_recurrent", True, np.float64)]:
        b, h, n, m, d_k, d_v = 2, 2, 7, 7, 3, 4
        q, k = rng.standard_normal((b, h, n, d_k)), rng.standard_normal((b, h, m, d_k))
        v, d_out = rng.standard_normal((b, h, m, d_v)), rng.standard_normal((b, h, n, d_v))
        lengths = rng.integers(0, m + 1, size=b)
        c = lambda x: x.astype(dtype)  # noqa: E731
        got = linattn.attention_backward(c(q), c(k), c(v), c(d_out), variant, causal=causal,
                                         key_lengths=lengths)
        opts = dict(causal=causal, lengths=lengths, scale=1 / math.sqrt(d_k), fm="elu", eps=EPS)
        _, dq, dk, dv = gref.reference(variant.replace("_materialized", "").replace(
            "_recurrent", ""), q, k, v, d_out, opts)
        if variant.startswith("linear"):
            used = dict(q=q, k=k, v=v, do=d_out)
            errs = (gref.linear_dq_error(got[0], dq, used, opts),
                    gref.linear_dq_error(got[1], dk, used, opts, wrt="k"),
                    ref.rel_error(got[2], dv))
        elif variant.startswith("softmax"):
            size_q, size_k = softmax_term_sizes(q, k, v, d_out, opts)
            errs = (scaled_error(got[0], dq, size_q), scaled_error(got[1], dk, size_k),
                    ref.rel_error(got[2], dv))
        else:
            errs = tuple(ref.rel_error(g, w) for g, w in zip(got, (dq, dk, dv)))
        tol = 1e-11 if dtype == np.float64 else 1e-4
        check(all(e < tol for e in errs) and all(g.dtype == dtype for g in got),
              "backward %s causal=%s %s: errors %s" % (variant, causal, np.dtype(dtype).name,
                                                       ", ".join("%.2g" % e for e in errs)))
    q, k, v = (rng.standard_normal((2, 5, 3, 4)).astype(np.float32) for _ in range(3))
    y, lse = linattn.attention(q, k, v, "softmax", layout="bnhd", causal=True, return_lse=True)
    d_out = rng.standard_normal(y.shape).astype(np.float32)
    with_lse = linattn.attention_backward(q, k, v, d_out, "softmax", layout="bnhd",
                                          causal=True, out=y, lse=lse)
    without = linattn.attention_backward(q, k, v, d_out, "softmax", layout="bnhd", causal=True)
    t = lambda x: np.ascontiguousarray(x.transpose(0, 2, 1, 3))  # noqa: E731
    bhnd = linattn.attention_backward(t(q), t(k), t(v), t(d_out), "softmax", causal=True)
    check(lse.shape == (2, 5, 3) and all(np.array_equal(a, b) for a, b in zip(with_lse, without))
          and all(np.array_equal(t(a), b) for a, b in zip(with_lse, bhnd))
          and with_lse[0].shape == q.shape,
          "bnhd backward: lse (B, N, H) reused gives the same bits as recomputed and as bhnd")


# ---------------------------------------------------------------- weights, state, cost


def weights(check, rng):
    q, k, v = (rng.standard_normal((3, 6, 4)) for _ in range(3))
    a = linattn.attention_weights(q, k, "softmax", causal=True)
    s = np.where(np.tril(np.ones((6, 6), bool)), q @ k.transpose(0, 2, 1) / 2, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    check(a.shape == (3, 6, 6) and ref.rel_error(a, p) < 1e-12, "softmax weights: NumPy's P")
    a = linattn.attention_weights(q, k, "linear")
    fq, fk = ref.phi(q, "elu"), ref.phi(k, "elu")
    num = fq @ fk.transpose(0, 2, 1)
    want = num / (num.sum(-1, keepdims=True) + EPS)
    check(ref.rel_error(a, want) < 1e-12, "linear weights: φ(q)·φ(k) / (φ(q)·z + eps)")
    raises(check, "favor has no weights", ValueError, _lib.EINVAL,
           linattn.attention_weights, q, k, "favor")


def state(check, rng):
    for dtype in (np.float32, np.float64):
        b, h, n, d_k, d_v = 2, 3, 9, 4, 5
        q, k, v = (rng.standard_normal((b, h, n, d)).astype(dtype) for d in (d_k, d_k, d_v))
        y = linattn.attention(q, k, v, "linear_recurrent", causal=True, feature_map="relu")
        st = linattn.LinearState(b * h, d_k, d_v, dtype=dtype, feature_map="relu")
        steps = [st.step(q[:, :, t], k[:, :, t], v[:, :, t]) for t in range(n)]
        check(np.array_equal(np.stack(steps, axis=2), y) and st.position == n,
              "LinearState %s: stepping gives linear_recurrent's bits" % np.dtype(dtype).name)
        st.reset()
        for t in range(4):
            st.step(q[:, :, t], k[:, :, t], v[:, :, t])
        saved = st.save()
        first = [st.step(q[:, :, t], k[:, :, t], v[:, :, t]) for t in range(4, n)]
        st.restore(saved)
        again = [st.step(q[:, :, t], k[:, :, t], v[:, :, t]) for t in range(4, n)]
        check(all(np.array_equal(a, b) for a, b in zip(first, again))
              and np.array_equal(np.stack(again, axis=2), y[:, :, 4:]),
              "save, then restore: the same continuation")
        raises(check, "restore of other bytes", ValueError, _lib.EINVAL, st.restore,
               saved[:-1])
        other = linattn.LinearState(b * h, d_k, d_v, dtype=dtype)  # elu: another φ
        raises(check, "restore into a state of another φ", ValueError, _lib.EINVAL,
               other.restore, saved)
        other.close()
        st.close()
        raises(check, "a closed state", ValueError, _lib.EINVAL, lambda: st.position)
    q, k, v = (rng.standard_normal((1, 2, 6, 4)) for _ in range(3))
    y = linattn.attention(q, k, v, "favor_recurrent", causal=True, features=8, seed=3)
    with linattn.LinearState(2, 4, 4, variant="favor", dtype=np.float64, features=8,
                             seed=3) as st:
        steps = np.stack([st.step(q[0, :, t], k[0, :, t], v[0, :, t]) for t in range(6)], 1)
    check(ref.rel_error(steps[None], y) < 1e-12, "FAVOR+ LinearState: favor_recurrent's output")


def cost(check):
    n, m, d_k, d_v = 64, 48, 16, 8
    c = linattn.cost("softmax", n, m, d_k, d_v, heads=2)
    pairs = 2 * n * m
    check(c["flops_qk"] == 2 * pairs * d_k and c["flops_softmax"] == 5 * pairs
          and c["flops_av"] == 2 * pairs * d_v and c["flops_total"] == linattn.flops(
              "softmax", n, m, d_k, d_v, heads=2),
          "softmax cost: 2·pairs·d_k, 5·pairs, 2·pairs·d_v")
    c = linattn.cost("softmax", n, n, d_k, causal=True)
    check(c["flops_softmax"] == 5 * n * (n + 1) / 2, "causal softmax counts the visible half")
    c = linattn.cost("linear", n, m, d_k, d_v)
    check(c["flops_phi"] == (n + m) * d_k and c["flops_kv"] == m * (2 * d_k * d_v + d_k)
          and c["flops_qs"] == n * (2 * d_k * d_v + 2 * d_k)
          and c["flops_normalize"] == n * (d_v + 1), "linear cost: φ, S and z, φ(q)·S, divides")
    c64 = linattn.cost("linear", n, m, d_k, d_v, dtype=np.float64)
    check(c64["io_bytes"] == 2 * c["io_bytes"] == 8 * (n * d_k + m * d_k + m * d_v + n * d_v),
          "io_bytes: q, k, v, out once, 4 or 8 bytes each")
    raises(check, "cost of a backward that does not exist", ValueError, _lib.EINVAL,
           linattn.cost, "linformer", 8, backward=True)
    check(linattn.cost("softmax", 16, backward=True)["flops_total"] > 0, "backward cost")
    D, F = 512, 2048
    p = linattn.params(D, 8, F, encoder_layers=6, decoder_layers=6)
    mha, ffn, ln = 4 * D * D + 4 * D, 2 * D * F + F + D, 2 * D
    want = 6 * (mha + ffn + 2 * ln) + ln + 6 * (2 * mha + ffn + 3 * ln) + ln
    check(p["total"] == want == 44140544 and p["mha"] == mha,
          "params: nn.Transformer()'s 44,140,544 parameters")
    p = linattn.params(64, 4, encoder_layers=2, options=["no_bias", "rms_norm"])
    check(p["mha"] == 4 * 64 * 64 and p["layer_norm"] == 64, "params options: no_bias, rms_norm")


def configuration(check):
    c = linattn.config()
    check(c["version"] == linattn.__version__ == importlib.metadata.version("linattn"),
          "the library's version is the package's (%s)" % c["version"])
    check(re.fullmatch(r"avx512, tile \d+x\d+ \([^)]+\), "
                       r"fused softmax (32|64) queries \([^)]+\)|"
                       r"portable \((LA_SIMD=off|no AVX-512)\)", linattn.simd()) is not None,
          "simd path: %s" % linattn.simd())
    expected = os.environ.get("LINATTN_LIBRARY") or os.path.join(
        os.path.dirname(linattn.__file__), "liblinattn.so")
    check(c["library"] == expected, "the library loaded is %s" % c["library"])
    before = linattn.get_num_threads()
    linattn.attention(np.ones((4, 4)), np.ones((4, 4)), np.ones((4, 4)), threads=1)
    check(linattn.get_num_threads() == before, "threads= is restored after the call")


# ---------------------------------------------------------------- the command


def command(check, rng, binary):
    with tempfile.TemporaryDirectory() as tmp:
        path = lambda name: os.path.join(tmp, name)  # noqa: E731
        cases = [("linear", np.float32, "bhnd", ["--causal"], dict(causal=True)),
                 ("softmax", np.float64, "bnhd", ["--key-lengths", path("L.npy")],
                  dict(key_lengths=np.array([3, 7], dtype=np.int64)))]
        for variant, dtype, lay, flags, kwargs in cases:
            q, k, v = (rng.standard_normal((2, 7, 3, 4)).astype(dtype) for _ in range(3))
            for name, x in (("q", q), ("k", k), ("v", v)):
                np.save(path(name + ".npy"), x)
            np.save(path("L.npy"), np.array([3, 7], dtype=np.int64))
            proc = subprocess.run([binary, "attend", "--variant", variant, "--q", path("q.npy"),
                                   "--k", path("k.npy"), "--v", path("v.npy"), "--out",
                                   path("y.npy"), "--precision", np.dtype(dtype).name,
                                   "--layout", lay] + flags, capture_output=True, text=True)
            y = linattn.attention(q, k, v, variant, layout=lay, **kwargs)
            same = proc.returncode == 0 and np.array_equal(np.load(path("y.npy")), y)
            check(same, "linattn attend --variant %s %s --layout %s: the same bits (%s)"
                  % (variant, " ".join(f for f in flags if f.startswith("--")), lay,
                     proc.stderr.strip().splitlines()[-1] if proc.stderr else ""))


# ---------------------------------------------------------------- errors


def errors(check):
    q = np.ones((2, 5, 4), dtype=np.float32)
    raises(check, "int arrays", ValueError, _lib.EDTYPE, linattn.attention,
           np.ones((5, 4), dtype=np.int64), np.ones((5, 4)), np.ones((5, 4)))
    raises(check, "float16 arrays", ValueError, _lib.EDTYPE, linattn.attention,
           q.astype(np.float16), q.astype(np.float16), q.astype(np.float16))
    raises(check, "float32 q with float64 k", ValueError, _lib.EDTYPE, linattn.attention,
           q, q.astype(np.float64), q)
    raises(check, "rank 5", ValueError, _lib.EINVAL, linattn.attention,
           q[None, None], q[None, None], q[None, None])
    raises(check, "rank 1", ValueError, _lib.EINVAL, linattn.attention, q[0, 0], q[0, 0],
           q[0, 0])
    raises(check, "q and k of different ranks", ValueError, _lib.EINVAL, linattn.attention,
           q, q[0], q)
    raises(check, "k with another d_k", ValueError, _lib.EINVAL, linattn.attention,
           q, np.ones((2, 5, 3), np.float32), q)
    raises(check, "v with other rows than k", ValueError, _lib.EINVAL, linattn.attention,
           q, q, np.ones((2, 6, 4), np.float32))
    raises(check, "zero rows", ValueError, _lib.EINVAL, linattn.attention, q[:, :0], q, q)
    out = np.empty((2, 5, 4), dtype=np.float32)
    out.flags.writeable = False
    raises(check, "read-only out", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           out=out)
    raises(check, "out of another type", ValueError, _lib.EDTYPE, linattn.attention, q, q, q,
           out=np.empty((2, 5, 4)))
    raises(check, "out of another shape", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           out=np.empty((2, 5, 3), np.float32))
    raises(check, "out whose last axis is strided", ValueError, _lib.EINVAL, linattn.attention,
           q, q, q, out=np.empty((2, 5, 8), np.float32)[:, :, ::2])
    raises(check, "unknown variant", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           "softmaxx")
    raises(check, "unknown parameter", TypeError, None, linattn.attention, q, q, q,
           "softmax", windoww=3)
    raises(check, "a parameter the variant does not read", ValueError, _lib.EINVAL,
           linattn.attention, q, q, q, "softmax", window=3)
    raises(check, "feature_map not elu or relu", ValueError, _lib.EINVAL, linattn.attention,
           q, q, q, "linear", feature_map="tanh")
    raises(check, "window 0 (the library's la_problem_check)", ValueError, _lib.EINVAL,
           linattn.attention, q, q, q, "local", window=0)
    raises(check, "linformer causal", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           "linformer", causal=True)
    raises(check, "linear_recurrent not causal", ValueError, _lib.EINVAL, linattn.attention,
           q, q, q, "linear_recurrent")
    raises(check, "key lengths beyond M", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           key_lengths=[9])
    raises(check, "key lengths of another batch", ValueError, _lib.EINVAL, linattn.attention,
           q, q, q, key_lengths=[1, 2])
    raises(check, "key lengths of floats", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           key_lengths=[2.5])
    raises(check, "a float mask", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           mask=np.zeros((5, 5)))
    raises(check, "layout bnhw", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           layout="bnhw")
    raises(check, "threads 2000", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           threads=2000)
    raises(check, "workspace_limit 1 (LA_EBUDGET)", ValueError, _lib.EBUDGET, linattn.attention,
           q, q, q, "softmax_materialized", workspace_limit=1)
    big = np.full((4, 4), 1e20, dtype=np.float32)
    raises(check, "float32 scores past the range (LA_ERANGE)", FloatingPointError, _lib.ERANGE,
           linattn.attention, big, big, big)
    raises(check, "backward of a variant without one", ValueError, _lib.EINVAL,
           linattn.attention_backward, q, q, q, q, "cosine")
    raises(check, "d_out of another shape", ValueError, _lib.EINVAL,
           linattn.attention_backward, q, q, q, q[:, :4])
    raises(check, "return_lse of linear", ValueError, _lib.EINVAL, linattn.attention, q, q, q,
           "linear", return_lse=True)
    raises(check, "a state of a variant that cannot step", ValueError, _lib.EINVAL,
           linattn.LinearState, 2, 4, 4, variant="softmax")
    with linattn.LinearState(2, 4, 4) as st:
        raises(check, "a step of another type", ValueError, _lib.EDTYPE, st.step,
               q[:, 0].astype(np.float64), q[:, 0], q[:, 0])
        raises(check, "a step of other heads", ValueError, _lib.EINVAL, st.step, q[0, :1],
               q[0, :1], q[0, :1])
        raises(check, "a step past float32's range (LA_ERANGE)", FloatingPointError,
               _lib.ERANGE, st.step, big[:2], big[:2], big[:2])
    raises(check, "params with heads not dividing d_model", ValueError, _lib.EINVAL,
           linattn.params, 10, 3)
    raises(check, "set_num_threads(-1)", ValueError, _lib.EINVAL, linattn.set_num_threads, -1)
    try:
        linattn.attention(q, q, q, "nope")
    except ValueError as e:
        check(getattr(e, "status", None) == "LA_EINVAL" and "linear_recurrent" in str(e),
              "the exception carries .status and lists the variants: %s" % e)


# ---------------------------------------------------------------- leaks, the GIL


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def leaks(check, rng):
    q, k, v = (rng.standard_normal((2, 8, 8)).astype(np.float32) for _ in range(3))
    bad = np.ones((2, 8, 8), dtype=np.int32)

    def round_of_calls():  # 10 calls of every kind
        for _ in range(10):
            linattn.attention(q, k, v, "softmax", causal=True)
            linattn.attention(q, k, v, "linear", return_lse=False)
            linattn.attention_backward(q, k, v, q, "linear")
            with linattn.LinearState(2, 8, 8) as st:
                st.step(q[:, 0], k[:, 0], v[:, 0])
            try:
                linattn.attention(bad, bad, bad)
            except ValueError:
                pass

    linattn.set_num_threads(1)  # tiny problems: one thread is the fastest
    for _ in range(20):  # warm up: caches, the allocator's arenas, lazy imports
        round_of_calls()
    gc.collect()
    tracemalloc.start()
    traced0, rss0 = tracemalloc.get_traced_memory()[0], rss_bytes()
    for _ in range(200):  # 10,000 calls
        round_of_calls()
    gc.collect()  # cyclic garbage is not a leak
    traced1, rss1 = tracemalloc.get_traced_memory()[0], rss_bytes()
    tracemalloc.stop()
    linattn.set_num_threads(0)
    check(traced1 - traced0 < 64 << 10, "10,000 calls: Python's traced memory grew %d bytes"
          % (traced1 - traced0))
    check(rss1 - rss0 < 4 << 20, "10,000 calls: resident memory grew %d bytes" % (rss1 - rss0))


def gil(check, rng):
    """While one thread runs a long kernel call, this one keeps running Python: the longest
    pause between its samples inside the call's time span is a small part of the span (with
    the GIL held through the call it would be nearly all of it)."""
    q = rng.standard_normal((1, 1, 2000, 64))
    span = {}

    def worker():
        span["start"] = time.perf_counter()
        linattn.attention(q, q, q, "softmax_materialized", threads=1)
        span["end"] = time.perf_counter()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # the GIL changes hands often where it is held
    thread = threading.Thread(target=worker)
    samples = []
    thread.start()
    while thread.is_alive():
        samples.append(time.perf_counter())
    thread.join()
    sys.setswitchinterval(interval)
    inside = [span["start"]] + [s for s in samples if span["start"] < s < span["end"]] + \
        [span["end"]]
    pause = max(b - a for a, b in zip(inside, inside[1:]))
    length = span["end"] - span["start"]
    check(pause < 0.5 * length, "Python ran %d times during a %.0f ms kernel call, its longest "
          "pause %.1f ms (the GIL released)" % (len(inside) - 2, 1e3 * length, 1e3 * pause))


def main():
    binary = checks.binary_arg("numpy_package.py")
    rng = np.random.default_rng(checks.seed("numpy_package"))
    check = checks.Checks("numpy_package")
    layout(check)
    configuration(check)
    forward(check, rng)
    layouts(check, rng)
    masks(check, rng)
    backward(check, rng)
    weights(check, rng)
    state(check, rng)
    cost(check)
    command(check, rng, binary)
    errors(check)
    leaks(check, rng)
    gil(check, rng)
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
