#!/bin/sh
# run.sh — the hostile-input suite of the command: every tests/hostile/*.sh but this one,
# each a group of cases against build/linattn that prints one line per case
# ("ok NAME" or "FAIL NAME: why") and exits 1 if any failed; or only the groups named
# (make test runs each group as a test of its own). Prints the totals as
# "hostile: N passed, M failed" and exits 1 if any case failed.
# Usage: tests/hostile/run.sh build/linattn [GROUP...]   (GROUP: files, signals, ...)
# (The library's hostile cases are C programs, tests/hostile/test_*.c, run by make test.)
set -u
bin=${1:?usage: tests/hostile/run.sh path/to/linattn [GROUP...]}
shift
dir=$(dirname "$0")
passed=0
failed=0
if [ $# -eq 0 ]; then
    set -- "$dir"/*.sh
else
    for group in "$@"; do
        [ -f "$dir/$group.sh" ] && [ "$group" != run ] ||
            { echo "run.sh: no hostile group '$group' in $dir" >&2; exit 2; }
        shift
        set -- "$@" "$dir/$group.sh"
    done
fi
for script in "$@"; do
    [ "$(basename "$script")" = run.sh ] && continue
    out=$(sh "$script" "$bin" 2>&1)
    printf '%s\n' "$out" | sed "s|^|$(basename "$script" .sh): |"
    passed=$((passed + $(printf '%s\n' "$out" | grep -c '^ok ')))
    failed=$((failed + $(printf '%s\n' "$out" | grep -c '^FAIL ')))
done
echo "hostile: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
