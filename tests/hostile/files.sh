#!/bin/sh
# files.sh — hostile files around the command (issue #10 classes 4, 5, 6, 9): what it
# writes over (symlinks, devices, FIFOs, directories, its own inputs), results kept
# through killed, failed and concurrent runs, rows whole after a full disk, and inputs
# that never end or never come. Devices are made with mknod in a temporary folder (never
# the system's /dev); without root those cases say "skipped". Usage: files.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: files.sh path/to/linattn}")" && pwd)/$(basename "$1")
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail (before the cd: $0 may be relative)
cd "$t" || exit 1
ok() { echo "ok $1${2:+ # $2}"; }
is_root=$([ "$(id -u)" = 0 ] && echo 1 || echo 0)

# inputs: float32 (8, 4) arrays
small_qkv
attend_q() { timeout 10 "$bin" attend --variant softmax --k k.npy --v v.npy "$@"; }
attend() { attend_q --q q.npy "$@"; }
is_npy() { [ -f "$1" ] && [ "$(head -c 6 "$1" | tail -c 5)" = NUMPY ]; }
# is_refused NAME CMD...: CMD exits 2 and exactly one line "linattn: ..." (true), else
# prints the FAIL line (false); says nothing on success: the caller checks more, then ok
is_refused() {
    name=$1
    shift
    "$@" >out.txt 2>err.txt
    rc=$?
    if [ "$rc" != 2 ]; then
        fail "$name" "exit $rc, want 2 ($(head -c 200 err.txt))"
        return 1
    fi
    if [ "$(wc -l <err.txt)" != 1 ] || ! grep -q '^linattn: ' err.txt; then
        fail "$name" "stderr is not one 'linattn:' line: $(head -c 200 err.txt)"
        return 1
    fi
    return 0
}

# ---- class 4: what --out may replace
echo old >target.npy
ln -s target.npy link.npy
if attend --out link.npy 2>err.txt && [ -L link.npy ] && is_npy target.npy; then
    ok out_symlink_written_through
else fail out_symlink_written_through "link replaced or target not written ($(cat err.txt))"; fi

ln -s sub/new.npy link_to_new.npy # a link to a file still to be written
mkdir -p sub
if attend --out link_to_new.npy 2>err.txt && [ -L link_to_new.npy ] && is_npy sub/new.npy; then
    ok out_symlink_to_new_file
else fail out_symlink_to_new_file "$(cat err.txt)"; fi
ln -s ../missing/x.npy dangling.npy # its folder does not exist
is_refused out_dangling_symlink attend --out dangling.npy && [ -L dangling.npy ] &&
    ok out_dangling_symlink

if [ "$is_root" = 1 ]; then
    mknod null c 1 3
    is_refused out_char_device attend --out null && [ -c null ] && ok out_char_device
    ln -s null link_to_null
    is_refused out_symlink_to_device attend --out link_to_null && [ -c null ] &&
        [ -L link_to_null ] && ok out_symlink_to_device
else
    ok out_char_device "skipped: mknod needs root"
    ok out_symlink_to_device "skipped: mknod needs root"
fi
mkfifo fifo
is_refused out_fifo attend --out fifo && [ -p fifo ] && ok out_fifo
mkdir outdir
is_refused out_directory attend --out outdir && [ -d outdir ] && ok out_directory

# an output that is one of its inputs: safe (read first, replaced whole), so allowed
cp q.npy q2.npy
if timeout 10 "$bin" attend --variant softmax --q q2.npy --k k.npy --v v.npy --out q2.npy \
    2>err.txt && is_npy q2.npy && attend --out y.npy && cmp -s y.npy q2.npy; then
    ok out_is_an_input
else fail out_is_an_input "$(cat err.txt)"; fi

if ls | grep -q '\.tmp\.'; then fail out_no_leftovers "$(ls | grep '\.tmp\.')"; else
    ok out_no_leftovers; fi

# ---- class 5: results survive runs that fail, are killed, or race
scaling() { "$bin" scaling --d 8 --heads 1 --reps 1 --min-time 0 "$@"; }
# a first point that takes seconds
long_run() { exec "$bin" scaling --n 16384 --d 64 --heads 8 --variant softmax \
    --max-seconds 1000 --reps 1 --min-time 0 --out "$1" >/dev/null 2>&1; }
# until_locked DIR PID: wait (up to 20 s) until the run PID holds DIR's folder lock (an
# flock on the folder), so the case tests a run under way whatever the machine's load.
# It reads /proc/locks rather than trying the lock itself: a probe that took the lock
# for an instant could make the run it waits for find the folder locked and give up.
until_locked() {
    inode=$(stat -c %i "$1")
    i=0
    while ! grep -q "FLOCK .* $2 [0-9a-f]*:[0-9a-f]*:$inode " /proc/locks 2>/dev/null &&
        kill -0 "$2" 2>/dev/null && [ $i -lt 400 ]; do
        sleep 0.05
        i=$((i + 1))
    done
}
mkdir runs
scaling --n 16:32 --variant linear --out runs/s.csv >/dev/null 2>&1
cp runs/s.csv before.csv
# a long first point, killed before it has a row
for sig in INT TERM KILL; do
    long_run runs/s.csv &
    pid=$!
    until_locked runs $pid
    kill -$sig $pid
    wait $pid 2>/dev/null
    if cmp -s before.csv runs/s.csv && ! ls runs | grep -q '\.tmp\.'; then
        ok "killed_run_keeps_previous_$sig"
    else fail "killed_run_keeps_previous_$sig" "runs/ now: $(ls runs)"; fi
done

# two runs into one folder: the second is refused, the first unharmed
long_run runs/s.csv &
pid=$!
until_locked runs $pid
is_refused concurrent_run_refused scaling --n 16 --variant linear --out runs/s.csv &&
    grep -q 'another linattn run' err.txt && ok concurrent_run_refused
is_refused concurrent_resume_refused scaling --n 16 --variant linear --out runs/s.csv --resume &&
    ok concurrent_resume_refused
kill -TERM $pid
wait $pid 2>/dev/null
cmp -s before.csv runs/s.csv && ok concurrent_previous_intact ||
    fail concurrent_previous_intact "runs/s.csv changed"

# results into a FIFO or a directory: refused at once, with or without --resume
is_refused results_into_fifo timeout 10 "$bin" scaling --n 16 --variant linear --out fifo &&
    is_refused results_resume_from_fifo timeout 10 "$bin" scaling --n 16 --variant linear \
        --out fifo --resume && [ -p fifo ] && ok results_into_fifo
is_refused results_into_directory "$bin" scaling --n 16 --variant linear --out outdir &&
    [ -d outdir ] && ok results_into_directory

# ---- class 6: whole rows
# every non-comment line after the header has as many fields as the header, and the
# file ends with a newline
rows_whole() {
    [ -s "$1" ] && [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] &&
        grep -v '^#' "$1" | awk -F, 'NR == 1 { n = NF } NF != n { bad = 1 } END { exit bad }'
}
count_key() { grep -c "^$1," "$2"; }
scaling --n 16:64 --variant linear --out cut.csv >/dev/null 2>&1
size=$(wc -c <cut.csv)
head -c $((size - 20)) cut.csv >cut2.csv && mv cut2.csv cut.csv # the last row cut short
if scaling --n 16:64 --variant linear --out cut.csv --resume >/dev/null 2>err.txt &&
    rows_whole cut.csv && [ "$(count_key linear,64 cut.csv)" = 1 ]; then
    ok resume_remeasures_cut_row
else fail resume_remeasures_cut_row "$(cat err.txt; grep -v '^#' cut.csv)"; fi

# a row with too few fields in the middle: dropped and measured again
scaling --n 16:64 --variant linear --out mid.csv >/dev/null 2>&1
sed -i 's/^\(linear,32,[^,]*,[^,]*\),.*/\1/' mid.csv
if scaling --n 16:64 --variant linear --out mid.csv --resume >/dev/null 2>err.txt &&
    grep -v '^#' mid.csv | grep '^linear,32,' | awk -F, 'NF > 10 { found = 1 } END { exit !found }'; then
    ok resume_remeasures_short_row
else fail resume_remeasures_short_row "$(cat err.txt; grep -v '^#' mid.csv)"; fi

# a full disk mid-run (file-size limit, SIGXFSZ ignored: write fails with EFBIG)
scaling --n 16 --variant linear --out full.csv >/dev/null 2>&1
limit=$(($(wc -c <full.csv) + 300))
rm full.csv
python3 -c '
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2)
os.execv(sys.argv[2], sys.argv[2:])' "$limit" "$bin" scaling --d 8 --heads 1 --reps 1 \
    --min-time 0 --n 16:4096 --variant linear,softmax --out full.csv >/dev/null 2>err.txt
rc=$?
if [ "$rc" != 0 ] && rows_whole full.csv; then ok full_disk_rows_whole; else
    fail full_disk_rows_whole "exit $rc, $(tail -c 300 full.csv)"; fi
if scaling --n 16:4096 --variant linear,softmax --out full.csv --resume >/dev/null 2>&1 &&
    rows_whole full.csv && [ "$(grep -v '^#' full.csv | wc -l)" = 19 ]; then
    ok full_disk_then_resume
else fail full_disk_then_resume "$(grep -v '^#' full.csv | wc -l) lines"; fi

# ---- class 9: inputs that never end or never come, refused promptly
is_refused q_dev_zero attend_q --q /dev/zero --out y9.npy && grep -q 'not a .npy file' err.txt &&
    ok q_dev_zero
is_refused q_fifo_without_writer attend_q --q fifo --out y9.npy && ok q_fifo_without_writer
if [ "$is_root" = 1 ]; then
    mknod zero c 1 5
    is_refused q_char_device_zero attend_q --q zero --out y9.npy && ok q_char_device_zero
else ok q_char_device_zero "skipped: mknod needs root"; fi
# a valid header, then data that never ends: stops after the bytes the shape needs
head -c 128 q.npy >head.npy
is_refused q_endless_data sh -c "cat head.npy /dev/zero | timeout 10 '$bin' attend --variant softmax \
    --q /dev/stdin --k k.npy --v v.npy --out y9.npy" && grep -q 'more than 128' err.txt &&
    ok q_endless_data
# a 2.0 header announcing 4 GiB of header text
printf '\223NUMPY\002\000\377\377\377\377' >huge.npy
is_refused q_huge_header attend_q --q huge.npy --out y9.npy && ok q_huge_header
[ -e y9.npy ] && fail q_no_output "y9.npy written"

exit $failed
