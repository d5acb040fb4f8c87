#!/usr/bin/python3
"""reference_guard.py — no command but `linattn results --update` writes the committed
reference (this repository's results/ and plots/), whatever the spelling:

  - an experiment run without --out writes NAME.csv in the current directory, and the
    repository's results/ stays byte for byte as it was;
  - --out into results/ is refused (exit 2, one line, nothing written) spelt relative, as
    an absolute path from another directory, through `..`, and through a symbolic link;
  - `linattn results --out-dir` and `--plots-dir` naming the repository's folders are
    refused from / too (the guard compares folders, not spellings);
  - `linattn train --log` and `--checkpoint` into results/ are refused.
Only params-sweep (a closed form, no timing) and refused runs: well under a second each.

Usage: /usr/bin/python3 tests/command/reference_guard.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

SWEEP = ["params-sweep", "--d-model", "64,128"]


def snapshot(folder):
    files = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            st = os.stat(path)
            with open(path, "rb") as f:
                files[name] = (f.read(), st.st_ino, st.st_mtime_ns)
    return files


def main():
    binary = os.path.abspath(checks.binary_arg("reference_guard.py"))
    check = checks.Checks("reference_guard")
    # the repository: the nearest folder above BUILD/ with lib/linattn.h (build/linattn,
    # build/asan/linattn), as the command finds it
    repo = os.path.dirname(os.path.dirname(binary))
    while not os.path.isfile(os.path.join(repo, "lib", "linattn.h")) and repo != "/":
        repo = os.path.dirname(repo)
    results = os.path.join(repo, "results")
    plots = os.path.join(repo, "plots")
    if not os.path.isfile(os.path.join(repo, "lib", "linattn.h")):
        print("reference_guard: %s is not in a build folder of the repository" % binary)
        return 1
    before = snapshot(results), snapshot(plots)

    with tempfile.TemporaryDirectory() as tmp:
        # the default: the current directory
        proc = checks.run(binary, SWEEP, cwd=tmp)
        check(proc.returncode == 0 and os.path.isfile(os.path.join(tmp, "params.csv")),
              "without --out: params.csv in the current directory (%s)" % proc.stderr.strip())

        link = os.path.join(tmp, "link.csv")
        os.symlink(os.path.join(results, "params.csv"), link)
        sub = os.path.join(tmp, "sub")
        os.makedirs(sub)
        for where, out in (("relative", "results/params.csv"),
                           ("absolute, from /", os.path.join(results, "params.csv")),
                           ("a new file, absolute", os.path.join(results, "new.csv")),
                           ("through ..", os.path.join(results, "..", "results", "x.csv")),
                           ("through a symbolic link", link)):
            cwd = repo if where == "relative" else "/"
            proc = checks.run(binary, SWEEP + ["--out", out], cwd=cwd)
            check.refused(proc, "--out into results/, %s" % where)
            check("committed reference" in proc.stderr,
                  "--out into results/, %s: the line says why (%s)" % (where, proc.stderr.strip()))
        check(not os.path.exists(os.path.join(results, "new.csv")), "no new file in results/")

        # train's log and checkpoint folder, and block's output, into results/
        tiny = ["train", "--task", "copy", "--steps", "1", "--d-model", "8", "--heads", "1",
                "--d-ff", "8", "--layers", "1", "--seq-len", "8", "--batch", "2", "--threads",
                "1"]
        for flag, name in (("--log", "train.csv"), ("--checkpoint", "ckpt")):
            proc = checks.run(binary, tiny + [flag, os.path.join(results, name)], cwd="/")
            check.refused(proc, "train %s into results/" % flag)
            check(not os.path.exists(os.path.join(results, name)),
                  "train %s into results/: nothing written" % flag)

        # the suite's own folders, from another directory
        quick = ["results", "--quick", "--only", "params-sweep", "--no-figures"]
        check.refused(checks.run(binary, quick + ["--out-dir", results], cwd="/"),
                      "results --out-dir RESULTS, from /")
        check.refused(checks.run(binary, quick + ["--out-dir", os.path.join(tmp, "run"),
                                                  "--plots-dir", plots], cwd="/"),
                      "results --plots-dir PLOTS, from /")
        check.refused(checks.run(binary, quick + ["--out-dir", "../" * 20 + results.lstrip("/")],
                                 cwd=sub),
                      "results --out-dir ../../…/results")

    check((snapshot(results), snapshot(plots)) == before,
          "the repository's results/ and plots/ are byte for byte as before")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
