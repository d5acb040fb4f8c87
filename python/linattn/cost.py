"""cost.py — the library's cost model (la_attention_cost, la_attention_backward_cost) and
exact parameter counts (la_param_counts)."""
from typing import Any, Dict, Iterable, Optional

import numpy as np

from . import _lib
from ._problem import DTYPES, Call, invalid
from .attention import threads_for_call
from .registry import variant as find_variant

MODEL_OPTIONS = {"no_bias": 1, "rms_norm": 2, "no_final_norm": 4, "embedding_norm": 8,
                 "pooler": 16, "untied_head": 32}  # LA_MODEL_*


def cost(variant: Any, n: int, m: Optional[int] = None, d_k: int = 64, d_v: Optional[int] = None,
         *, batch: int = 1, heads: int = 1, causal: bool = False, dtype: Any = np.float32,
         backward: bool = False, key_lengths: Any = None, causal_align: str = "top-left",
         threads: Optional[int] = None, **params: Any) -> Dict[str, float]:
    """FLOPs and bytes of one call of a variant, the model the library's benchmarks use.

    Parameters
    ----------
    variant : str or Variant
    n, m : int
        Queries and keys per head (m defaults to n).
    d_k, d_v : int
        Head sizes (d_v defaults to d_k).
    batch, heads : int
    causal, key_lengths, causal_align, **params
        As linattn.attention's: causal halves the visible pairs, key lengths shorten rows.
    dtype : float32 or float64
        The element size of the bytes.
    backward : bool
        The backward's cost (variants with Variant.backward) instead of the forward's.
    threads : int, optional
        workspace_bytes is for this many threads (default: the current setting).

    Returns
    -------
    dict
        flops_qk, flops_softmax, flops_av, flops_phi, flops_kv, flops_qs, flops_normalize,
        flops_total, workspace_bytes, io_bytes, bytes_min (lib/linattn.h, la_cost).
    """
    v = find_variant(variant)
    m = n if m is None else m
    d_v = d_k if d_v is None else d_v
    sizes = tuple(Call.count(name, x) for name, x in (("batch", batch), ("heads", heads),
                                                       ("n", n), ("m", m), ("d_k", d_k),
                                                       ("d_v", d_v)))
    la_dtype = DTYPES.get(np.dtype(dtype))
    if la_dtype is None:
        raise _lib.error(_lib.EDTYPE, "linattn.cost: dtype %s, not float32 or float64"
                         % np.dtype(dtype))
    if backward and not v.backward:
        raise invalid("linattn.cost (%s): the variant has no backward" % v.name)
    call = Call(v, sizes, causal=causal, key_lengths=key_lengths, causal_align=causal_align,
                params=params)
    out = _lib.Cost()
    fn = _lib.attention_backward_cost if backward else _lib.attention_cost
    with threads_for_call(threads):
        status = fn(v.kernel, call.problem, la_dtype, out)
    _lib.check(status, "linattn.cost (%s)" % v.name)
    return {name: getattr(out, name) for name, _ in _lib.Cost._fields_}


def flops(variant: Any, n: int, m: Optional[int] = None, d_k: int = 64,
          d_v: Optional[int] = None, **options: Any) -> float:
    """flops_total of cost(variant, n, m, d_k, d_v, **options): the FLOPs of one call."""
    return cost(variant, n, m, d_k, d_v, **options)["flops_total"]


def params(d_model: int, heads: int, d_ff: Optional[int] = None, *, encoder_layers: int = 0,
           decoder_layers: int = 0, vocab: int = 0, learned_positions: int = 0,
           token_types: int = 0, relative_buckets: int = 0,
           options: Iterable[str] = ()) -> Dict[str, float]:
    """Exact parameter counts of a Transformer as PyTorch builds it (la_param_counts; the
    `linattn params` command's numbers).

    Parameters
    ----------
    d_model, heads, d_ff : int
        D, H and the feed-forward width (default 4·D).
    encoder_layers, decoder_layers, vocab, learned_positions, token_types,
    relative_buckets : int
        The stacks and tables (0: none; learned_positions 0 is the sinusoidal encoding).
    options : iterable of str
        "no_bias", "rms_norm", "no_final_norm", "embedding_norm", "pooler", "untied_head".

    Returns
    -------
    dict
        mha, ffn, layer_norm, encoder_layer, decoder_layer, encoder, decoder, embedding,
        positional, token_type, relative_position, embedding_norm, pooler, head, total,
        approx_12d2 (ints) and approx_gap (float).
    """
    size = _lib.ModelSize()
    d_ff = 4 * d_model if d_ff is None else d_ff
    for name, value in (("d_model", d_model), ("heads", heads), ("d_ff", d_ff),
                        ("encoder_layers", encoder_layers), ("decoder_layers", decoder_layers),
                        ("vocab", vocab), ("learned_positions", learned_positions),
                        ("token_types", token_types), ("relative_buckets", relative_buckets)):
        setattr(size, name, Call.count(name, value))
    bits = 0
    for option in ([options] if isinstance(options, str) else options):
        if option not in MODEL_OPTIONS:
            raise invalid("linattn.params: option %r is not one of %s"
                          % (option, ", ".join(MODEL_OPTIONS)))
        bits |= MODEL_OPTIONS[option]
    size.options = bits
    out = _lib.ParamCount()
    _lib.check(_lib.param_counts(size, out), "linattn.params")
    counts: Dict[str, float] = {name: int(getattr(out, name))
                                for name in _lib.PARAM_COUNT_FIELDS}
    counts["approx_gap"] = out.approx_gap
    return counts
