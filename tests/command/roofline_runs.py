#!/usr/bin/python3
"""roofline_runs.py — `linattn roofline` end to end at tiny sizes: the ceilings in the
header (# ceilings, # roofline), the CSV's header row and its rows (every series asked at
every dtype, d and N, statuses ok, times finite and positive), the derived columns
recomputed here from the row's own numbers (gflops = flops / median_s, intensity = flops /
bytes_min, roofline = min(peak, intensity × bandwidth), the two percentages), bytes_min
against its closed form for softmax and linear attention (lib/linattn.h, la_cost), the
summary on stdout, --resume keeping the rows, the figure (linattn plot, where gnuplot is),
and bad flags refused with exit 2 and one line.

Usage: /usr/bin/python3 tests/command/roofline_runs.py BUILD/linattn   (run by `make test`)

Tiny sizes, one repetition: a few seconds (the probes' arrays are 4 × L3: about 0.5 s).
Exit status 1 when a check fails.
"""
import math
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)

FAST = ["--reps", "1", "--min-time", "0", "--max-seconds", "5"]
NS, DS = [16, 64], [8, 16]
SERIES = ["softmax", "linear", "linear_causal_chunked"]
COLUMNS = ["variant", "kernel", "dtype", "n", "d", "heads", "threads", "status", "reps",
           "median_s", "min_s", "max_s", "q1_s", "q3_s", "flops", "bytes_min",
           "intensity_flop_per_byte", "gflops", "peak_gflops", "bandwidth_gbs",
           "roofline_gflops", "pct_of_peak", "pct_of_roofline"]


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def parse(path):
    with open(path) as f:
        return checks.parse_results(f.read())


def main():
    binary = checks.binary_arg("roofline_runs.py")
    check = checks.Checks("roofline_runs")
    run = checks.run

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "roofline.csv")
        args = ["roofline", "--n", ",".join(map(str, NS)), "--d", ",".join(map(str, DS)),
                "--variant", ",".join(SERIES), "--heads", "2", "--out", out] + FAST

        # 1. a run: the ceilings, header, rows and their derived columns
        p = run(binary, args)
        check(p.returncode == 0, "roofline runs (exit %d)" % p.returncode)
        if p.returncode:
            print(p.stderr)
        meta, header, rows = parse(out)
        check(meta and meta[0].startswith("# linattn roofline:"), "the file names its experiment")
        check(any(m.startswith("# ceilings: FMA peak float32") and "triad" in m for m in meta),
              "the ceilings are in the header")
        check(any(m.startswith("# roofline: min(peak") for m in meta), "the bound is stated")
        check(header == COLUMNS, "header row %s" % header)
        for s in SERIES:
            for dtype in ("f32", "f64"):
                got = sorted((int(r["d"]), int(r["n"])) for r in rows
                             if r["variant"] == s and r["dtype"] == dtype)
                want = sorted((d, n) for d in DS for n in NS)
                check(got == want, "%s %s measured at every d and N (%s)" % (s, dtype, got))
        bad = [r for r in rows if r["status"] != "ok"]
        check(not bad, "every status ok (%s)" % [(r["variant"], r["n"], r["status"]) for r in bad])
        check(all(math.isfinite(float(r[c])) and float(r[c]) > 0
                  for r in rows for c in ("median_s", "q1_s", "q3_s", "min_s", "max_s")),
              "times finite and positive")
        derived = True
        for r in rows:
            was = derived
            flops, t, b = float(r["flops"]), float(r["median_s"]), float(r["bytes_min"])
            n, d, e = int(r["n"]), int(r["d"]), 8 if r["dtype"] == "f64" else 4
            heads = int(r["heads"])
            io = heads * 4 * n * d * e
            want_bytes = io if r["kernel"] == "softmax" else io + heads * 2 * (d * d + d) * e
            if b != want_bytes:
                derived = check(False, "%s %s N=%d d=%d: bytes_min %g, closed form %g"
                                % (r["variant"], r["dtype"], n, d, b, want_bytes))
            intensity = flops / b
            derived &= close(float(r["gflops"]), flops / t * 1e-9, 1e-3)
            derived &= close(float(r["intensity_flop_per_byte"]), intensity, 1e-3)
            bw = float(r["bandwidth_gbs"])
            derived &= math.isfinite(bw) and bw > 0
            if r["peak_gflops"]:  # empty where the AVX-512 probe does not run
                peak = float(r["peak_gflops"])
                roof = min(peak, intensity * bw)
                derived &= close(float(r["roofline_gflops"]), roof, 1e-3)
                derived &= close(float(r["pct_of_peak"]), 100 * flops / t * 1e-9 / peak, 1e-3)
                derived &= close(float(r["pct_of_roofline"]), 100 * flops / t * 1e-9 / roof, 1e-3)
            else:
                derived &= r["roofline_gflops"] == "" and r["pct_of_peak"] == ""
            if was and not derived:
                print("  first row that does not follow: %s" % r)
        check(derived, "gflops, intensity, roofline and percentages follow from each row")
        check("roofline: series" in p.stdout and all(("roofline: " + s) in p.stdout
                                                     for s in SERIES), "the summary on stdout")

        # 2. --resume keeps the rows: nothing measured again
        before = [(r["variant"], r["dtype"], r["n"], r["d"], r["median_s"]) for r in rows]
        p = run(binary, args + ["--resume"])
        _, _, rows = parse(out)
        check(p.returncode == 0 and
              [(r["variant"], r["dtype"], r["n"], r["d"], r["median_s"]) for r in rows] == before,
              "--resume keeps every row and measures nothing again")

        # 3. bad flags: exit 2, one line, nothing written
        for bad_args, what in ((["--d", "0"], "--d"), (["--n", "0"], "--n"),
                               (["--heads", "0"], "--heads"), (["--dtype", "f16"], "--dtype"),
                               (["--variant", "nope"], "--variant"), (["--bogus"], "--bogus")):
            bad_out = os.path.join(tmp, "bad_%s.csv" % what.strip("-"))
            p = run(binary, ["roofline", "--out", bad_out] + bad_args)
            check(checks.refused(p, "linattn: " + what) and not os.path.exists(bad_out),
                  "%s refused: exit %d, %r" % (" ".join(bad_args), p.returncode, p.stderr))

        # 4. the figure, where gnuplot is here
        if shutil.which("gnuplot"):
            p = run(binary, ["plot", "--from", out, "--out", tmp, "--format", "png"])
            png = os.path.join(tmp, "roofline.png")
            check(p.returncode == 0 and os.path.exists(png) and os.path.getsize(png) > 10000,
                  "linattn plot draws roofline.png (exit %d, %s)" % (p.returncode, p.stderr.strip()))
        else:
            print("roofline_runs: gnuplot is missing: the figure is not drawn")

        # 5. the help names every flag
        p = run(binary, ["help", "roofline"])
        check(p.returncode == 0 and all(f in p.stdout for f in
                                        ("--n", "--d", "--dtype", "--heads", "--variant",
                                         "--resume", "--max-seconds", "--threads", "--reps")),
              "linattn help roofline describes the flags")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
