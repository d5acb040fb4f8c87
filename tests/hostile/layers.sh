#!/bin/sh
# layers.sh — float32 overflow inside a layer is refused, not written: a LayerNorm weight
# near the float32 limit (post-LN and pre-LN), an input near it (post-LN) and a residual
# sum beyond it make `linattn block` exit 2 with attention's one line "values overflow
# float32: use --precision float64" and leave no file, where float64 computes a finite
# output.
# Usage: layers.sh build/linattn
set -u
bin=${1:?usage: layers.sh path/to/linattn}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail

# block_inputs CASE: weights of a D = 16, H = 2, d_ff = 32 layer and X (N = 6) in $tmp:
#   norm_huge  norm1.weight = 3e38 (γ near float32's limit)
#   input_huge x = N(0, 1) · 3e38, clipped to float32's range
#   residual   x = 3e38 in one column and an attention output of 1e38 added to it
block_inputs() {
    rm -rf "$tmp/w" "$tmp/x.npy"
    "$py" - "$tmp" "$1" <<'EOF'
import math, os, sys, numpy as np
d, case = sys.argv[1:3]
rng = np.random.default_rng(5)
D, F, N = 16, 32, 6
w = {"self_attn.in_proj_weight": rng.normal(0, 1 / math.sqrt(D), (3 * D, D)),
     "self_attn.in_proj_bias": rng.normal(0, 0.1, 3 * D),
     "self_attn.out_proj.weight": rng.normal(0, 1 / math.sqrt(D), (D, D)),
     "self_attn.out_proj.bias": rng.normal(0, 0.1, D),
     "linear1.weight": rng.normal(0, 1 / math.sqrt(D), (F, D)), "linear1.bias": rng.normal(0, 0.1, F),
     "linear2.weight": rng.normal(0, 1 / math.sqrt(F), (D, F)), "linear2.bias": rng.normal(0, 0.1, D),
     "norm1.weight": 1 + rng.normal(0, 0.1, D), "norm1.bias": rng.normal(0, 0.1, D),
     "norm2.weight": 1 + rng.normal(0, 0.1, D), "norm2.bias": rng.normal(0, 0.1, D)}
x = rng.normal(0, 1, (N, D))
if case == "norm_huge":
    w["norm1.weight"][:] = 3e38
elif case == "input_huge":
    x = np.clip(x * 3e38, -3.4e38, 3.4e38)
elif case == "residual":
    # attention of x is the constant out_proj.bias = 1e38: added to x = 3e38
    w["self_attn.in_proj_weight"][:] = 0
    w["self_attn.out_proj.weight"][:] = 0
    w["self_attn.out_proj.bias"][:] = 1e38
    x[:, 0] = 3e38
os.makedirs(f"{d}/w")
for key, a in w.items():
    np.save(f"{d}/w/{key}.npy", a.astype(np.float32))
np.save(f"{d}/x.npy", x.astype(np.float32))
EOF
}

# refuses NAME ARGS...: block ARGS exits 2 with the one overflow line and writes nothing;
# the same in float64 exits 0 with a finite output
refuses() {
    name=$1
    shift
    rm -f "$tmp/y.npy" "$tmp/y64.npy"
    timeout 20 "$bin" block --weights "$tmp/w" --x "$tmp/x.npy" --heads 2 "$@" \
        --out "$tmp/y.npy" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    want="linattn: block: values overflow float32: use --precision float64"
    if [ "$rc" -ne 2 ]; then
        fail "$name" "exit $rc, not 2 ($(head -c 200 "$tmp/err"))"
    elif [ "$(cat "$tmp/err")" != "$want" ]; then
        fail "$name" "stderr is '$(head -c 200 "$tmp/err")', not '$want'"
    elif [ -e "$tmp/y.npy" ]; then
        fail "$name" "an output file was left"
    elif ! timeout 20 "$bin" block --weights "$tmp/w" --x "$tmp/x.npy" --heads 2 "$@" \
        --precision float64 --out "$tmp/y64.npy" 2>"$tmp/err"; then
        fail "$name" "float64 refused it too: $(head -c 200 "$tmp/err")"
    elif ! "$py" -c 'import sys, numpy as np; sys.exit(not np.isfinite(np.load(sys.argv[1])).all())' \
        "$tmp/y64.npy"; then
        fail "$name" "float64 output not finite"
    else
        echo "ok $name"
    fi
}

block_inputs norm_huge
refuses block_post_ln_norm_weight_3e38
refuses block_pre_ln_norm_weight_3e38 --norm pre
block_inputs input_huge
refuses block_input_3e38
block_inputs residual
refuses block_residual_sum_overflow

# model: nn.Transformer's weights (one encoder and one decoder layer) whose encoder.norm
# weight is 3e38: the memory the decoder reads overflows
"$py" - "$tmp" <<'EOF'
import math, os, sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(3)
D, F = 16, 32
def layer(prefix, dec):
    t = {"self_attn.in_proj_weight": (3 * D, D), "self_attn.in_proj_bias": (3 * D,),
         "self_attn.out_proj.weight": (D, D), "self_attn.out_proj.bias": (D,),
         "linear1.weight": (F, D), "linear1.bias": (F,), "linear2.weight": (D, F),
         "linear2.bias": (D,), "norm1.weight": (D,), "norm1.bias": (D,), "norm2.weight": (D,),
         "norm2.bias": (D,)}
    if dec:
        t.update({"multihead_attn.in_proj_weight": (3 * D, D),
                  "multihead_attn.in_proj_bias": (3 * D,),
                  "multihead_attn.out_proj.weight": (D, D),
                  "multihead_attn.out_proj.bias": (D,), "norm3.weight": (D,), "norm3.bias": (D,)})
    return {prefix + k: (1 + rng.normal(0, 0.1, s)) if "norm" in k and k.endswith("weight")
            else rng.normal(0, 1 / math.sqrt(D), s) for k, s in t.items()}
w = {**layer("encoder.layers.0.", False), **layer("decoder.layers.0.", True)}
w["encoder.norm.weight"], w["encoder.norm.bias"] = np.full(D, 3e38), np.zeros(D)
w["decoder.norm.weight"], w["decoder.norm.bias"] = np.ones(D), np.zeros(D)
os.makedirs(f"{d}/mw")
for k, a in w.items():
    np.save(f"{d}/mw/{k}.npy", np.asarray(a, np.float32))
np.save(f"{d}/src.npy", rng.normal(0, 1, (5, D)).astype(np.float32))
np.save(f"{d}/tgt.npy", rng.normal(0, 1, (4, D)).astype(np.float32))
EOF
rm -f "$tmp/y.npy"
timeout 20 "$bin" model --weights "$tmp/mw" --src "$tmp/src.npy" --tgt "$tmp/tgt.npy" --heads 2 \
    --out "$tmp/y.npy" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 2 ] ||
    [ "$(cat "$tmp/err")" != "linattn: model: values overflow float32: use --precision float64" ]; then
    fail model_encoder_norm_3e38 "exit $rc: $(head -c 200 "$tmp/err")"
elif [ -e "$tmp/y.npy" ]; then
    fail model_encoder_norm_3e38 "an output file was left"
else
    echo "ok model_encoder_norm_3e38"
fi
exit $failed
