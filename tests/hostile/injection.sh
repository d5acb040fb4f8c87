#!/bin/sh
# injection.sh — no value from a file, and no configuration of the folder the command
# runs in, becomes a command: `linattn plot` hands a CSV's strings to gnuplot as data
# (a ' in a kernel name is not shell code), and the `# git_commit:` line is the commit
# linattn was built from (git never runs in the user's folder, whose configuration,
# e.g. core.fsmonitor, would run a program). Usage: injection.sh build/linattn
set -u
bin=$(cd "$(dirname "${1:?usage: injection.sh path/to/linattn}")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# shellcheck source=tests/hostile/common.sh.inc
. "$(dirname "$0")/common.sh.inc" # failed=0, fail
cd "$t" || exit 1
ok() { echo "ok $1${2:+ # $2}"; }

# ---- a ' in a CSV value: series_where's value once reached sh -c inside quotes
if command -v gnuplot >/dev/null 2>&1; then
    # shellcheck disable=SC2016 # ${IFS} is for the shell the value must never reach
    sed 's|,linear$|,lin'"'"';touch${IFS}'"$t"'/PWNED;'"'"'x|' "$src/results/crossover.csv" >crossover.csv
    if ! grep -q PWNED crossover.csv; then
        fail plot_quote_in_value "could not make the hostile crossover.csv"
    else
        timeout 60 "$bin" plot --from crossover.csv --out fig --format png >out.txt 2>err.txt
        rc=$?
        if [ -e PWNED ]; then
            fail plot_quote_in_value "a CSV value ran a command (exit $rc)"
        elif [ "$rc" != 0 ] || [ ! -s fig/crossover.png ]; then
            fail plot_quote_in_value "exit $rc, figure missing: $(head -c 200 err.txt)"
        else ok plot_quote_in_value; fi
    fi
    # the same value where a single quote ends gnuplot's own string: still one string
    sed 's|^# cpu: .*|# cpu: x'"'"'; system("touch '"$t"'/PWNED2"); y = '"'"'|' "$src/results/crossover.csv" >crossover2.csv
    timeout 60 "$bin" plot --from crossover2.csv --out fig2 --format png >out.txt 2>err.txt
    rc=$?
    if [ -e PWNED2 ]; then
        fail plot_quote_in_metadata "a metadata line ran a command (exit $rc)"
    elif [ "$rc" != 0 ]; then
        fail plot_quote_in_metadata "exit $rc: $(head -c 200 err.txt)"
    else ok plot_quote_in_metadata; fi
else
    ok plot_quote_in_value "skipped: no gnuplot"
    ok plot_quote_in_metadata "skipped: no gnuplot"
fi

# ---- git in the user's folder: a repository whose configuration runs a program
if command -v git >/dev/null 2>&1; then
    mkdir repo && cd repo || exit 1
    git init -q . && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m x
    printf '#!/bin/sh\ntouch "%s/FSMONITOR_RAN"\n' "$t" >"$t/monitor" && chmod +x "$t/monitor"
    git config core.fsmonitor "$t/monitor"
    { echo tracked >f && git add f && git -c user.name=t -c user.email=t@t commit -q -m f; } 2>/dev/null
    rm -f "$t/FSMONITOR_RAN"
    echo changed >f # dirty: `git status` would consult the monitor
    theirs=$(git rev-parse --short HEAD 2>/dev/null)
    timeout 20 "$bin" params-sweep --d-model 64 --out p.csv >/dev/null 2>err.txt
    rc=$?
    line=$(grep '^# git_commit: ' p.csv 2>/dev/null)
    if [ -e "$t/FSMONITOR_RAN" ]; then
        fail git_not_run_in_cwd "the folder's core.fsmonitor ran (exit $rc)"
    elif [ "$rc" != 0 ] || [ -z "$line" ]; then
        fail git_not_run_in_cwd "exit $rc, no git_commit line: $(head -c 200 err.txt)"
    elif printf '%s\n' "$line" | grep -q "$theirs"; then
        fail git_not_run_in_cwd "git_commit names the folder's repository: $line"
    else ok git_not_run_in_cwd; fi
    cd "$t" || exit 1
else
    ok git_not_run_in_cwd "skipped: no git"
fi
exit $failed
