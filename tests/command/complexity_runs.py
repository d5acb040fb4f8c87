#!/usr/bin/python3
"""complexity_runs.py — `linattn complexity` end to end at tiny sizes: the CSV's header
row and its rows (every layer type of the library present at every N, statuses ok,
times finite and positive, FLOPs from the models, Table 1's columns), the fit file, the
table on stdout, --resume keeping the rows already measured, and bad flags (--d 0, an
even --kernel-width, --n 0) refused with exit 2 and one line.

Usage: /usr/bin/python3 tests/command/complexity_runs.py BUILD/linattn   (run by `make test`)

Tiny sizes, one repetition: a few seconds. Exit status 1 when a check fails.
"""
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)

FAST = ["--reps", "1", "--min-time", "0", "--max-seconds", "5", "--d", "8"]
NS = [16, 32, 64, 128, 256, 512, 1024]  # 7 lengths: a fit over the upper 4
LAYERS = ["self_attention", "recurrent", "convolutional", "linear_attention",
          "linear_attention_recurrent"]  # restricted_attention: only with a "local" kernel
COLUMNS = ["layer", "n", "d", "kernel_width", "window", "threads", "status", "reps",
           "median_s", "min_s", "max_s", "q1_s", "q3_s", "flops", "complexity",
           "sequential_ops", "path_length", "predicted_s"]


def parse(path):
    """(metadata lines, header as a list, rows as dicts)"""
    with open(path) as f:
        return checks.parse_results(f.read())


def main():
    binary = checks.binary_arg("complexity_runs.py")
    check = checks.Checks("complexity_runs")
    run = checks.run

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "complexity.csv")
        fit = os.path.join(tmp, "complexity_fit.csv")
        n_arg = ",".join(str(n) for n in NS)

        # 1. a run: header, rows, the fit file, the table
        p = run(binary, ["complexity", "--n", n_arg, "--out", out] + FAST)
        check(p.returncode == 0, "complexity runs (exit %d)" % p.returncode)
        if p.returncode:
            print(p.stderr)
        meta, header, rows = parse(out)
        check(meta and meta[0].startswith("# linattn complexity:"), "the file names its experiment")
        check(header == COLUMNS, "header row %s" % header)
        local = not any("no \"local\" kernel" in m for m in meta)
        layers = LAYERS + (["restricted_attention"] if local else [])
        for layer in layers:
            got = sorted(int(r["n"]) for r in rows if r["layer"] == layer)
            check(got == NS, "%s measured at every N (%s)" % (layer, got))
        bad = [r for r in rows if r["status"] != "ok"]
        check(not bad, "every status ok (%s)" % [(r["layer"], r["n"], r["status"]) for r in bad])
        times_ok = all(math.isfinite(float(r[c])) and float(r[c]) > 0
                       for r in rows for c in ("median_s", "q1_s", "q3_s", "min_s", "max_s"))
        check(times_ok, "times finite and positive")
        check(all(float(r["q1_s"]) <= float(r["median_s"]) <= float(r["q3_s"]) for r in rows),
              "q1 <= median <= q3")
        d, k = 8, 3
        for r in rows:
            n = int(r["n"])
            want = {"recurrent": n * (4 * d * d + 2 * d),
                    "convolutional": n * (2 * k * d * d + d)}.get(r["layer"])
            if want is not None:
                check(float(r["flops"]) == want, "%s N=%d flops %s = %d (closed form)"
                      % (r["layer"], n, r["flops"], want))
        table = {r["layer"]: (r["sequential_ops"], r["path_length"]) for r in rows}
        check(table.get("self_attention") == ("1", "1") and table.get("recurrent") == ("N", "N")
              and table.get("convolutional") == ("1", "log_k(N)"),
              "Table 1's sequential operations and path lengths (%s)" % table)
        _, fit_header, fit_rows = parse(fit)
        check(fit_header is not None and "fitted_exponent" in fit_header
              and "exponent_ci_lo" in fit_header, "fit file header %s" % fit_header)
        fitted = {r["layer"]: r for r in fit_rows}
        check(sorted(fitted) == sorted(layers), "one fit row per layer (%s)" % sorted(fitted))
        check(all(r["fitted_exponent"] and math.isfinite(float(r["fitted_exponent"]))
                  and float(r["exponent_ci_lo"]) <= float(r["exponent_ci_hi"])
                  for r in fit_rows), "every layer has an exponent and an interval")
        check(all(("complexity: " + layer) in p.stdout for layer in layers)
              and "measured exponent" in p.stdout, "the table on stdout")

        # 2. --resume keeps the rows: nothing measured again, the rows still there
        before = [(r["layer"], r["n"], r["median_s"]) for r in rows]
        p = run(binary, ["complexity", "--n", n_arg, "--out", out, "--resume"] + FAST)
        check(p.returncode == 0, "--resume runs (exit %d)" % p.returncode)
        meta, _, rows = parse(out)
        after = [(r["layer"], r["n"], r["median_s"]) for r in rows]
        check(after == before, "--resume keeps every row and measures nothing again")
        # a longer sweep resumed: the old rows kept, the new N added
        p = run(binary, ["complexity", "--n", n_arg + ",2048", "--out", out, "--resume"] + FAST)
        _, _, rows = parse(out)
        check(p.returncode == 0 and [(r["layer"], r["n"], r["median_s"]) for r in rows][:len(before)]
              == before and sum(r["n"] == "2048" for r in rows) == len(layers),
              "--resume with one more N keeps the rows and adds its %d" % len(layers))

        # 3. bad flags: exit 2, one line, nothing written
        for args, what in ((["--d", "0"], "--d"), (["--kernel-width", "2"], "--kernel-width"),
                           (["--n", "0"], "--n"), (["--window", "0"], "--window"),
                           (["--bogus"], "--bogus")):
            bad_out = os.path.join(tmp, "bad_%s.csv" % what.strip("-"))
            p = run(binary, ["complexity", "--out", bad_out] + args)
            lines = p.stderr.splitlines()
            check(p.returncode == 2 and len(lines) == 1 and lines[0].startswith("linattn: " + what)
                  and not os.path.exists(bad_out),
                  "%s refused: exit %d, %r" % (" ".join(args), p.returncode, p.stderr))

        # 4. the help names every flag
        p = run(binary, ["help", "complexity"])
        check(p.returncode == 0 and all(f in p.stdout for f in
                                        ("--n", "--d", "--kernel-width", "--window", "--resume",
                                         "--max-seconds", "--threads", "--seed", "--reps")),
              "linattn help complexity describes the flags")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
