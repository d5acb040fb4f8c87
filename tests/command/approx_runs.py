#!/usr/bin/python3
"""approx_runs.py — `linattn approx` end to end, on a tiny problem: the CSV's header and
rows (softmax's error is 0 and its FLOP share 1; linear attention's error on random
inputs is about 0.8 of the output's norm, as the accuracy study finds; every variant with
a budget has one row per budget, input kind and seed, and its error does not grow as its
budget grows four-fold on average), --resume measures nothing twice, and bad input is one
line and exit 2.

Usage: /usr/bin/python3 tests/command/approx_runs.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import csv
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)


def main():
    binary = checks.binary_arg("approx_runs.py")
    check = checks.Checks("approx_runs")

    def run(args, cwd):
        return checks.run(binary, ["approx"] + args, cwd=cwd)

    def rows(path):
        with open(path) as f:
            return list(csv.DictReader(l for l in f if not l.startswith("#")))

    with tempfile.TemporaryDirectory() as tmp:
        base = ["--n", "128", "--d", "16", "--heads", "1", "--seeds", "2", "--reps", "1",
                "--min-time", "0", "--threads", "1", "--out", "a.csv"]
        proc = run(base, tmp)
        check(proc.returncode == 0, "a tiny run exits 0 (%s)" % proc.stderr.strip()[-200:])
        got = rows(os.path.join(tmp, "a.csv")) if proc.returncode == 0 else []
        check(got and list(got[0].keys())[:5] == ["variant", "budget_name", "budget", "inputs",
                                                   "seed"], "the key columns come first")
        check(all(r["status"] == "ok" for r in got), "every point ok")
        soft = [r for r in got if r["variant"] == "softmax"]
        check(len(soft) == 3 * 2 and all(float(r["rel_error"]) == 0 and
                                         float(r["flops_vs_softmax"]) == 1 for r in soft),
              "softmax: one row per input kind and seed, error 0, FLOP share 1")
        lin = [float(r["rel_error"]) for r in got
               if r["variant"] == "linear" and r["inputs"] == "random"]
        check(len(lin) == 2 and all(0.5 < e < 1.0 for e in lin),
              "linear vs softmax on random inputs: error about 0.8 (%s)" % lin)
        budgeted = sorted({r["variant"] for r in got if r["budget_name"] != "none"})
        for v in budgeted:
            mine = [r for r in got if r["variant"] == v]
            budgets = sorted({int(r["budget"]) for r in mine})
            check(len(mine) == len(budgets) * 3 * 2,
                  "%s: a row per budget (%s), input kind and seed" % (v, budgets))
            mean = {b: sum(float(r["rel_error"]) for r in mine if int(r["budget"]) == b) /
                    sum(1 for r in mine if int(r["budget"]) == b) for b in budgets}
            check(mean[budgets[-1]] <= mean[budgets[0]] * 1.05,
                  "%s: the largest budget's mean error %.3g is not above the smallest's %.3g"
                  % (v, mean[budgets[-1]], mean[budgets[0]]))
        before = len(got)
        proc = run(base + ["--resume"], tmp)
        again = rows(os.path.join(tmp, "a.csv"))
        check(proc.returncode == 0 and len(again) == before,
              "--resume keeps the %d rows and adds none" % before)

        for args, what in [(["--n", "0"], "--n 0"), (["--seeds", "0"], "--seeds 0"),
                           (["--inputs", "smooth"], "an unknown input kind"),
                           (["--variant", "linear", "--window", "8"],
                            "--window without a kernel that has a window"),
                           (["--variant", "nope"], "an unknown kernel")]:
            proc = run(args + ["--out", "bad.csv"], tmp)
            check(checks.refused(proc) and not os.path.exists(os.path.join(tmp, "bad.csv")),
                  "%s: exit 2, one line, no file (%s)" % (what, proc.stderr.strip()))

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
