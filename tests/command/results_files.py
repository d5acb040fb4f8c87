#!/usr/bin/python3
"""results_files.py — every results file `linattn` writes reads the same way: bench's csv
(on standard output) against scaling.csv, end to end through the command.

Usage: /usr/bin/python3 tests/command/results_files.py BUILD/linattn   (run by `make test`)

Checks that bench --format csv carries the metadata lines every results file has (the one
writer's, in the same order, then bench's own), that the columns bench shares with
scaling.csv are spelled as scaling.csv spells them (d_k, not d; reps, not runs), and that
its variant column holds series names as the experiments' files do (the series `linattn
help scaling` lists). Exit status 1 when a check fails.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

# The concepts bench.csv and scaling.csv share, by scaling.csv's names.
SHARED = ["variant", "n", "d_k", "d_v", "heads", "batch", "threads", "status", "reps",
          "median_s", "min_s", "max_s", "gflops", "workspace_bytes"]
# Names the same concepts had before they were made one (must not come back).
RETIRED = ["d", "dv", "runs", "causal_form"]


def run(binary, args, stdout=None):
    proc = checks.run(binary, args)
    if proc.returncode != 0:
        raise SystemExit("results_files: linattn %s: exit %d: %s"
                         % (" ".join(args), proc.returncode, proc.stderr.strip()))
    return proc.stdout


def parse(text):
    """(metadata keys in order, header row as a list, rows as dicts)"""
    meta, header, rows = checks.parse_results(text)
    return [m[2:].split(":", 1)[0] for m in meta if m.startswith("# ")], header, rows


def main():
    binary = checks.binary_arg("results_files.py")
    check = checks.Checks("results_files")

    with tempfile.TemporaryDirectory() as tmp:
        scaling_csv = os.path.join(tmp, "scaling.csv")
        run(binary, ["scaling", "--n", "16:32", "--variant", "linear", "--reps", "1",
                     "--min-time", "0", "--max-seconds", "1", "--out", scaling_csv])
        with open(scaling_csv) as f:
            s_keys, s_header, _ = parse(f.read())
        bench = run(binary, ["bench", "--n", "16", "--variant", "linear,linear_recurrent,softmax", "--causal",
                             "--reps", "1", "--threads", "1", "--format", "csv"])
        b_keys, b_header, b_rows = parse(bench)

    # the metadata: the writer's lines first (experiment name aside), then bench's own
    check(b_keys[0] == "linattn bench" and s_keys[0] == "linattn scaling",
          "first line names the experiment (%s / %s)" % (b_keys[0], s_keys[0]))
    check(b_keys[1:len(s_keys)] == s_keys[1:],
          "bench's # lines begin with every results file's: %s" % " ".join(s_keys[1:]))
    check({"shape", "timing", "sgemm_gflops"} <= set(b_keys[len(s_keys):]),
          "then bench's own: shape, timing, sgemm_gflops")

    # the columns
    missing = [c for c in SHARED if c not in b_header]
    check(not missing, "bench's columns include scaling.csv's %s%s"
          % (",".join(SHARED), " (missing: %s)" % ",".join(missing) if missing else ""))
    retired = [c for c in RETIRED if c in b_header]
    check(not retired, "no retired column names (%s)" % ",".join(retired or RETIRED))
    check(all(c in s_header for c in SHARED), "scaling.csv still has them")

    # the rows: the yardstick, then series names from the registry
    help_scaling = run(binary, ["help", "scaling"])
    series = [r["variant"] for r in b_rows if r["variant"] != "sgemm"]
    check(b_rows and b_rows[0]["variant"] == "sgemm", "the first row is the yardstick")
    check(series == ["linear_causal_chunked", "linear_causal_recurrent", "softmax_causal"],
          "both causal linear kernels and softmax, named as series: %s" % ",".join(series))
    check(all(s in help_scaling for s in series), "each is a series scaling lists")
    check(all(r.get("status") == "ok" and int(r.get("reps", "0")) >= 1 for r in b_rows),
          "every row measured: status ok, reps >= 1")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
