#!/usr/bin/python3
"""csv_load.py — a results file loads with the one-line loads docs/guide.md shows, and
`linattn csv` gives the same data to tools that cannot skip `#` lines.

Usage: /usr/bin/python3 tests/command/csv_load.py BUILD/linattn   (run by `make test`)

Writes a results file with `linattn params-sweep` (instant: it measures nothing; every
experiment writes through the same writer), adds the `#` lines a run can leave between
rows (`# resumed:` after --resume, a metadata line after the header), then checks:
  - the NumPy line of docs/guide.md (exactly as written there) gives the header's columns,
    every data row, numbers as numbers and text as text;
  - the pandas line, where pandas is installed (Debian's python3-pandas is not a test
    dependency: otherwise it is reported as skipped);
  - `linattn csv --plain` is the file without its `#` and empty lines, and NumPy without
    the comment filter reads the same array from it;
  - `linattn csv --meta` is JSON with the metadata, the columns and the row count, a
    repeated key as a list;
  - bad input: exit 2, one line on stderr, and --out not created or not replaced.
Exit status 1 when a check fails.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

# The two loads, as docs/guide.md writes them (checked to be there, word for word).
NUMPY_LINE = ("np.genfromtxt((l for l in open(path) if l[0] != '#'), delimiter=',', "
              "names=True, dtype=None, encoding=None)")
PANDAS_LINE = "pd.read_csv(path, comment='#')"


def main():
    binary = checks.binary_arg("csv_load.py")
    guide = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                         "guide.md")
    check = checks.Checks("csv_load")

    def run(args):
        return checks.run(binary, args, timeout=120)

    with open(guide) as f:
        text = f.read()
    check(NUMPY_LINE in text, "docs/guide.md shows the NumPy line tested here")
    check(PANDAS_LINE in text, "docs/guide.md shows the pandas line")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "params.csv")
        proc = run(["params-sweep", "--out", path])
        check(proc.returncode == 0, "params-sweep wrote %s (%s)" % (path, proc.stderr.strip()))
        with open(path) as f:
            lines = f.read().splitlines()
        header_at = next(i for i, l in enumerate(lines) if not l.startswith("#"))
        header = lines[header_at].split(",")
        data = lines[header_at + 1:]
        # what a resumed or annotated run leaves in the file
        lines = (lines[:header_at + 1] + ["# noisy: an annotation after the header"] +
                 data[:5] + ["", "# resumed: 2026-01-01T00:00:00Z (commit abc1234), 5 points "
                             "kept: build/linattn params-sweep --resume"] + data[5:])
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")

        # the NumPy line, exactly as in docs/guide.md
        a = eval(NUMPY_LINE, {"np": np, "path": path})
        check(list(a.dtype.names) == header, "NumPy: the columns are the header row")
        check(a.shape == (len(data),), "NumPy: every data row (%d)" % len(data))
        check(np.issubdtype(a["d_model"].dtype, np.integer) and
              np.issubdtype(a["approx_gap"].dtype, np.floating) and
              a["model"].dtype.kind == "U", "NumPy: integers, floats and text typed as such")
        first = data[0].split(",")
        check(a["model"][0] == first[header.index("model")] and
              a["total"][0] == int(first[header.index("total")]),
              "NumPy: the first row's values")

        try:
            import pandas as pd
        except ImportError:
            print("skipped: pandas is not installed; the guide's pandas line is untested")
        else:
            df = eval(PANDAS_LINE, {"pd": pd, "path": path})
            check(list(df.columns) == header and len(df) == len(data),
                  "pandas: the header's columns and every data row")

        # linattn csv --plain
        plain = os.path.join(tmp, "plain.csv")
        proc = run(["csv", "--plain", path, "--out", plain])
        with open(plain) as f:
            got = f.read().splitlines()
        check(proc.returncode == 0 and got == [lines[header_at]] + data,
              "csv --plain: the header and the data rows, nothing else")
        try:
            b = np.genfromtxt(plain, delimiter=",", names=True, dtype=None, encoding=None)
            same = b.dtype == a.dtype and all((b[n] == a[n]).all() for n in header)
        except ValueError:
            same = False
        check(same, "csv --plain: NumPy reads the same array without a filter")
        proc = run(["csv", "--plain", path])
        check(proc.stdout.splitlines() == got, "csv --plain: the same on standard output")

        # linattn csv --meta
        proc = run(["csv", "--meta", path])
        try:
            meta = json.loads(proc.stdout)
        except ValueError as e:
            meta = {}
            check(False, "csv --meta: JSON (%s)" % e)
        check(meta.get("experiment") == "params" and meta.get("columns") == header and
              meta.get("rows") == len(data), "csv --meta: experiment, columns, rows")
        check(meta.get("command", "").endswith("params-sweep --out " + path) and
              "git_commit" in meta and "float32_kernels" in meta,
              "csv --meta: every key: value line, spaces in keys as _")
        check(isinstance(meta.get("resumed"), list) and len(meta["resumed"]) == 1 and
              meta.get("noisy") == "an annotation after the header",
              "csv --meta: resumed as a list, lines after the header too")

        # bad input
        for args, what in (([], "neither flag"),
                           (["--plain", path, "--meta", path], "both flags"),
                           (["--plain", os.path.join(tmp, "missing.csv")], "a missing file"),
                           (["--meta", plain], "--meta of a file without metadata"),
                           (["--plain", tmp], "a folder")):
            out = os.path.join(tmp, "never.csv")
            proc = run(["csv"] + args + ["--out", out])
            check(checks.refused(proc) and not os.path.exists(out),
                  "csv with %s: exit 2, one line, no --out file" % what)
        with open(plain, "rb") as f:
            before = f.read()
        proc = run(["csv", "--plain", os.path.join(tmp, "missing.csv"), "--out", plain])
        with open(plain, "rb") as f:
            check(proc.returncode == 2 and f.read() == before,
                  "a failed csv leaves an existing --out file as it was")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
