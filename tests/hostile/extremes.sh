#!/bin/sh
# extremes.sh — no silent wrong answer at extreme values, through
# `linattn attend` and `linattn block --variant linear`. Inputs near the limits of
# float32 must either give a finite output that matches float64 (NumPy, or the command's
# own --precision float64), or exit 2 with exactly one line
# "linattn: attend: values overflow float32: use --precision float64" and no file:
# never exit 0 with NaN, inf or zero rows a query did not earn. Each case runs on the
# default paths and again with LA_SIMD=off (the portable float32 kernels).
# Prints "ok NAME" or "FAIL NAME: why" per case; exits 1 if any failed.
# Usage: sh tests/hostile/extremes.sh build/linattn
set -u
bin=${1:?usage: extremes.sh path/to/linattn}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail

# Inputs: q, k (B=1, H=2, N=24, d=16) as multiples of 1/8 in [-3.125, 3.125] times
# a power of two (scores exact in float32), v in N(0, 1); a name and the magnitudes.
make_inputs() { # dir q_mag k_mag v_mag q_sign
    "$py" - "$@" <<'EOF'
import sys, numpy as np
d, qm, km, vm, sign = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5]
rng = np.random.default_rng(7)
def grid(mag):
    return rng.integers(-25, 26, (2, 24, 16)) / 8 * 2.0 ** round(np.log2(mag))
q = grid(qm)
if sign == "neg":
    q = -np.abs(q) - 2.0 ** round(np.log2(qm)) / 8
for name, a in (("q", q), ("k", grid(km)), ("v", rng.normal(0, 1, (2, 24, 16)) * vm)):
    np.save(f"{d}/{name}.npy", a.astype(np.float32))
EOF
}

# refuses NAME ARGS...: exit 2, exactly the overflow line, no output file.
refuses() {
    name=$1 cmd=$2
    shift 2
    rm -f "$tmp/y.npy"
    "$bin" "$cmd" "$@" --out "$tmp/y.npy" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    want="linattn: $cmd: values overflow float32: use --precision float64"
    if [ "$rc" -ne 2 ]; then
        fail "$name" "exit $rc, not 2 ($(head -c 200 "$tmp/err"))"
    elif [ "$(cat "$tmp/err")" != "$want" ]; then
        fail "$name" "stderr is '$(head -c 200 "$tmp/err")', not '$want'"
    elif ls "$tmp" | grep -q '^y\.npy'; then
        fail "$name" "an output file was left"
    else
        echo "ok $name"
    fi
}

# computes NAME REF ARGS...: exit 0 and an output all finite within 1e-4 of REF.npy
# (REF = "zero": all zeros; REF = "f64": the same command in --precision float64;
# REF = "finite": finiteness only, for a float64 run, which has no float64 to match).
computes() {
    name=$1 ref=$2 cmd=$3
    shift 3
    rm -f "$tmp/y.npy" "$tmp/y64.npy"
    "$bin" "$cmd" "$@" --out "$tmp/y.npy" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name" "exit $rc ($(head -c 200 "$tmp/err"))"
        return
    fi
    if [ "$ref" = f64 ]; then
        "$bin" "$cmd" "$@" --precision float64 --out "$tmp/y64.npy" 2>"$tmp/err"
        rc=$?
        if [ "$rc" -ne 0 ]; then
            fail "$name" "float64 exit $rc ($(head -c 200 "$tmp/err"))"
            return
        fi
    fi
    why=$("$py" - "$tmp" "$ref" <<'EOF'
import sys, numpy as np
d, ref = sys.argv[1:3]
y = np.load(f"{d}/y.npy").astype(np.float64)
if not np.isfinite(y).all():
    print(f"{np.count_nonzero(~np.isfinite(y))} of {y.size} outputs not finite")
elif ref == "finite":
    pass
elif ref == "zero":
    if np.any(y != 0):
        print("not the zero rows of queries that attend to nothing")
else:
    r = np.load(f"{d}/y64.npy")
    err = np.linalg.norm(y - r) / max(np.linalg.norm(r), 1e-300)
    if not err < 1e-4:
        print(f"relative error {err:.3g} against float64")
    elif np.any(np.all(y == 0, axis=-1)) and not np.any(np.all(r == 0, axis=-1)):
        print("zero rows where float64 has none")
EOF
)
    if [ -n "$why" ]; then
        fail "$name" "$why"
    else
        echo "ok $name"
    fi
}

# block inputs: weights of a D = 16, H = 2, d_ff = 32 layer, and X (N = 12) at a scale.
make_block() { # dir x_mag
    "$py" - "$@" <<'EOF'
import math, os, sys, numpy as np
d, xm = sys.argv[1], float(sys.argv[2])
rng = np.random.default_rng(11)
D, F = 16, 32
w = {"self_attn.in_proj_weight": rng.normal(0, 1 / math.sqrt(D), (3 * D, D)),
     "self_attn.in_proj_bias": rng.normal(0, 0.1, 3 * D),
     "self_attn.out_proj.weight": rng.normal(0, 1 / math.sqrt(D), (D, D)),
     "self_attn.out_proj.bias": rng.normal(0, 0.1, D),
     "linear1.weight": rng.normal(0, 1 / math.sqrt(D), (F, D)), "linear1.bias": rng.normal(0, 0.1, F),
     "linear2.weight": rng.normal(0, 1 / math.sqrt(F), (D, F)), "linear2.bias": rng.normal(0, 0.1, D),
     "norm1.weight": 1 + rng.normal(0, 0.1, D), "norm1.bias": rng.normal(0, 0.1, D),
     "norm2.weight": 1 + rng.normal(0, 0.1, D), "norm2.bias": rng.normal(0, 0.1, D)}
os.makedirs(f"{d}/w", exist_ok=True)
for key, a in w.items():
    np.save(f"{d}/w/{key}.npy", a.astype(np.float32))
np.save(f"{d}/x.npy", (rng.normal(0, 1, (12, D)) * xm).astype(np.float32))
EOF
}

run_all() { # label
    l=$1
    make_inputs "$tmp" 1e20 1e20 1 pos
    refuses "$l: softmax, q = k = ±1e20" attend --variant softmax --q "$tmp/q.npy" \
        --k "$tmp/k.npy" --v "$tmp/v.npy"
    refuses "$l: softmax materialized, q = k = ±1e20" attend \
        --variant softmax_materialized --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    computes "$l: softmax, q = k = ±1e20, float64" finite attend --variant softmax \
        --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy" --precision float64
    make_inputs "$tmp" 1 1 1 pos
    refuses "$l: softmax, --scale 1e38" attend --variant softmax --q "$tmp/q.npy" \
        --k "$tmp/k.npy" --v "$tmp/v.npy" --scale 1e38
    computes "$l: softmax, logits ±1e4" f64 attend --variant softmax --q "$tmp/q.npy" \
        --k "$tmp/k.npy" --v "$tmp/v.npy" --scale 1000 --causal
    make_inputs "$tmp" 1e30 1e30 1e30 pos
    refuses "$l: linear, inputs 1e30" attend --variant linear --q "$tmp/q.npy" \
        --k "$tmp/k.npy" --v "$tmp/v.npy"
    make_inputs "$tmp" 1e18 1e18 1 pos
    computes "$l: linear, inputs 1e18 (S in range)" f64 attend --variant linear \
        --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    refuses "$l: linear causal, inputs 1e18" attend --variant linear --causal \
        --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    refuses "$l: linear recurrent, inputs 1e18" attend --variant linear_recurrent --causal \
        --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    make_inputs "$tmp" 1 1 1 neg
    computes "$l: linear relu eps 0, all-negative q" zero attend --variant linear \
        --feature-map relu --eps 0 --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    computes "$l: linear causal relu eps 0, all-negative q" zero attend --variant linear \
        --causal --feature-map relu --eps 0 --q "$tmp/q.npy" --k "$tmp/k.npy" --v "$tmp/v.npy"
    make_block "$tmp" 1e18
    refuses "$l: block linear post-LN, x 1e18" block --variant linear --weights "$tmp/w" \
        --x "$tmp/x.npy" --heads 2
    computes "$l: block linear post-LN, x 1e18, float64" finite block --variant linear \
        --weights "$tmp/w" --x "$tmp/x.npy" --heads 2 --precision float64
    make_block "$tmp" 1e3
    computes "$l: block linear, x 1e3" f64 block --variant linear --weights "$tmp/w" \
        --x "$tmp/x.npy" --heads 2
}

run_all default
LA_SIMD=off
export LA_SIMD
run_all LA_SIMD=off
exit $failed
