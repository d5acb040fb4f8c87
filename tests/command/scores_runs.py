#!/usr/bin/python3
"""scores_runs.py — `linattn scores` end to end, on a small run: the CSV's header and rows
(one per scaling, d_k and seed, all ok), the variance argument it measures (scaled logits
have standard deviation about 1 at every d_k, unscaled about √d_k; scaled weights keep
their entropy near ln N while unscaled ones lose it as d_k grows, and the median largest
softmax gradient of the unscaled rows falls below the scaled one's at large d_k), --resume
measures nothing twice, and bad input is one line and exit 2 with no file.

Usage: /usr/bin/python3 tests/command/scores_runs.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import csv
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)


def main():
    binary = checks.binary_arg("scores_runs.py")
    check = checks.Checks("scores_runs")

    def run(args, cwd):
        return checks.run(binary, ["scores"] + args, cwd=cwd)

    def rows(path):
        with open(path) as f:
            return list(csv.DictReader(l for l in f if not l.startswith("#")))

    with tempfile.TemporaryDirectory() as tmp:
        base = ["--d", "4,64,1024", "--n", "128", "--seeds", "2", "--out", "s.csv"]
        proc = run(base, tmp)
        check(proc.returncode == 0, "a small run exits 0 (%s)" % proc.stderr.strip()[-200:])
        got = rows(os.path.join(tmp, "s.csv")) if proc.returncode == 0 else []
        check(got and list(got[0].keys())[:4] == ["scaling", "d_k", "n", "seed"],
              "the key columns come first")
        check(len(got) == 3 * 2 * 2 and all(r["status"] == "ok" for r in got),
              "one ok row per scaling, d_k and seed (%d rows)" % len(got))

        def mean(scaling, dk, col):
            vals = [float(r[col]) for r in got if r["scaling"] == scaling and int(r["d_k"]) == dk]
            return sum(vals) / len(vals) if vals else math.nan

        for dk in (4, 64, 1024):
            s, u = mean("sqrt", dk, "logit_std"), mean("none", dk, "logit_std")
            check(0.85 < s < 1.15 and 0.85 < u / math.sqrt(dk) < 1.15,
                  "d_k = %d: logit std scaled %.3g (about 1), unscaled %.3g (about %.3g)"
                  % (dk, s, u, math.sqrt(dk)))
        ln_n = math.log(128)
        check(all(abs(float(r["entropy_max_nats"]) - ln_n) < 1e-12 for r in got),
              "entropy_max_nats is ln N")
        check(all(0.85 * ln_n < mean("sqrt", dk, "entropy_mean_nats") <= ln_n
                  for dk in (4, 64, 1024)), "scaled: entropy near ln N at every d_k")
        h = [mean("none", dk, "entropy_mean_nats") for dk in (4, 64, 1024)]
        check(h[0] > h[1] > h[2] and h[2] < 0.1 * ln_n,
              "unscaled: entropy falls with d_k, below a tenth of ln N at 1024 (%s)" % h)
        g_s, g_u = mean("sqrt", 1024, "grad_median"), mean("none", 1024, "grad_median")
        check(g_u < 0.2 * g_s, "d_k = 1024: unscaled median gradient %.3g below a fifth of the "
              "scaled %.3g" % (g_u, g_s))
        check(all(0 <= float(r["grad_median"]) <= float(r["grad_max"]) <= 0.25 for r in got),
              "0 <= grad_median <= grad_max <= 1/4")

        before = len(got)
        proc = run(base + ["--resume"], tmp)
        check(proc.returncode == 0 and len(rows(os.path.join(tmp, "s.csv"))) == before,
              "--resume keeps the %d rows and adds none" % before)

        for args, what in [(["--d", "0"], "--d 0"), (["--seeds", "0"], "--seeds 0"),
                           (["--n", "x"], "--n not a number"), (["--n", "5000"], "--n too big"),
                           (["--bogus"], "an unknown flag")]:
            proc = run(args + ["--out", "bad.csv"], tmp)
            check(checks.refused(proc) and not os.path.exists(os.path.join(tmp, "bad.csv")),
                  "%s: exit 2, one line, no file (%s)" % (what, proc.stderr.strip()))

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
