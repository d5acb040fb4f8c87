#!/bin/sh
# check_command.sh — how the `linattn` command is put together:
#   1. experiments/ takes from the library only lib/linattn.h (and lib/linattn_mpi.h, the
#      MPI build's) and the internal headers the library keeps for its command alone
#      (io/outfile.h, cpu/machine.h, attention/series.h, core/blocks.h, core/sanitizer.h (its
#      macros, for the calibration kernel), and train/'s train.h, optim.h,
#      tasks.h, checkpoint.h for `linattn train`, train_layers.h for train-speed's layer
#      timings: not exported): every #include "X"
#      in experiments/ names one of them or a file inside experiments/ (no core/internal.h,
#      no kernel's own entry points);
#   2. no dead helpers: every function build/libcommand.a exports is called by a command
#      object or by another helper (a function used only in its own file is static, one
#      used only by tests is dead code).
# Usage: tests/command/check_command.sh BUILD/libcommand.a COMMAND_OBJECTS...
# Prints each violation; exit 1 if any.
set -u
archive=${1:?usage: check_command.sh LIBCOMMAND.a OBJECTS...}
shift
dir=$(dirname "$0")/../..
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
bad=0

# 1. includes
for f in "$dir"/experiments/*.[ch] "$dir"/experiments/*/*.[ch]; do
    [ -e "$f" ] || continue
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while read -r inc; do
        case "$inc" in linattn.h | linattn_mpi.h) continue ;; esac # the public headers
        case "$inc" in io/outfile.h | cpu/machine.h | attention/series.h | core/blocks.h) continue ;; esac
        case "$inc" in core/sanitizer.h) continue ;; esac
        case "$inc" in train/train.h | train/optim.h | train/tasks.h | train/checkpoint.h) continue ;; esac
        case "$inc" in train/train_layers.h) continue ;; esac
        [ -e "$(dirname "$f")/$inc" ] && continue
        echo "check_command: ${f#$dir/} includes \"$inc\": only linattn.h and the command's" \
             "headers (io/outfile.h, cpu/machine.h, attention/series.h) may come from lib/"
        echo x >> "$tmp/bad"
    done
done
[ -s "$tmp/bad" ] && bad=1

# 2. helpers with no caller in the command (AddressSanitizer's __odr_asan.* indicators of
#    global variables are not helpers)
nm -g --defined-only "$archive" | awk 'NF == 3 && $2 ~ /[TDRBC]/ && $3 !~ /^__odr_asan/ {print $3}' | sort -u \
    > "$tmp/defined"
nm -u "$@" "$archive" | awk 'NF >= 2 {print $NF}' | sort -u > "$tmp/used"
dead=$(comm -23 "$tmp/defined" "$tmp/used")
if [ -n "$dead" ]; then
    echo "check_command: exported by $(basename "$archive") but called by no command or other" \
         "helper (remove it, or make it static):" $dead
    bad=1
fi
[ $bad -eq 0 ] || exit 1
echo "check_command: experiments/ includes only linattn.h (linattn_mpi.h) and the command's" \
     "headers from lib/;" \
     "$(wc -l < "$tmp/defined") helper functions, each with a caller"
