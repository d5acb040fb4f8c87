#!/usr/bin/python3
"""scaling_sweeps.py — `linattn scaling` end to end: the one list syntax for --n and the
other axes, the long format (a new axis is rows), the fits with their intervals, the
refusal of a fit from too few points, the machine check in the metadata, and --resume.

Usage: /usr/bin/python3 tests/command/scaling_sweeps.py BUILD/linattn   (run by `make test`)

Tiny sizes, one repetition: a few seconds. Exit status 1 when a check fails.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

FAST = ["--reps", "1", "--min-time", "0", "--max-seconds", "5", "--heads", "1"]


def parse(path):
    """(metadata lines, header as a list, rows as dicts)"""
    with open(path) as f:
        return checks.parse_results(f.read())


def main():
    binary = checks.binary_arg("scaling_sweeps.py")
    check = checks.Checks("scaling_sweeps")
    run = checks.run

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scaling.csv")
        fit = os.path.join(tmp, "scaling_fit.csv")

        # 1. a fit from too few points is refused before anything is measured: exit 2, one
        #    line, the files already there untouched
        for path in (out, fit):
            with open(path, "w") as f:
                f.write("an earlier run\n")
        p = run(binary, ["scaling", "--n", "250:1000", "--factor", "1.5", "--variant", "linear",
                         "--out", out] + FAST)
        lines = p.stderr.splitlines()
        check(p.returncode == 2, "--n 250:1000 --factor 1.5 (4 lengths, a fit over 2): exit 2 "
              "(got %d)" % p.returncode)
        check(len(lines) == 1 and lines[0].startswith("linattn: scaling: ")
              and "at least 4" in lines[0], "one line naming the rule: %r" % p.stderr)
        check(all(open(path).read() == "an earlier run\n" for path in (out, fit)),
              "the files already there are untouched")
        os.remove(out), os.remove(fit)
        p = run(binary, ["scaling", "--n", "250:1000", "--factor", "1.5", "--variant", "linear",
                         "--no-fit", "--d", "16", "--out", out] + FAST)
        check(p.returncode == 0 and len(parse(out)[2]) == 4 and not os.path.exists(fit),
              "the same with --no-fit: exit 0, 4 rows, no fit file (%d: %s)"
              % (p.returncode, p.stderr.strip()))
        if os.path.exists(out):
            os.remove(out)

        # 2. --n as a list of values: measured, no fit (fewer than 4 lengths), said so
        p = run(binary, ["scaling", "--n", "256,512,1024", "--variant", "linear", "--d", "16",
                         "--out", out] + FAST)
        check(p.returncode == 0, "--n 256,512,1024: exit 0 (got %d: %s)"
              % (p.returncode, p.stderr.strip()))
        if p.returncode == 0:
            _, header, rows = parse(out)
            check(sorted(int(r["n"]) for r in rows) == [256, 512, 1024],
                  "one row per N: %s" % [r["n"] for r in rows])
            check("no exponent fitted" in p.stdout, "says no exponent was fitted")
            check(not os.path.exists(fit), "writes no fit file")
            i = header.index("median_s")
            check(header[i:i + 5] == ["median_s", "min_s", "max_s", "q1_s", "q3_s"],
                  "columns median_s,min_s,max_s,q1_s,q3_s in that order")
            ok = [r for r in rows if r["status"] == "ok"]
            check(ok and all(float(r["min_s"]) <= float(r["q1_s"]) <= float(r["median_s"])
                             <= float(r["q3_s"]) <= float(r["max_s"]) for r in ok),
                  "min <= q1 <= median <= q3 <= max in every ok row")
            os.remove(out)

        # 3. a d sweep in long format, with a fit per (variant, d): 7 lengths of N
        p = run(binary, ["scaling", "--n", "16:1024", "--d", "8,16", "--variant",
                         "linear,softmax", "--out", out] + FAST)
        check(p.returncode == 0, "--n 16:1024 --d 8,16: exit 0 (got %d: %s)"
              % (p.returncode, p.stderr.strip()))
        if p.returncode == 0:
            meta, header, rows = parse(out)
            points = {(r["variant"], r["n"], r["d_k"]) for r in rows}
            check(len(rows) == 2 * 2 * 7 and len(points) == len(rows),
                  "one row per (variant, n, d): %d rows" % len(rows))
            check({r["d_k"] for r in rows} == {"8", "16"} and "d_8" not in header,
                  "d is a column's values, not new columns")
            fmeta, fheader, frows = parse(fit)
            check(sorted((r["variant"], r["d_k"]) for r in frows)
                  == sorted((v, d) for v in ("linear", "softmax") for d in ("8", "16")),
                  "the fit file has one row per (variant, d)")
            for column in ("fitted_exponent", "exponent_ci_lo", "exponent_ci_hi", "r_squared",
                           "fit_points", "theory_exponent", "prefactor_s"):
                check(column in fheader, "fit column %s" % column)
            fitted = [r for r in frows if r["fitted_exponent"]]
            check(all(float(r["exponent_ci_lo"]) <= float(r["fitted_exponent"])
                      <= float(r["exponent_ci_hi"]) and float(r["r_squared"]) <= 1
                      and int(r["fit_points"]) >= 4 for r in fitted),
                  "every fit: ci_lo <= exponent <= ci_hi, R^2 <= 1, at least 4 points")
            check(all("nan" not in ",".join(r.values()).lower() for r in frows),
                  "no NaN in the fit file")

            # 4. the machine check in the metadata, as the plots read it
            for name, lines in (("scaling.csv", meta), ("scaling_fit.csv", fmeta)):
                check(any(re.fullmatch(r"# load_average: \d+\.\d+ \d+\.\d+ \d+\.\d+( .*)?", m)
                          for m in lines), "%s: # load_average: <1> <5> <15>" % name)
                check(any(re.fullmatch(r"# calibration: \d+\.\d+ \d+\.\d+ \(spread \d+\.\d%\)",
                                       m) for m in lines),
                      "%s: # calibration: <t1_s> <t2_s> (spread <pct>%%)" % name)
                check(any(re.fullmatch(r"# noisy: (no|yes \(.+\))", m) for m in lines),
                      "%s: # noisy: yes (<why>) or no" % name)
            noisy = any(m.startswith("# noisy: yes") for m in meta)
            warned = [l for l in p.stderr.splitlines() if "machine is busy" in l]
            check(len(warned) == (1 if noisy else 0) and all(
                re.fullmatch(r"linattn: warning: the machine is busy \(.+\): timings are noisy", l)
                for l in warned), "one stderr warning exactly when noisy: yes")

            # 5. --resume keeps every point: nothing measured again
            p = run(binary, ["scaling", "--n", "16:1024", "--d", "8,16", "--variant",
                             "linear,softmax", "--out", out, "--resume"] + FAST)
            meta2, _, rows2 = parse(out)
            check(p.returncode == 0 and rows2 == rows
                  and any(m.startswith("# resumed: ") for m in meta2),
                  "--resume: the same rows, a # resumed line, nothing added")
        # 6. --pass train: forward + backward per call, only kernels with a backward, its own
        #    experiment name and # pass line; a kernel without a backward named: refused
        train = os.path.join(tmp, "scaling_train.csv")
        p = run(binary, ["scaling", "--pass", "train", "--n", "16:1024", "--d", "8", "--out",
                         train] + FAST)
        meta, header, rows = parse(train) if os.path.exists(train) else ([], None, [])
        kinds = {r["variant"] for r in rows}
        check(p.returncode == 0 and meta and meta[0].startswith("# linattn scaling_train: ")
              and any(m.startswith("# pass: train") for m in meta)
              and all(r["status"] == "ok" for r in rows) and "linear" in kinds,
              "--pass train: a scaling_train file with a # pass line, every point ok (%s)"
              % sorted(kinds))
        # hard attention has a backward pass: --pass train measures it
        hard = os.path.join(tmp, "t2.csv")
        p = run(binary, ["scaling", "--pass", "train", "--variant", "hard", "--n", "16", "--out",
                         hard] + FAST)
        meta, _, rows = parse(hard) if os.path.exists(hard) else ([], None, [])
        check(p.returncode == 0 and any(m.startswith("# pass: train") for m in meta)
              and rows and all(r["variant"] == "hard" and r["status"] == "ok" for r in rows),
              "--pass train --variant hard: exit 0, a # pass line, its rows ok (%d: %s; %s)"
              % (p.returncode, p.stderr.strip()[:120],
                 [(r["variant"], r["status"]) for r in rows]))
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
