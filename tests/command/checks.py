"""checks.py — what the Python checks of `linattn` in tests/command share; imported by them
(sys.path.insert(0, os.path.dirname(__file__)); import checks), never run alone:

  binary = checks.binary_arg("x.py")   the BUILD/linattn argument, or usage and exit 2
  proc = checks.run(binary, args)      run the command: a CompletedProcess (text)
  checks.refused(proc)                 exit 2 and one stderr line `linattn: ...`
  meta, header, rows = checks.parse_results(text)    a results file's parts
  seed = checks.seed("x")              LA_TEST_SEED or a fresh one, printed for replay
  check = checks.Checks("x")           check(ok, what) prints `ok: what` or `FAILED: what`;
  return check.report()                the last line, and the exit status (1 on a failure)
  run = checks.Cases(binary, dir, rng) the NumPy checks' counted cases (see Cases)
  checks.quick()                       True under LA_TEST_PROFILE=quick
  for a, b, c in checks.grid(A, B, C)  every combination (full profile), or a set in which
                                       every pair of values of any two factors appears
                                       (quick profile; strength=1: every value)
"""
import itertools
import os
import subprocess
import sys


def quick():
    """True when LA_TEST_PROFILE is quick (the sanitizer and emulated runs), False when it
    is full or unset; any other value exits 2, as the C tests do."""
    profile = os.environ.get("LA_TEST_PROFILE", "") or "full"
    if profile not in ("quick", "full"):
        print("LA_TEST_PROFILE is '%s': it must be quick or full" % profile, file=sys.stderr)
        sys.exit(2)
    return profile == "quick"


def grid(*factors, strength=2):
    """The combinations of the factors' values to test: all of them (itertools.product) in
    the full profile; in the quick one, a covering set chosen greedily (in product order,
    each next combination the one that covers the most value tuples not yet covered) in
    which every value of every factor (strength 1) or every pair of values of any two
    factors (strength 2) still appears: 3 shapes x causal x lengths x precision is 6
    combinations of 24."""
    if not quick():
        return list(itertools.product(*factors))
    # on the values' positions, so that values need not be hashable
    everything = list(itertools.product(*(range(len(f)) for f in factors)))

    def tuples(combo):
        return {tuple((i, combo[i]) for i in idx)
                for idx in itertools.combinations(range(len(combo)), strength)}

    uncovered = set().union(*(tuples(c) for c in everything))
    chosen = []
    while uncovered:
        best = max(everything, key=lambda c: len(tuples(c) & uncovered))
        chosen.append(best)
        uncovered -= tuples(best)
    return [tuple(f[i] for f, i in zip(factors, c)) for c in sorted(chosen)]


def binary_arg(script):
    """sys.argv[1] as an absolute path; without exactly one argument, the usage line on
    stderr and exit 2."""
    if len(sys.argv) != 2:
        print("usage: %s BUILD/linattn" % script, file=sys.stderr)
        sys.exit(2)
    return os.path.abspath(sys.argv[1])


def run(binary, args, timeout=300, **kwargs):
    """binary ARGS..., its output captured as text; kwargs go to subprocess.run (cwd=...)."""
    return subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout,
                          **kwargs)


def refused(proc, start="linattn: "):
    """True when proc was refused as the command refuses: exit 2 and exactly one line on
    stderr, beginning with start."""
    return (proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
            and proc.stderr.startswith(start))


def parse_results(text):
    """A results file's text as (its `#` lines in order, the header row as a list, the rows
    as dicts by column name); empty lines are skipped."""
    meta, header, rows = [], None, []
    for line in text.splitlines():
        if line.startswith("#"):
            meta.append(line)
        elif line and header is None:
            header = line.split(",")
        elif line:
            rows.append(dict(zip(header, line.split(","))))
    return meta, header, rows


def seed(name):
    """The seed of a run's random inputs: LA_TEST_SEED when set, else a fresh one; printed
    (flushed) as `NAME: seed N (replay with LA_TEST_SEED=N)`."""
    env_seed = os.environ.get("LA_TEST_SEED")
    value = int(env_seed) if env_seed else int.from_bytes(os.urandom(4), "little")
    print("%s: seed %d (replay with LA_TEST_SEED=%d)" % (name, value, value), flush=True)
    return value


class Checks:
    """check(ok, what): one line per check, `ok: what` or `FAILED: what`, the failures kept;
    report(): `NAME: all checks passed` or `NAME: N checks failed`, and the exit status."""

    def __init__(self, name):
        self.name = name
        self.failures = []

    def __call__(self, ok, what):
        print("%s: %s" % ("ok" if ok else "FAILED", what))
        if not ok:
            self.failures.append(what)
        return ok

    def refused(self, proc, what):
        """The check that proc was refused (see refused()), its stderr in the line."""
        return self(refused(proc), "%s: exit 2 and one line (%s)" % (what, proc.stderr.strip()))

    def report(self):
        print("%s: %d checks failed" % (self.name, len(self.failures)) if self.failures
              else "%s: all checks passed" % self.name)
        return 1 if self.failures else 0


class Cases:
    """The harness of the checks that count cases (the NumPy ones): ok(label) counts a pass
    silently, fail(label, why) prints `FAIL label: why`, check(cond, label, why) does one or
    the other; path(name) is a file in workdir; rng draws the inputs; report(name) prints
    `NAME: P passed, F failed` and returns the exit status (1 on a failure)."""

    def __init__(self, binary, workdir, rng):
        self.binary, self.dir, self.rng = binary, workdir, rng
        self.passed = self.failed = 0

    def path(self, name):
        return os.path.join(self.dir, name)

    def ok(self, label):
        self.passed += 1

    def fail(self, label, why):
        self.failed += 1
        print("FAIL %s: %s" % (label, why), flush=True)

    def check(self, cond, label, why):
        if cond:
            self.ok(label)
        else:
            self.fail(label, why)

    def report(self, name):
        print("%s: %d passed, %d failed" % (name, self.passed, self.failed))
        return 1 if self.failed else 0
