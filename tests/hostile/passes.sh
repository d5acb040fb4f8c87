#!/bin/sh
# passes.sh — the gradient flags through the command: bench --pass refused when misused
# (unknown pass, with --goals, no value), a kernel without a backward skipped with a note
# (or, once it has one, measured), the csv saying its pass; attend's gradient flags
# refused without their partners and with a dO of the wrong shape, leaving no file; the
# help texts naming the flags. (The gradients' values: tests/command/attend_grad_numpy.py.)
# Usage: sh tests/hostile/passes.sh build/linattn
set -u
bin=${1:?usage: passes.sh path/to/linattn}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail, refused

# ---------------------------------------------------------------- bench --pass

refused bench_pass_unknown bench --pass sideways --variant linear --n 16 --reps 1
refused bench_pass_no_value bench --variant linear --n 16 --reps 1 --pass
refused bench_pass_twice bench --pass train --pass backward --variant linear --n 16 --reps 1
refused bench_pass_with_goals bench --goals --pass train

# every kernel, each pass: exit 0; a row per kernel, measured or "skipped: no backward"
for pass in forward backward train; do
    timeout 60 "$bin" bench --pass $pass --n 16 --reps 1 --min-time 0 --threads 1 >"$tmp/out" 2>"$tmp/err"
    rc=$?
    rows=$(grep -cE '^(softmax|hard|linear)' "$tmp/out")
    bad=$(grep -E '^(softmax|hard|linear)' "$tmp/out" | grep -vE ' [0-9.e+-]+ +[0-9.e+-]+ +[0-9]+ *$|skipped: no backward$' | head -1)
    if [ "$rc" -ne 0 ] || [ "$rows" -lt 4 ] || [ -n "$bad" ]; then
        fail "bench_pass_$pass" "exit $rc, $rows kernel rows, odd row: '$bad' ($(head -c 160 "$tmp/err"))"
    elif [ "$pass" != forward ] && grep -E '^(softmax|hard|linear)' "$tmp/out" | grep -qv "/$pass"; then
        fail "bench_pass_$pass" "a row without /$pass after its variant"
    elif [ "$pass" = forward ] && grep -q 'no backward' "$tmp/out"; then
        fail "bench_pass_$pass" "the forward skipped a kernel for want of a backward"
    else
        echo "ok bench_pass_$pass"
    fi
done
timeout 60 "$bin" bench --pass train --variant linear --n 16 --reps 1 --min-time 0 --threads 1 --format csv \
    >"$tmp/out" 2>"$tmp/err"
if [ $? -ne 0 ] || ! grep -q '^# pass: train' "$tmp/out" ||
    ! grep -qE '^linear,linear,0,16,.*,(ok|skipped_no_backward),' "$tmp/out"; then
    fail bench_pass_csv "want '# pass: train' and a linear row ok or skipped_no_backward: $(head -c 300 "$tmp/out" | tail -c 160)"
else
    echo "ok bench_pass_csv"
fi

# ---------------------------------------------------------------- attend's gradient flags

/usr/bin/python3 - "$tmp" <<'PY' || { fail attend_inputs "cannot write the .npy inputs"; }
import sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(0)
for name, shape in (("q", (2, 5, 4)), ("k", (2, 6, 4)), ("v", (2, 6, 3)), ("do", (2, 5, 3)),
                    ("do_bad", (2, 5, 4))):
    np.save("%s/%s.npy" % (d, name), r.standard_normal(shape).astype(np.float32))
PY
in="--variant linear --causal --q $tmp/q.npy --k $tmp/k.npy --v $tmp/v.npy --out $tmp/y.npy"
grads="--grad-q $tmp/dq.npy --grad-k $tmp/dk.npy --grad-v $tmp/dv.npy"
no_files() {
    if ls "$tmp" | grep -qE '^(y|dq|dk|dv)\.npy|\.tmp\.'; then
        fail "$1_no_file" "left $(ls "$tmp" | tr '\n' ' ')"
    else
        echo "ok $1_no_file"
    fi
}
# shellcheck disable=SC2086
refused attend_grad_out_alone attend $in --grad-out "$tmp/do.npy"
no_files attend_grad_out_alone
# shellcheck disable=SC2086
refused attend_grads_without_grad_out attend $in $grads
# shellcheck disable=SC2086
refused attend_grad_out_shape attend $in --grad-out "$tmp/do_bad.npy" $grads
grep -q 'differs from the output' "$tmp/err" || fail attend_grad_out_shape_reason "$(cat "$tmp/err")"
no_files attend_grad_out_shape
# shellcheck disable=SC2086
refused attend_recurrent_grad_out_shape attend $(echo "$in" | sed "s/--variant linear /--variant linear_recurrent /") --grad-out "$tmp/do_bad.npy" $grads
no_files attend_recurrent_grad_out_shape

# ---------------------------------------------------------------- help

help_ok=1
for flag in --grad-out --grad-q --grad-k --grad-v; do
    "$bin" help attend | grep -q -- "$flag" || { fail "help_attend_$flag" "not in linattn help attend"; help_ok=0; }
done
"$bin" help bench | grep -q -- '--pass P' || { fail help_bench_pass "--pass not in linattn help bench"; help_ok=0; }
"$bin" help bench | tr -s ' \n' ' ' | grep -q 'skipped: no backward' || { fail help_bench_goals "no word on skipped goals"; help_ok=0; }
[ $help_ok -eq 1 ] && echo "ok help_texts"
exit $failed
