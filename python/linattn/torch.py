"""linattn.torch — linattn's kernels in PyTorch: a differentiable attention function whose
forward and backward are the library's (la_attention, la_attention_backward), and modules
a model can use in place of its own.

    import torch, linattn.torch as lt
    q = torch.randn(2, 8, 1024, 64, requires_grad=True)      # (B, H, N, d_k)
    y = lt.attention(q, q, q, "linear", causal=True)         # (B, H, N, d_v)
    y.sum().backward()                                       # q.grad from the library
    mha = lt.MultiheadAttention(512, 8)                      # nn.MultiheadAttention's keys

CPU tensors of float32 or float64; the variants with a backward (linattn.variants(),
Variant.backward: softmax, softmax_materialized, hard, local, linear, linear_recurrent,
favor, favor_recurrent, taylor) train, the others run where no gradient is needed
(torch.no_grad(), or inputs without requires_grad). Written for the classic
autograd.Function form, which PyTorch 1.13 (Debian's python3-torch) and later take.
"""
from typing import Any, Optional, Tuple

import numpy as np
import torch
from torch import nn

from .attention import attention as _forward
from .attention import attention_backward as _backward
from .attention import attention_weights as _weights
from .registry import variant as _find_variant

__all__ = ["attention", "AttentionFunction", "LinearAttention", "SoftmaxAttention",
           "MultiheadAttention"]


def _array(t: Optional[torch.Tensor], name: str) -> Optional[np.ndarray]:
    """A CPU tensor's NumPy view (no copy; its strides kept), or None."""
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        return np.asarray(t)
    if t.device.type != "cpu":
        raise ValueError("linattn.torch: %s is on %s: linattn runs on the CPU" % (name,
                                                                                  t.device))
    if t.dtype not in (torch.float32, torch.float64, torch.bool, torch.int32, torch.int64,
                       torch.uint8):
        raise ValueError("linattn.torch: %s is %s, not float32 or float64" % (name, t.dtype))
    return t.detach().numpy()


class AttentionFunction(torch.autograd.Function):
    """attention(q, k, v) of one variant, with the library's backward. apply(q, k, v,
    options) with options a dict of linattn.attention's keyword arguments (variant, causal,
    key_lengths, layout, mask, key_padding_mask, threads and the variant's parameters)."""

    @staticmethod
    def forward(ctx: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                options: dict) -> torch.Tensor:
        arrays = [_array(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v"))]
        has_lse = "lse" in _find_variant(options["variant"]).capabilities
        result = _forward(*arrays, return_lse=has_lse, **options)
        out, lse = result if has_lse else (result, None)
        out_t = torch.from_numpy(out)
        ctx.options = options
        ctx.save_for_backward(q, k, v, out_t, None if lse is None else torch.from_numpy(
            np.ascontiguousarray(lse)))
        return out_t

    @staticmethod
    def backward(ctx: Any, d_out: torch.Tensor):
        q, k, v, out, lse = ctx.saved_tensors
        arrays = [_array(x, name) for x, name in ((q, "q"), (k, "k"), (v, "v"))]
        d_q, d_k, d_v = _backward(
            *arrays, _array(d_out.contiguous(), "d_out"), out=out.numpy(),
            lse=None if lse is None else lse.numpy(), **ctx.options)
        grads = tuple(torch.from_numpy(np.ascontiguousarray(g)) if need else None
                      for g, need in zip((d_q, d_k, d_v), ctx.needs_input_grad[:3]))
        return grads + (None,)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, variant: str = "softmax", *,
              causal: bool = False, key_lengths: Any = None, layout: str = "bhnd",
              causal_align: str = "top-left", mask: Optional[torch.Tensor] = None,
              key_padding_mask: Optional[torch.Tensor] = None, threads: Optional[int] = None,
              **params: Any) -> torch.Tensor:
    """Differentiable attention of one registry variant on CPU tensors.

    Parameters
    ----------
    q : Tensor, (N, d_k), (H, N, d_k) or (B, H, N, d_k); layout="bnhd": (N, H, d_k) or
        (B, N, H, d_k)
    k, v : Tensor, shaped as q with M rows (v: d_v columns); q's dtype (float32 or float64)
        Read in place when their last axis is contiguous (a transposed or permuted view
        included); copied once otherwise.
    variant, causal, key_lengths, layout, causal_align, threads, **params
        As linattn.attention's.
    mask : Tensor of bool, (N, M) or (B*H, N, M), optional
        True hides the pair (PyTorch's boolean attn_mask).
    key_padding_mask : Tensor of bool, (B, M), optional
        True hides the key (PyTorch's key_padding_mask).

    Returns
    -------
    Tensor, (…, N, d_v) in q's layout and dtype

    Raises
    ------
    ValueError
        As linattn.attention's; also when a gradient is needed through a variant without
        a backward.
    """
    v_info = _find_variant(variant)
    if (torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad
                                        for x in (q, k, v)) and not v_info.backward):
        raise ValueError("linattn.torch: variant %s has no backward; call it under "
                         "torch.no_grad() or on tensors without requires_grad" % v_info.name)
    options = dict(variant=v_info.name, causal=causal, key_lengths=_array(key_lengths,
                                                                          "key_lengths"),
                   layout=layout, causal_align=causal_align, mask=_array(mask, "mask"),
                   key_padding_mask=_array(key_padding_mask, "key_padding_mask"),
                   threads=threads, **params)
    return AttentionFunction.apply(q, k, v, options)


class SoftmaxAttention(nn.Module):
    """softmax(q kᵀ · scale) v on (B, H, N, d) tensors (scaled_dot_product_attention's
    layout; layout="bnhd" for (B, N, H, d)), through linattn's fused kernel and its
    FlashAttention-2 backward; no parameters.

    Parameters
    ----------
    causal : bool
    scale : float, optional
        Default 1/sqrt(d_k).
    variant : str
        "softmax" (fused, online) or "softmax_materialized".
    layout : {"bhnd", "bnhd"}
    """

    def __init__(self, causal: bool = False, scale: Optional[float] = None,
                 variant: str = "softmax", layout: str = "bhnd"):
        super().__init__()
        self.causal, self.scale, self.variant, self.layout = causal, scale, variant, layout

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                key_padding_mask: Optional[torch.Tensor] = None,
                attn_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        params = {} if self.scale is None else {"scale": self.scale}
        return attention(q, k, v, self.variant, causal=self.causal, layout=self.layout,
                         key_padding_mask=key_padding_mask, mask=attn_mask, **params)

    def extra_repr(self) -> str:
        return "variant=%s, causal=%s, scale=%s" % (self.variant, self.causal, self.scale)


class LinearAttention(nn.Module):
    """Linear attention φ(q)ᵀS / (φ(q)ᵀz + eps) (Katharopoulos et al. 2020) on (B, H, N, d)
    tensors (layout="bnhd" for (B, N, H, d)), through linattn's kernels and their backward;
    no parameters.

    Parameters
    ----------
    causal : bool
        Causal: chunked (variant "linear", chunk tokens at a time) or token by token
        (variant "linear_recurrent").
    feature_map : {"elu", "relu"}
    eps : float
    variant : {"linear", "linear_recurrent"}
    chunk : int, optional
    layout : {"bhnd", "bnhd"}
    """

    def __init__(self, causal: bool = False, feature_map: str = "elu", eps: float = 1e-6,
                 variant: str = "linear", chunk: Optional[int] = None, layout: str = "bhnd"):
        super().__init__()
        self.causal, self.feature_map, self.eps = causal, feature_map, eps
        self.variant, self.chunk, self.layout = variant, chunk, layout

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                key_padding_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        params = {"feature_map": self.feature_map, "eps": self.eps}
        if self.chunk is not None:
            params["chunk"] = self.chunk
        return attention(q, k, v, self.variant, causal=self.causal, layout=self.layout,
                         key_padding_mask=key_padding_mask, **params)

    def extra_repr(self) -> str:
        return "variant=%s, causal=%s, feature_map=%s, eps=%g" % (
            self.variant, self.causal, self.feature_map, self.eps)


class MultiheadAttention(nn.Module):
    """torch.nn.MultiheadAttention with its attention on linattn's kernels: the same
    arguments, parameters and state_dict keys (in_proj_weight, in_proj_bias,
    out_proj.weight, out_proj.bias), so a model's weights load into either.

    Parameters
    ----------
    embed_dim, num_heads, bias, batch_first, device, dtype
        As PyTorch's (kdim = vdim = embed_dim; no dropout, bias_kv or zero attention).
    variant : str
        The registry variant that attends ("softmax" is PyTorch's own arithmetic; "linear",
        "favor", ... replace it; training needs one with a backward).
    **params
        The variant's parameters (linattn.attention's).

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) takes PyTorch's shapes: (L, B, E), or
    (B, L, E) with batch_first, or (L, E); masks bool (True = hidden) or float of 0 and
    -inf. It returns (output, weights): the weights (B, L, S) averaged over heads or
    (B, H, L, S), not differentiable, for variants with the "weights" capability (None
    otherwise or without need_weights).
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: Optional[int] = None, vdim: Optional[int] = None,
                 batch_first: bool = False, device: Any = None, dtype: Any = None,
                 variant: str = "softmax", **params: Any):
        super().__init__()
        if dropout != 0.0 or add_bias_kv or add_zero_attn or kdim not in (None, embed_dim) \
                or vdim not in (None, embed_dim):
            raise ValueError("linattn.torch.MultiheadAttention: dropout, add_bias_kv, "
                             "add_zero_attn and kdim/vdim other than embed_dim are not "
                             "offered")
        if embed_dim % num_heads:
            raise ValueError("linattn.torch.MultiheadAttention: embed_dim %d is not a "
                             "multiple of num_heads %d" % (embed_dim, num_heads))
        factory = {"device": device, "dtype": dtype}
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        self.variant = _find_variant(variant).name
        self.params = params
        self.in_proj_weight = nn.Parameter(torch.empty((3 * embed_dim, embed_dim), **factory))
        self.in_proj_bias = (nn.Parameter(torch.empty(3 * embed_dim, **factory)) if bias
                             else None)
        if not bias:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        nn.init.xavier_uniform_(self.in_proj_weight)
        if bias:
            nn.init.constant_(self.in_proj_bias, 0.0)
            nn.init.constant_(self.out_proj.bias, 0.0)

    @staticmethod
    def _bool_mask(mask: Optional[torch.Tensor], name: str) -> Optional[torch.Tensor]:
        """PyTorch's bool mask (True = hidden) of a bool or 0/-inf float mask."""
        if mask is None or mask.dtype == torch.bool:
            return mask
        hidden = torch.isneginf(mask)
        if not torch.all(hidden | (mask == 0)):
            raise ValueError("linattn.torch.MultiheadAttention: %s holds values other than "
                             "0 and -inf (additive biases are not offered)" % name)
        return hidden

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                key_padding_mask: Optional[torch.Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[torch.Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        batched = query.dim() == 3
        if not batched:  # (L, E): a batch of one
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:  # (B, L, E) -> (L, B, E), views
            query, key, value = (x.transpose(0, 1) for x in (query, key, value))
        n, batch, e = query.shape
        m = key.shape[0]
        h, d = self.num_heads, self.head_dim
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = (self.in_proj_bias.chunk(3) if self.in_proj_bias is not None
                         else (None, None, None))
        # (L, B, E) projections, viewed as (B, H, L, d) without copying: linattn reads the
        # strides of the permuted views
        q = nn.functional.linear(query, w_q, b_q).view(n, batch, h, d).permute(1, 2, 0, 3)
        k = nn.functional.linear(key, w_k, b_k).view(m, batch, h, d).permute(1, 2, 0, 3)
        v = nn.functional.linear(value, w_v, b_v).view(m, batch, h, d).permute(1, 2, 0, 3)
        mask = self._bool_mask(attn_mask, "attn_mask")
        kpm = self._bool_mask(key_padding_mask, "key_padding_mask")
        y = attention(q, k, v, self.variant, causal=is_causal, mask=mask, key_padding_mask=kpm,
                      **self.params)  # (B, H, N, d)
        out = self.out_proj(y.permute(2, 0, 1, 3).reshape(n, batch, e))  # (N, B, E)
        weights = None
        if need_weights and "weights" in _find_variant(self.variant).capabilities:
            with torch.no_grad():
                a = _weights(
                    _array(q, "q"), _array(k, "k"), self.variant, causal=is_causal,
                    mask=_array(mask, "attn_mask"), key_padding_mask=_array(kpm, "kpm"),
                    **self.params)
            weights = torch.from_numpy(a)  # (B, H, N, M)
            if average_attn_weights:
                weights = weights.mean(dim=1)
            if not batched:
                weights = weights.squeeze(0)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        return out, weights
