#!/usr/bin/python3
"""approx_runs.py — `linattn approx` end to end, on tiny problems:
  1. random inputs: the CSV's header and rows (the # error line names the scale, RMS(y −
     y_softmax) / RMS(v); softmax's error is 0 and its FLOP share 1; linear attention's
     error on random inputs is far below 1 on that scale; every variant with a budget has
     one row per budget, input kind and seed, and its error does not grow as its budget
     grows four-fold on average), --resume measures nothing twice;
  2. the user's arrays (--q/--k/--v, --layout bnhd, d_k != d_v, more queries than keys):
     every approximating variant's error equals RMS(y − y_softmax) / RMS(v) computed here
     in NumPy from the same arrays with the references of attend_numpy.py (the first
     min(N, M) queries and keys), each row carries its budget, the # inputs line names the
     files and one stderr line says how they were read;
  3. the figure (linattn plot): its axis names the scale, each point of a variant with a
     budget is labelled with it (r=, k=, m=), and a CSV whose variant names hold gnuplot
     code draws them as text: the code never runs;
  4. bad input is one line and exit 2.

Usage: /usr/bin/python3 tests/command/approx_runs.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import csv
import os
import html
import re
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)
from attend_numpy import (favor_features, linformer_projections, ref_favor, ref_hard,  # noqa: E402
                          ref_linear, ref_linformer, ref_local, ref_softmax, ref_taylor)

# the kernels the registry marks as approximating softmax attention that run without a
# causal mask: approx's default list
APPROXIMATING = {"hard", "linear", "linformer", "local", "favor", "taylor"}


def header_lines(path):
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.startswith("#")]


def user_arrays(run, check, tmp):
    """Part 2: the user's arrays, (B, N, H, d) as FlashAttention holds them."""
    rng = np.random.default_rng(checks.seed("approx_runs"))
    b, h, n, m, dk, dv = 1, 2, 24, 20, 8, 6
    q = rng.standard_normal((b, n, h, dk)).astype(np.float32)
    k = rng.standard_normal((b, m, h, dk)).astype(np.float32)
    v = (rng.standard_normal((b, m, h, dv)) + 0.5).astype(np.float32)  # a mean: RMS, not sd
    for name, x in (("q", q), ("k", k), ("v", v)):
        np.save(os.path.join(tmp, name + ".npy"), x)
    args = ["--q", "q.npy", "--k", "k.npy", "--v", "v.npy", "--layout", "bnhd", "--window", "3",
            "--features", "16", "--proj-rank", "8", "--reps", "1", "--min-time", "0",
            "--threads", "1", "--out", "u.csv"]
    proc = run(args, tmp)
    check(proc.returncode == 0, "user arrays: exit 0 (%s)" % proc.stderr.strip()[-300:])
    if proc.returncode != 0:
        return
    lines = [l for l in proc.stderr.splitlines() if l.startswith("approx: input ")]
    check(lines == ["approx: input B=1 H=2 N=24 M=20 d_k=8 d_v=6, float32, layout bnhd (B, N, H, d)"],
          "user arrays: one stderr line says how they were read (%s)" % lines)
    head = header_lines(os.path.join(tmp, "u.csv"))
    check(any(l.startswith("# inputs: q.npy k.npy v.npy") for l in head),
          "user arrays: the # inputs line names the files")
    check(any(l.startswith("# error: RMS(y - y_softmax) / RMS(v)") for l in head),
          "user arrays: the # error line names the scale")
    with open(os.path.join(tmp, "u.csv")) as f:
        got = list(csv.DictReader(l for l in f if not l.startswith("#")))
    check({r["inputs"] for r in got} == {"user"} and {r["seed"] for r in got} == {"1"},
          "user arrays: inputs column user, one seed")
    check({r["variant"] for r in got} == APPROXIMATING | {"softmax"},
          "user arrays: every approximating variant and the reference (%s)"
          % sorted({r["variant"] for r in got}))
    # the references on the first min(N, M) = 20 queries, float64 from the float32 values
    t = lambda x: np.transpose(x.astype(np.float64), (0, 2, 1, 3))  # noqa: E731
    qh, kh, vh = t(q)[:, :, :m], t(k), t(v)
    scale = 1 / np.sqrt(dk)
    exact = ref_softmax(qh, kh, vh, scale, False, None)
    e, f = linformer_projections(8, m, 1)
    want = {
        ("hard", "none", 0): ref_hard(qh, kh, vh, scale, False, None),
        ("linear", "none", 0): ref_linear(qh, kh, vh, "elu", 1e-6, False, None),
        ("taylor", "none", 0): ref_taylor(qh, kh, vh, scale, 1e-6, False, None),
        ("local", "window", 3): ref_local(qh, kh, vh, scale, False, None, 3),
        ("linformer", "proj_rank", 8): ref_linformer(qh, kh, vh, e, f, scale, None),
        ("favor", "features", 16): ref_favor(qh, kh, vh, favor_features(16, dk, 1), 1e-6,
                                             False, None),
    }
    rms_v = np.sqrt(np.mean(vh ** 2))
    for (variant, budget_name, budget), y in want.items():
        rows = [r for r in got if r["variant"] == variant]
        expect = np.sqrt(np.mean((y - exact) ** 2)) / rms_v
        ok = (len(rows) == 1 and rows[0]["status"] == "ok" and
              (rows[0]["budget_name"], int(rows[0]["budget"])) == (budget_name, budget) and
              abs(float(rows[0]["error"]) - expect) <= 1e-5 * expect)
        check(ok, "user arrays: %s (%s %d): error %s, RMS(y - y_softmax) / RMS(v) = %.6g"
              % (variant, budget_name, budget, rows[0]["error"] if rows else "missing", expect))


def figure(binary, check, tmp):
    """Part 3: the figure of part 1's a.csv, and of a copy whose names are gnuplot code."""
    if not shutil.which("gnuplot"):
        check(False, "gnuplot is missing (make deps, or apt-get install gnuplot-nox)")
        return
    proc = checks.run(binary, ["plot", "--from", "a.csv", "--out", "fig", "--format", "svg"],
                      cwd=tmp)
    path = os.path.join(tmp, "fig", "approx.svg")
    check(proc.returncode == 0 and os.path.exists(path),
          "plot: approx.svg drawn (%s)" % proc.stderr.strip()[-200:])
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        text = html.unescape(f.read())
    text = re.sub(r"<[^>]*>", "", text)  # the labels' text, tags (enhanced text's pieces) gone
    check("RMS(y − y" in text and "RMS(v)" in text, "plot: the axis names the error's scale")
    with open(os.path.join(tmp, "a.csv")) as f:
        rows = list(csv.DictReader(l for l in f if not l.startswith("#")))
    letters = {"window": "r", "proj_rank": "k", "features": "m"}
    want = {"%s=%s" % (letters[r["budget_name"]], r["budget"]) for r in rows
            if r["budget_name"] in letters}
    missing = sorted(w for w in want if w not in text)
    check(want and not missing, "plot: every budget labelled (missing %s)" % missing)
    # a variant named with gnuplot code: drawn as text, never run
    hostile = 'x";system("touch${IFS}PWNED");y="'
    with open(os.path.join(tmp, "a.csv")) as f:
        body = f.read().replace("\nlocal,", "\n" + hostile + ",")
    with open(os.path.join(tmp, "h.csv"), "w") as f:
        f.write(body)
    proc = checks.run(binary, ["plot", "--from", "h.csv", "--out", "hfig", "--format", "svg"],
                      cwd=tmp)
    check(not os.path.exists(os.path.join(tmp, "PWNED")) and
          not os.path.exists(os.path.join(tmp, "hfig", "PWNED")) and
          not os.path.exists(os.path.join(os.path.dirname(checks.__file__), "..", "..", "plots",
                                          "PWNED")),
          "plot: a variant name holding gnuplot code is not run (exit %d)" % proc.returncode)


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
        check(any(re.match(r"# error: RMS\(y - y_softmax\) / RMS\(v\)", l)
                  for l in header_lines(os.path.join(tmp, "a.csv"))),
              "the # error line names the scale")
        check(all(r["status"] == "ok" for r in got), "every point ok")
        soft = [r for r in got if r["variant"] == "softmax"]
        check(len(soft) == 3 * 2 and all(float(r["error"]) == 0 and
                                         float(r["flops_vs_softmax"]) == 1 for r in soft),
              "softmax: one row per input kind and seed, error 0, FLOP share 1")
        lin = [float(r["error"]) for r in got
               if r["variant"] == "linear" and r["inputs"] == "random"]
        hard = [float(r["error"]) for r in got
                if r["variant"] == "hard" and r["inputs"] == "random"]
        # on random inputs softmax spreads its weight: its output is small, linear
        # attention's error too (far below 1 of RMS(v)), while hard attention picks one
        # row of v: an error about as large as v itself
        check(len(lin) == 2 and all(0 < e < 0.3 for e in lin),
              "linear vs softmax on random inputs: error far below RMS(v) (%s)" % lin)
        check(len(hard) == 2 and all(0.7 < e < 1.3 for e in hard),
              "hard vs softmax on random inputs: error about RMS(v) (%s)" % hard)
        budgeted = sorted({r["variant"] for r in got if r["budget_name"] != "none"})
        for v in budgeted:
            mine = [r for r in got if r["variant"] == v]
            budgets = sorted({int(r["budget"]) for r in mine})
            check(len(mine) == len(budgets) * 3 * 2,
                  "%s: a row per budget (%s), input kind and seed" % (v, budgets))
            mean = {b: sum(float(r["error"]) for r in mine if int(r["budget"]) == b) /
                    sum(1 for r in mine if int(r["budget"]) == b) for b in budgets}
            check(mean[budgets[-1]] <= mean[budgets[0]] * 1.05,
                  "%s: the largest budget's mean error %.3g is not above the smallest's %.3g"
                  % (v, mean[budgets[-1]], mean[budgets[0]]))
        before = len(got)
        proc = run(base + ["--resume"], tmp)
        again = rows(os.path.join(tmp, "a.csv"))
        check(proc.returncode == 0 and len(again) == before,
              "--resume keeps the %d rows and adds none" % before)

        user_arrays(run, check, tmp)
        figure(binary, check, tmp)

        user = ["--q", "q.npy", "--k", "k.npy", "--v", "v.npy"]
        for args, what in [(["--n", "0"], "--n 0"), (["--seeds", "0"], "--seeds 0"),
                           (user + ["--d", "8"], "--d with --q/--k/--v"),
                           (user + ["--inputs", "random"], "--inputs with --q/--k/--v"),
                           (user + ["--n", "21"], "--n above the arrays' min(N, M)"),
                           (["--layout", "bnhd"], "--layout without --q"),
                           (["--q", "q.npy"], "--q without --k and --v"),
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
