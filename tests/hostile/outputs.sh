#!/bin/sh
# outputs.sh — what the command publishes is whole, measured and where it was asked:
# on a full disk no results file or figure is replaced by a 0-byte or cut one (a small
# tmpfs, as root; one line "skipped" otherwise), a run that measures nothing keeps the
# measurements already there, two outputs that are one file through a symbolic link are
# refused, and a file replaced keeps its permissions. Usage: outputs.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: outputs.sh path/to/linattn}")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
fs=$t/fs
cleanup() {
    mountpoint -q "$fs" 2>/dev/null && umount "$fs"
    rm -rf "$t"
}
trap cleanup EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail
cd "$t" || exit 1
ok() { echo "ok $1${2:+ # $2}"; }
mode_of() { stat -c %a "$1"; }

# inputs: float32 (8, 4) arrays
small_qkv

# kept NAME OLD FILE CMD...: CMD exits 2 with one `linattn:` line and FILE is OLD again
kept() {
    name=$1 old=$2 file=$3
    shift 3
    timeout 30 "$@" >"$t/out.txt" 2>"$t/err.txt"
    rc=$?
    if [ "$rc" != 2 ]; then
        fail "$name" "exit $rc, want 2 ($(head -c 160 "$t/err.txt" | tr '\n' ' '))"
    elif [ "$(grep -c '^linattn: ' "$t/err.txt")" -lt 1 ]; then
        fail "$name" "no 'linattn:' line: $(head -c 160 "$t/err.txt" | tr '\n' ' ')"
    elif ! cmp -s "$old" "$file"; then
        fail "$name" "$file is not the old file any more ($(wc -c <"$file" 2>&1) bytes)"
    else ok "$name"; fi
}

# ---- a full disk: the old file stays, no 0-byte file appears
if [ "$(id -u)" = 0 ] && mkdir "$fs" && mount -t tmpfs -o size=256k tmpfs "$fs" 2>/dev/null; then
    "$bin" params-sweep --d-model 64 --out p.csv >/dev/null 2>&1
    "$bin" decode --tokens 8 --d 8 --heads 1 --out d.csv >/dev/null 2>&1
    "$bin" scaling --n 16 --d 8 --heads 1 --variant linear --out s.csv >/dev/null 2>&1
    cp p.csv d.csv s.csv "$fs/"
    cp "$src/plots/decode.png" "$fs/decode.png"
    dd if=/dev/zero of="$fs/fill" bs=1k 2>/dev/null # full
    kept full_disk_params_sweep p.csv "$fs/p.csv" "$bin" params-sweep --d-model 64 --out "$fs/p.csv"
    kept full_disk_decode d.csv "$fs/d.csv" "$bin" decode --tokens 8 --d 8 --heads 1 --out "$fs/d.csv"
    kept full_disk_scaling s.csv "$fs/s.csv" "$bin" scaling --n 16 --d 8 --heads 1 --variant linear \
        --out "$fs/s.csv"
    kept full_disk_resume p.csv "$fs/p.csv" "$bin" params-sweep --d-model 64,128 --resume --out "$fs/p.csv"
    timeout 30 "$bin" params-sweep --d-model 64 --out "$fs/new.csv" >/dev/null 2>&1
    if [ -e "$fs/new.csv" ]; then
        fail full_disk_no_empty_file "a $(wc -c <"$fs/new.csv")-byte new.csv appeared"
    else ok full_disk_no_empty_file; fi
    # nearly full: room for part of a figure, not all of it
    rm -f "$fs/fill"
    avail=$(df -k --output=avail "$fs" | tail -n 1)
    dd if=/dev/zero of="$fs/fill" bs=1k count=$((avail - 24)) 2>/dev/null
    if command -v gnuplot >/dev/null 2>&1; then
        kept full_disk_figure "$src/plots/decode.png" "$fs/decode.png" \
            "$bin" plot --from "$src/results/decode.csv" --out "$fs" --format png
    else ok full_disk_figure "skipped: no gnuplot"; fi
    umount "$fs"
else
    ok full_disk "skipped: a tmpfs needs root"
fi

# ---- a run that measures nothing (every point skipped) keeps the measurements there
"$bin" scaling --n 16 --d 8 --heads 1 --variant linear --out k.csv >/dev/null 2>&1
cp k.csv k.old
timeout 30 "$bin" scaling --n 16 --d 8 --heads 1 --variant linear --max-mem 1 --out k.csv \
    >out.txt 2>err.txt
rc=$?
if ! grep -q ',ok,' k.old; then
    fail skipped_run_keeps_file "the first run measured nothing: $(head -c 160 err.txt)"
elif ! cmp -s k.old k.csv; then
    fail skipped_run_keeps_file "exit $rc; the measured file was replaced by: $(grep -v '^#' k.csv | tail -n 1)"
else ok skipped_run_keeps_file; fi

# ---- two outputs that are one file through a symbolic link
ln -s same.npy alias.npy
timeout 10 "$bin" attend --variant softmax --q q.npy --k k.npy --v v.npy --out same.npy \
    --save-weights alias.npy >out.txt 2>err.txt
rc=$?
if [ "$rc" != 2 ] || [ "$(wc -l <err.txt)" != 1 ] || ! grep -q '^linattn: ' err.txt; then
    fail out_alias_symlink "exit $rc, want 2 and one line: $(head -c 160 err.txt | tr '\n' ' ')"
else ok out_alias_symlink; fi
timeout 10 "$bin" attend --variant softmax --q q.npy --k k.npy --v v.npy --out same.npy \
    --save-weights ./same.npy >out.txt 2>err.txt
rc=$?
if [ "$rc" != 2 ]; then
    fail out_alias_spelling "exit $rc, want 2: $(head -c 160 err.txt | tr '\n' ' ')"
else ok out_alias_spelling; fi

# ---- a file replaced keeps its mode (a private file stays private)
"$bin" params-sweep --d-model 64 --out m.csv >/dev/null 2>&1
chmod 600 m.csv
"$bin" params-sweep --d-model 64 --out m.csv >/dev/null 2>err.txt
if [ "$(mode_of m.csv)" != 600 ]; then
    fail mode_kept_csv "0600 became 0$(mode_of m.csv)"
else ok mode_kept_csv; fi
"$bin" attend --variant softmax --q q.npy --k k.npy --v v.npy --out y.npy >/dev/null 2>&1
chmod 640 y.npy
"$bin" attend --variant softmax --q q.npy --k k.npy --v v.npy --out y.npy >/dev/null 2>err.txt
if [ "$(mode_of y.npy)" != 640 ]; then
    fail mode_kept_npy "0640 became 0$(mode_of y.npy)"
else ok mode_kept_npy; fi
exit $failed
