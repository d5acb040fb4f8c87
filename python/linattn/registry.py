"""registry.py — the library's kernel registry (la_kernel_get) as Python values: one Variant
per row, with what it takes and offers."""
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Tuple

from . import _lib

_CAUSAL_RULES = {_lib.CAUSAL_ALLOWED: "allowed", _lib.CAUSAL_REQUIRED: "required",
                 _lib.CAUSAL_REFUSED: "refused"}

# The keyword parameters each LA_PARAM_* bit stands for (linattn.attention's **params).
PARAMETER_NAMES = {
    "scale": ("scale",), "feature_map": ("feature_map",), "eps": ("eps",),
    "chunk": ("chunk",), "window": ("window",),
    "proj": ("proj_rank", "proj_e", "proj_f", "seed"), "features": ("features", "seed", "proj_w"),
    "score_weights": ("score_w", "seed"), "score_dim": ("score_dim", "score_v"),
    "relative": ("max_distance", "rel_k", "rel_v", "seed"),
}


@dataclass(frozen=True)
class Variant:
    """One attention kernel of the library's registry.

    Attributes
    ----------
    name : str
        The one spelling ("softmax", "linear_recurrent", ...).
    summary : str
        One line on what it computes.
    family : str
        "softmax" (exact), "linear", "sparse", "low-rank", "random-feature", "score" or
        "position".
    causal : str
        "allowed", "required" (causal=True only) or "refused" (causal=False only).
    params : tuple of str
        The LA_PARAM_* groups it reads: "scale", "feature_map", "eps", "chunk", "window",
        "proj", "features", "score_weights", "score_dim", "relative".
    parameters : tuple of str
        The keyword parameters of linattn.attention it takes (from params).
    masks : tuple of str
        The general masks it honours: "mask" (linattn.attention's mask=) and "key_mask"
        (key_padding_mask=). Causal masking and key lengths are every variant's.
    capabilities : tuple of str
        What it offers beside its forward: "lse", "weights", "step", "rotary",
        "rotary_features", "positions", "approximates".
    backward : bool
        Whether it has a backward (linattn.attention_backward, linattn.torch).
    sweep : tuple of str
        Which of its series the command's default sweeps run ("plain", "causal").
    time_exponent : float
        e in time ∝ N^e for self-attention at fixed d.
    series : tuple of (str or None)
        Its series names in result files without and with causal masking.
    """
    name: str
    summary: str
    family: str
    causal: str
    params: Tuple[str, ...]
    parameters: Tuple[str, ...]
    masks: Tuple[str, ...]
    capabilities: Tuple[str, ...]
    backward: bool
    sweep: Tuple[str, ...]
    time_exponent: float
    series: Tuple[Optional[str], Optional[str]]
    kernel: int  # the la_kernel value
    block: int  # the la_params_kind of the parameter block it reads (0: none)


def _bits(value: int, names: dict) -> Tuple[str, ...]:
    return tuple(name for name, bit in names.items() if value & bit)


# The capabilities in their documented order (LA_CAP_* bits).
_CAPABILITIES = ("lse", "weights", "step", "rotary", "rotary_features", "positions",
                 "approximates")


def _capabilities(info) -> Tuple[str, ...]:
    present = set(_bits(info.caps, _lib.CAP_BITS))
    return tuple(name for name in _CAPABILITIES if name in present)


def _text(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode()


@lru_cache(maxsize=None)
def variants() -> Tuple[Variant, ...]:
    """Every variant of the registry, in the library's order (la_kernel_get for each
    la_kernel).

    Returns
    -------
    tuple of Variant
    """
    rows = []
    kernel = 0
    while _lib.kernel_get(kernel):  # NULL past the last row
        info = _lib.kernel_get(kernel).contents
        params = _bits(info.params, _lib.PARAM_BITS)
        parameters = tuple(dict.fromkeys(n for group in params for n in PARAMETER_NAMES[group]))
        rows.append(Variant(
            name=info.name.decode(), summary=info.summary.decode(),
            family=info.family.decode(), causal=_CAUSAL_RULES[info.causal], params=params,
            parameters=parameters, masks=_bits(info.masks, _lib.MASK_BITS),
            capabilities=_capabilities(info),
            backward=bool(info.caps & _lib.CAP_BACKWARD), sweep=_bits(info.sweep, _lib.SWEEP_BITS),
            time_exponent=info.time_exponent,
            series=(_text(info.series[0]), _text(info.series[1])), kernel=kernel,
            block=info.block))
        kernel += 1
    return tuple(rows)


def variant(name: str) -> Variant:
    """The variant named name (la_kernel_parse: '-' reads as '_').

    Raises
    ------
    ValueError
        For a name no row has, with la_strerror's message and the names there are.
    """
    if isinstance(name, Variant):
        return name
    known = _BY_NAME.get(name)
    if known is not None:
        return known
    kernel = _lib.c_int()
    status = _lib.kernel_parse(str(name).encode(), kernel)
    if status != _lib.OK:
        raise _lib.error(status, "linattn: unknown variant %r (variants: %s)"
                         % (name, ", ".join(v.name for v in variants())))
    found = variants()[kernel.value]
    if isinstance(name, str):
        _BY_NAME[name] = found
    return found


_BY_NAME: dict = {}  # the names variant() has parsed
