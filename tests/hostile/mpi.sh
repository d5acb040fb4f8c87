#!/bin/sh
# mpi.sh — an MPI job with a failed rank ends: ranks started with different arguments
# (mpirun's `:`), one of which refuses its flags, all exit 2 instead of waiting in a
# collective for the rank that left. Each case runs under a hard timeout, so a hang
# fails it. Needs the MPI build beside the command (build/mpi/linattn, made by make
# test when mpicc exists) and mpirun; says "skipped" otherwise.
# Usage: mpi.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: mpi.sh path/to/linattn}")" && pwd)/$(basename "$1")
mpibin=$(dirname "$bin")/mpi/linattn
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail
cd "$t" || exit 1
ok() { echo "ok $1${2:+ # $2}"; }

if [ ! -x "$mpibin" ] || ! command -v mpirun >/dev/null 2>&1; then
    ok dist_attend_ranks_disagree "skipped: no $mpibin or mpirun"
    ok dist_scaling_ranks_disagree "skipped: no $mpibin or mpirun"
    exit 0
fi
small_qkv
run_mpi() { timeout -k 5 30 mpirun --oversubscribe --allow-run-as-root "$@" >out.txt 2>err.txt; }

# ends NAME: the job just run (rc in $rc) ended with 2 on rank 0's one line, and no file
ends() {
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        fail "$1" "the job hung (killed by the timeout)"
    elif [ "$rc" = 0 ]; then
        fail "$1" "exit 0 with a rank that refused its flags"
    elif ! grep -q '^linattn: ' err.txt; then
        fail "$1" "exit $rc without a 'linattn:' line: $(head -c 200 err.txt | tr '\n' ' ')"
    elif [ -e "$2" ]; then
        fail "$1" "$2 was written"
    else ok "$1"; fi
}

a="dist-attend --variant linear --q q.npy --k k.npy --v v.npy --out y.npy"
# shellcheck disable=SC2086 # $a is the argument list
run_mpi -np 1 "$mpibin" $a : -np 1 "$mpibin" $a --chunk 0
rc=$?
ends dist_attend_ranks_disagree y.npy

run_mpi -np 1 "$mpibin" dist-scaling --n 64 --d 8 --heads 1 --reps 1 --out s.csv \
    --model-out m.csv : -np 1 "$mpibin" dist-scaling --n 64 --d 0 --heads 1 --reps 1 \
    --out s.csv --model-out m.csv
rc=$?
ends dist_scaling_ranks_disagree s.csv
exit $failed
