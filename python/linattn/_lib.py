"""_lib.py — every C declaration linattn's Python package uses, in one place: the shared
library's loading, the structures (mirroring lib/linattn.h field for field), each
function's argument and result types, and statuses turned into exceptions.

Nothing outside this module names a C function or a field offset; a change in
lib/linattn.h is one edit here. ctypes.CDLL releases the GIL during every call.
"""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_size_t, c_uint,
                    c_uint64, c_void_p)

# ---------------------------------------------------------------- the library


def _find_library() -> str:
    """LINATTN_LIBRARY when set, else the liblinattn.so installed beside this module."""
    path = os.environ.get("LINATTN_LIBRARY")
    if path:
        return path
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "liblinattn.so")
    if os.path.exists(here):
        return here
    raise ImportError("linattn: no liblinattn.so beside %s and LINATTN_LIBRARY is not set "
                      "(make python installs the package with the library it was built with)"
                      % os.path.dirname(here))


LIBRARY_PATH = _find_library()
lib = ctypes.CDLL(LIBRARY_PATH)

# ---------------------------------------------------------------- enums (lib/linattn.h)

# la_status, in LA_STATUS_LIST's order
OK, EINVAL, ENOMEM, EBUDGET, EOVERFLOW, EIO, EFORMAT, EDTYPE, ERANGE = range(9)
STATUS_NAMES = ("LA_OK", "LA_EINVAL", "LA_ENOMEM", "LA_EBUDGET", "LA_EOVERFLOW", "LA_EIO",
                "LA_EFORMAT", "LA_EDTYPE", "LA_ERANGE")

FLOAT32, FLOAT64 = 0, 1  # la_dtype
CAUSAL_ALLOWED, CAUSAL_REQUIRED, CAUSAL_REFUSED = 0, 1, 2  # la_causal_rule
CAUSAL_TOP_LEFT, CAUSAL_BOTTOM_RIGHT = 0, 1                # la_causal_align

# LA_PARAM_* bits: the la_problem fields a kernel reads
PARAM_BITS = {
    "scale": 1 << 0, "feature_map": 1 << 1, "eps": 1 << 2, "chunk": 1 << 3,
    "window": 1 << 4, "proj": 1 << 5, "features": 1 << 6, "score_weights": 1 << 7,
    "score_dim": 1 << 8, "relative": 1 << 9,
}
MASK_BITS = {"mask": 1 << 0, "key_mask": 1 << 1}  # LA_MASK_*
CAP_BITS = {  # LA_CAP_* but LA_CAP_BACKWARD (Variant.backward)
    "lse": 1 << 0, "step": 1 << 1, "rotary": 1 << 2,
    "rotary_features": 1 << 3, "positions": 1 << 4, "approximates": 1 << 5,
    "weights": 1 << 7,
}
CAP_BACKWARD = 1 << 6
SWEEP_BITS = {"plain": 1 << 0, "causal": 1 << 1}  # LA_SWEEP_*

# ---------------------------------------------------------------- structures


class Strides(Structure):
    """la_strides: elements between batch entries, heads and rows; all zero: contiguous."""
    _fields_ = [("batch", c_size_t), ("head", c_size_t), ("row", c_size_t)]


class Problem(Structure):
    """la_problem, field for field."""
    _fields_ = [
        ("batch", c_size_t), ("heads", c_size_t), ("n_queries", c_size_t),
        ("n_keys", c_size_t), ("d_k", c_size_t), ("d_v", c_size_t),
        ("causal", c_int),
        ("key_lengths", c_void_p),  # const int64_t *
        ("scale", c_double),
        ("feature_map", c_int),
        ("eps", c_double),
        ("chunk", c_size_t), ("workspace_limit", c_size_t),
        ("params", c_void_p),  # const la_params *: the variant's block
        ("causal_align", c_int),
        ("mask", c_void_p),  # const uint8_t *
        ("mask_per_head", c_int),
        ("key_mask", c_void_p),
        ("stride_q", Strides), ("stride_k", Strides), ("stride_v", Strides),
        ("stride_out", Strides),
    ]


class Params(Structure):
    """la_params: the head of every parameter block."""
    _fields_ = [("kind", c_int), ("next", c_void_p)]


# The parameter blocks by la_params_kind: (structure, its LA_*_PARAMS_INIT values).
PARAMS_LOCAL, PARAMS_LINFORMER, PARAMS_FAVOR, PARAMS_SCORE, PARAMS_RELATIVE = range(1, 6)


def _block(name: str, fields) -> type:
    return type(name, (Structure,), {"_fields_": [("head", Params)] + fields})


BLOCKS = {
    PARAMS_LOCAL: (_block("LocalParams", [("window", c_size_t)]), {"window": 64}),
    PARAMS_LINFORMER: (_block("LinformerParams", [
        ("proj_rank", c_size_t), ("proj_e", c_void_p), ("proj_f", c_void_p),
        ("seed", c_uint64)]), {"proj_rank": 256}),
    PARAMS_FAVOR: (_block("FavorParams", [("features", c_size_t), ("seed", c_uint64),
                                          ("proj_w", c_void_p)]), {"features": 256}),
    PARAMS_SCORE: (_block("ScoreParams", [
        ("score_dim", c_size_t), ("score_w", c_void_p), ("score_v", c_void_p),
        ("seed", c_uint64)]), {"score_dim": 64}),
    PARAMS_RELATIVE: (_block("RelativeParams", [
        ("max_distance", c_size_t), ("rel_k", c_void_p), ("rel_v", c_void_p),
        ("seed", c_uint64)]), {"max_distance": 16}),
}


class Cost(Structure):
    """la_cost."""
    _fields_ = [(name, c_double) for name in (
        "flops_qk", "flops_softmax", "flops_av", "flops_phi", "flops_kv", "flops_qs",
        "flops_normalize", "flops_total", "workspace_bytes", "io_bytes", "bytes_min")]


class KernelInfo(Structure):
    """la_kernel_info: its fields in order (fns, the internal entry points, not used)."""
    _fields_ = [
        ("kernel", c_int), ("name", c_char_p), ("summary", c_char_p),
        ("series", c_char_p * 2), ("causal", c_int), ("params", c_uint), ("block", c_int),
        ("masks", c_uint), ("caps", c_uint), ("sweep", c_uint),
        ("time_exponent", c_double), ("family", c_char_p), ("fns", c_void_p),
    ]


class ConfigInfo(Structure):
    """la_config_info."""
    _fields_ = [("version", c_char_p), ("blis_version", c_char_p), ("blis_config", c_char_p),
                ("simd", c_char_p)]


class ModelSize(Structure):
    """la_model_size."""
    _fields_ = [(name, c_size_t) for name in (
        "d_model", "heads", "d_ff", "encoder_layers", "decoder_layers", "vocab",
        "learned_positions", "token_types", "relative_buckets")] + [("options", c_uint)]


PARAM_COUNT_FIELDS = ("mha", "ffn", "layer_norm", "encoder_layer", "decoder_layer", "encoder",
                      "decoder", "embedding", "positional", "token_type", "relative_position",
                      "embedding_norm", "pooler", "head", "total", "approx_12d2")


class ParamCount(Structure):
    """la_param_count."""
    _fields_ = [(name, c_uint64) for name in PARAM_COUNT_FIELDS] + [("approx_gap", c_double)]


# ---------------------------------------------------------------- functions


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_P = POINTER(Problem)
strerror = _declare("la_strerror", c_char_p, c_int)
set_num_threads = _declare("la_set_num_threads", c_int, c_int)
get_num_threads = _declare("la_get_num_threads", c_int)
num_threads_requested = _declare("la_num_threads_requested", c_int)
config = _declare("la_config", ConfigInfo)
feature_map_name = _declare("la_feature_map_name", c_char_p, c_int)
feature_map_parse = _declare("la_feature_map_parse", c_int, c_char_p, POINTER(c_int))
problem_init = _declare("la_problem_init", None, _P, c_size_t, c_size_t, c_size_t, c_size_t,
                        c_size_t, c_size_t)
problem_check = _declare("la_problem_check", c_int, _P)
# la_attention(kernel, p, dtype, q, k, v, out)
attention = _declare("la_attention", c_int, c_int, _P, c_int, c_void_p, c_void_p, c_void_p,
                     c_void_p)
# la_attention_lse(kernel, p, dtype, q, k, v, out, lse)
attention_lse = _declare("la_attention_lse", c_int, c_int, _P, c_int, c_void_p, c_void_p,
                         c_void_p, c_void_p, c_void_p)
# la_attention_backward(kernel, p, dtype, q, k, v, out, lse, d_out, d_q, d_k, d_v)
attention_backward = _declare("la_attention_backward", c_int, c_int, _P, c_int, c_void_p,
                              c_void_p, c_void_p, c_void_p, c_void_p, c_void_p, c_void_p,
                              c_void_p, c_void_p)
# la_attention_weights(kernel, p, dtype, q, k, out)
attention_weights = _declare("la_attention_weights", c_int, c_int, _P, c_int, c_void_p,
                             c_void_p, c_void_p)
attention_cost = _declare("la_attention_cost", c_int, c_int, _P, c_int, POINTER(Cost))
attention_backward_cost = _declare("la_attention_backward_cost", c_int, c_int, _P, c_int,
                                   POINTER(Cost))
kernel_get = _declare("la_kernel_get", POINTER(KernelInfo), c_int)
kernel_name = _declare("la_kernel_name", c_char_p, c_int)
kernel_parse = _declare("la_kernel_parse", c_int, c_char_p, POINTER(c_int))
# the step API: la_linear_state_create(&st, kernel, p, dtype)
linear_state_create = _declare("la_linear_state_create", c_int, POINTER(c_void_p), c_int, _P,
                               c_int)
linear_state_free = _declare("la_linear_state_free", None, c_void_p)
linear_state_reset = _declare("la_linear_state_reset", None, c_void_p)
linear_state_position = _declare("la_linear_state_position", c_size_t, c_void_p)
linear_step = _declare("la_linear_step", c_int, c_void_p, c_void_p, c_void_p, c_void_p,
                       c_void_p)
linear_state_save_size = _declare("la_linear_state_save_size", c_size_t, c_void_p)
linear_state_save = _declare("la_linear_state_save", c_int, c_void_p, c_void_p, c_size_t)
linear_state_restore = _declare("la_linear_state_restore", c_int, c_void_p, c_void_p, c_size_t)
param_counts = _declare("la_param_counts", c_int, POINTER(ModelSize), POINTER(ParamCount))

# ---------------------------------------------------------------- arrays, statuses


def address(a) -> int:
    """The address of a NumPy array's first element (ndarray.ctypes would build a reference
    cycle per call)."""
    return a.__array_interface__["data"][0]



def message(status: int) -> str:
    """la_strerror's text for a status."""
    return strerror(status).decode()


def error(status: int, what: str) -> Exception:
    """The exception for a status that is not LA_OK: MemoryError (LA_ENOMEM),
    FloatingPointError (LA_ERANGE), OSError (LA_EIO), else ValueError; its text is
    `WHAT: la_strerror's message`, and its .status the status's name (LA_EINVAL, ...)."""
    cls = {ENOMEM: MemoryError, ERANGE: FloatingPointError, EIO: OSError}.get(status, ValueError)
    err = cls("%s: %s" % (what, message(status)))
    err.status = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
    return err


def check(status: int, what: str) -> None:
    """Raises error(status, what) unless status is LA_OK."""
    if status != OK:
        raise error(status, what)
