#!/bin/sh
# sizes.sh — hostile sizes and thread counts through the command.
# Sizes whose arrays overflow, sizes beyond the memory budget, a cost model that
# cannot count, thread counts outside 1..1024 (flag or LA_NUM_THREADS): each is refused
# before anything is allocated, exit 2 and exactly one line `linattn: ...` on stderr;
# a thread count above the cores runs on the cores, recorded as # threads_requested.
# No case may crash or run for long: each runs under `timeout 20`.
# Usage: sh tests/hostile/sizes.sh build/linattn
set -u
bin=${1:?usage: sizes.sh path/to/linattn}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail, refused
big=2305843009213693952   # 2^61: times 8 bytes wraps size_t
max=18446744073709551615  # SIZE_MAX

# refused_env NAME VALUE ARGS...: the same with LA_NUM_THREADS=VALUE
refused_env() {
    name=$1 value=$2
    shift 2
    LA_NUM_THREADS=$value refused "$name" "$@"
}

# ---------------------------------------------------------------- class 1: sizes

# (T+1)·8 wrapped in decode: a heap overflow, caught at parse now; no file left
refused decode_tokens_overflow decode --tokens $big --out "$tmp/d.csv"
[ -e "$tmp/d.csv" ] && fail decode_tokens_overflow_no_file "left $tmp/d.csv" || echo "ok decode_tokens_overflow_no_file"
refused decode_heads_overflow decode --tokens 16 --heads $big --out "$tmp/d.csv"
refused decode_d_overflow decode --tokens 16 --d $big --max-mem 1000000G --out "$tmp/d.csv"
# addressable but beyond memory: skipped and recorded, nothing allocated, even when
# --max-mem asks for more than the machine has
timeout 20 "$bin" decode --tokens 1000000000000 --max-mem 1000000G --out "$tmp/d2.csv" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q ',skipped_mem,' "$tmp/d2.csv" 2>/dev/null; then
    fail decode_beyond_memory_skipped "exit $rc, want 0 and skipped_mem rows ($(head -c 160 "$tmp/err"))"
else
    echo "ok decode_beyond_memory_skipped"
fi
refused scaling_n_range_overflow scaling --n 1:$big --out "$tmp/s.csv"
# a factor just above 1: some 10^15 steps from LO to HI (refused at once, not looped)
refused scaling_factor_near_one scaling --n 16:64:x1.000000000000001 --out "$tmp/s.csv"
refused crossover_factor_near_one crossover --n 16:64:x1.0000000000001 --out "$tmp/c.csv"
refused scaling_batch_overflow scaling --batch $big --heads 4 --out "$tmp/s.csv"
refused accuracy_n_range_overflow accuracy --n 1:$big --out "$tmp/a.csv"
refused accuracy_fixed_n_overflow accuracy --fixed-n $max --out "$tmp/a.csv"
refused crossover_heads_overflow crossover --heads $big --out "$tmp/c.csv"
# arrays addressable, the cost model's float64 count not: was exit 1, stderr empty
refused crossover_cost_failure crossover --heads $big --d 1 --n 1 --out "$tmp/c.csv"
refused block_sweep_d_model_overflow block-sweep --d-model $big --heads 1 --out "$tmp/b.csv"
refused block_sweep_weights_over_budget block-sweep --d-model 1000000 --heads 1 --n 1 --out "$tmp/b.csv"
refused complexity_d_overflow complexity --d $big --n 16 --out "$tmp/x.csv"
refused complexity_weights_beyond_memory complexity --d 100000 --n 16 --out "$tmp/x.csv"
refused complexity_width_overflow complexity --kernel-width 2305843009213693953 --n 16 --out "$tmp/x.csv"
refused roofline_heads_overflow roofline --heads $big --n 16 --d 8 --out "$tmp/x.csv"
refused bench_beyond_memory bench --variant linear --n 100000000 --reps 1
refused bench_scores_beyond_memory bench --variant softmax_materialized --n 1000000 --reps 1
refused bench_heads_overflow bench --variant linear --n 16 --heads $big
refused flops_n_overflow flops --d-model 8 --heads 1 --d-ff 8 --n $big
refused flops_batch_overflow flops --d-model 8 --heads 8 --d-ff 8 --n 8 --batch $max
refused params_layers_overflow params --d-model 8 --heads 1 --d-ff 8 --encoder-layers $big
refused params_vocab_overflow params --d-model 8 --heads 1 --d-ff 8 --vocab $max
refused params_d_model_overflow params --d-model 4294967296 --heads 1 --d-ff 8

# ---------------------------------------------------------------- class 3: threads

# 100000 reached BLIS unclamped (a segfault in libgomp); 0, -1, 'abc' and 1025 too
for t in 0 -1 100000 abc 1025 2147483648; do
    refused "bench_threads_$t" bench --variant linear --n 64 --reps 1 --threads "$t"
done
refused flops_threads_0 flops --d-model 8 --heads 1 --d-ff 8 --n 8 --threads 0
refused scaling_threads_100000 scaling --threads 100000 --out "$tmp/s.csv"
refused attend_threads_100000 attend --variant softmax --q q.npy --k k.npy --v v.npy --out y.npy --threads 100000
refused_env env_threads_100000 100000 flops --d-model 8 --heads 1 --d-ff 8 --n 8
refused_env env_threads_abc abc decode --tokens 16 --out "$tmp/d3.csv"
refused_env env_threads_0 0 bench --variant linear --n 64 --reps 1

# above the cores: runs on the cores, the request in the metadata (fast: a few tokens)
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
clamped() {
    name=$1 file=$2
    shift 2
    timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        fail "$name" "exit $rc, want 0 ($(head -c 160 "$tmp/err"))"
    elif [ "$cores" -ge 64 ]; then
        echo "ok $name (64 threads fit the $cores cores: nothing to clamp)"
    elif ! grep -q "^# threads: $cores\$" "$file" ||
        ! grep -q '^# threads_requested: 64 (clamped' "$file"; then
        fail "$name" "no '# threads: $cores' and '# threads_requested: 64 (clamped ...' in $file"
    else
        echo "ok $name"
    fi
}
clamped decode_threads_64_clamped "$tmp/d4.csv" \
    "$bin" decode --tokens 16 --threads 64 --reps 1 --out "$tmp/d4.csv"
LA_NUM_THREADS=64 clamped env_threads_64_clamped "$tmp/d5.csv" \
    "$bin" decode --tokens 16 --reps 1 --out "$tmp/d5.csv"
clamped bench_threads_64_clamped "$tmp/out" \
    "$bin" bench --variant linear --n 64 --reps 1 --threads 64 --format csv

exit $failed
