#!/bin/sh
# messages.sh — what the command writes about a run stays readable whatever it is given:
# a control character in a path is escaped in the `# command:` line (which stays one
# line, so --resume reads the file back) and in an error line (which stays one line);
# --resume measures again an `ok` row whose median is not a number; a bool weights file
# is called bool; `csv --meta` writes valid UTF-8 JSON from a file that is not UTF-8;
# help into a full device fails. And OMP_NUM_THREADS empty: the run succeeds, the only
# message libgomp's own (it reads the variable before linattn runs).
# Usage: messages.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: messages.sh path/to/linattn}")" && pwd)/$(basename "$1")
py=/usr/bin/python3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail
cd "$t" || exit 1
ok() { echo "ok $1${2:+ # $2}"; }

# ---- a newline in --out: the # command: line stays one line, --resume reads it back
nl_out=$(printf 'a\nb.csv')
"$bin" params-sweep --d-model 64 --out ref.csv >/dev/null 2>&1
"$bin" params-sweep --d-model 64 --out "$nl_out" >/dev/null 2>err.txt
rc=$?
header() { grep -v '^#' "$1" | head -n 1; }
if [ "$rc" != 0 ]; then
    fail metadata_newline_escaped "exit $rc: $(head -c 200 err.txt)"
elif [ "$(header "$nl_out")" != "$(header ref.csv)" ]; then
    fail metadata_newline_escaped "the header row became '$(header "$nl_out" | head -c 100)'"
elif ! grep -q '^# command: .*a\\nb\.csv$' "$nl_out"; then
    fail metadata_newline_escaped "no '# command: ... a\\nb.csv' line"
elif ! "$bin" params-sweep --d-model 64,128 --resume --out "$nl_out" >/dev/null 2>err.txt; then
    fail metadata_newline_escaped "--resume refused it: $(head -c 200 err.txt)"
else ok metadata_newline_escaped; fi

# ---- an error line stays one line, its control characters escaped
"$bin" attend --variant softmax --q "$(printf 'x\ny\033[31m.npy')" --k k.npy --v v.npy \
    --out y.npy >out.txt 2>err.txt
rc=$?
if [ "$rc" != 2 ] || [ "$(wc -l <err.txt)" != 1 ]; then
    fail error_line_escaped "exit $rc, $(wc -l <err.txt) lines: $(head -c 200 err.txt)"
elif grep -q "$(printf '\033')" err.txt; then
    fail error_line_escaped "a raw escape character in: $(head -c 200 err.txt)"
elif ! grep -q 'x\\ny\\x1b\[31m\.npy' err.txt; then
    fail error_line_escaped "the path is not shown escaped: $(head -c 200 err.txt)"
else ok error_line_escaped; fi

# ---- --resume measures an ok row whose median is nan again
"$bin" scaling --n 16 --d 8 --heads 1 --variant linear --no-fit --out s.csv >/dev/null 2>&1
"$py" - s.csv <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
h = [i for i, l in enumerate(lines) if l and not l.startswith("#")][0]
cols = lines[h].split(",")
row = lines[h + 1].split(",")
row[cols.index("median_s")] = "nan"
lines[h + 1] = ",".join(row)
open(p, "w").write("\n".join(lines))
EOF
"$bin" scaling --n 16 --d 8 --heads 1 --variant linear --no-fit --resume --out s.csv \
    >/dev/null 2>err.txt
rc=$?
median=$("$py" - s.csv <<'EOF'
import sys
rows = [l.rstrip("\n").split(",") for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
print(rows[-1][rows[0].index("median_s")])
EOF
)
if [ "$rc" != 0 ]; then
    fail resume_nan_median "exit $rc: $(head -c 200 err.txt)"
elif ! "$py" -c 'import math, sys; v = float(sys.argv[1]); sys.exit(not (math.isfinite(v) and v > 0))' "$median"; then
    fail resume_nan_median "the ok row with median nan was kept (median '$median')"
else ok resume_nan_median; fi

# ---- a bool weights file is called bool
mkdir w
"$py" - <<'EOF'
import numpy as np
D, F = 8, 16
shapes = {"self_attn.in_proj_weight": (3 * D, D), "self_attn.in_proj_bias": (3 * D,),
          "self_attn.out_proj.weight": (D, D), "self_attn.out_proj.bias": (D,),
          "linear1.weight": (F, D), "linear1.bias": (F,), "linear2.weight": (D, F),
          "linear2.bias": (D,), "norm1.weight": (D,), "norm1.bias": (D,),
          "norm2.weight": (D,), "norm2.bias": (D,)}
for k, s in shapes.items():
    np.save(f"w/{k}.npy", np.full(s, 0.1, np.float32))
np.save("w/norm1.weight.npy", np.ones(D, bool))
np.save("x.npy", np.ones((4, D), np.float32))
EOF
"$bin" block --weights w --x x.npy --heads 2 --out y.npy >out.txt 2>err.txt
rc=$?
if [ "$rc" != 2 ] || ! grep -q 'dtype is bool' err.txt; then
    fail weights_bool_named "exit $rc: $(head -c 200 err.txt)"
else ok weights_bool_named; fi

# ---- csv --meta: JSON in UTF-8 from a file that is not
{
    printf '# linattn params: a file with a Latin-1 byte\n'
    printf '# cpu: caf\351 \377\376 \300\257\n'
    printf 'kind,d_model\nsweep,64\n'
} >latin.csv
"$bin" csv --meta latin.csv >meta.json 2>err.txt
rc=$?
if [ "$rc" != 0 ]; then
    fail csv_meta_invalid_utf8 "exit $rc: $(head -c 200 err.txt)"
elif ! "$py" -c 'import json, sys; json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))' \
    meta.json 2>err.txt; then
    fail csv_meta_invalid_utf8 "not UTF-8 JSON: $(tail -n 1 err.txt)"
else ok csv_meta_invalid_utf8; fi

# ---- help into a full device
if [ -w /dev/full ]; then
    for args in "help" "help attend" "attend --help" "--version"; do
        # shellcheck disable=SC2086 # args is a word list
        "$bin" $args >/dev/full 2>err.txt
        rc=$?
        if [ "$rc" = 0 ] || [ "$(wc -l <err.txt)" != 1 ]; then
            fail "full_stdout_$(echo "$args" | tr ' -' '__')" "exit $rc, $(wc -l <err.txt) lines"
        else ok "full_stdout_$(echo "$args" | tr ' -' '__')"; fi
    done
else
    ok full_stdout "skipped: no writable /dev/full"
fi

# ---- OMP_NUM_THREADS empty: a successful run; libgomp's own warning is the only message
# besides attend's line saying how it read the input
"$py" -c 'import numpy as np; [np.save(n, np.ones((8, 4), np.float32)) for n in ("q.npy", "k.npy", "v.npy")]'
OMP_NUM_THREADS='' "$bin" attend --variant linear --q q.npy --k k.npy --v v.npy --out y.npy \
    >out.txt 2>err.txt
rc=$?
if [ "$rc" != 0 ]; then
    fail omp_num_threads_empty "exit $rc: $(head -c 200 err.txt)"
elif grep -v -e '^libgomp: ' -e '^attend: input ' err.txt | grep -q .; then
    fail omp_num_threads_empty "a message besides libgomp's and the input line: $(grep -v -e '^libgomp: ' -e '^attend: input ' err.txt | head -c 200)"
else ok omp_num_threads_empty "libgomp's warning is documented"; fi
exit $failed
