#!/usr/bin/python3
"""results_folders.py — where `linattn results` writes, end to end, in a scratch folder
(its own results/ and plots/ standing for the committed reference):

  - a run goes to a new results/runs/DATE-COMMIT/ (results/runs/latest points to it) with
    its CSV files and SUMMARY.md, and the reference files stay byte for byte as they were;
  - it announces its expected duration before it starts;
  - --out-dir results and --plots-dir plots are refused without --update (exit 2, one
    line, nothing written); --update with --out-dir is refused;
  - --update writes results/ (and its SUMMARY.md);
  - --resume and --summary without --out-dir use results/runs/latest, and say so in one
    line when there is none;
  - SUMMARY.md quotes the counts of the files (GPT-2's 124,439,808 parameters) and the
    decode speed-up with its range.
Only params-sweep and a tiny decode run (--quick --only), --no-figures: a few seconds.

Usage: /usr/bin/python3 tests/command/results_folders.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

FLAGS = ["--quick", "--only", "params-sweep,decode", "--no-figures"]
QUICK = ["--quick", "--only", "params-sweep", "--no-figures"]  # instant


def main():
    binary = checks.binary_arg("results_folders.py")
    check = checks.Checks("results_folders")

    with tempfile.TemporaryDirectory() as tmp:
        def run(args):
            return checks.run(binary, ["results"] + args, cwd=tmp)

        def snapshot():
            files = {}
            for top in ("results", "plots"):
                for root, dirs, names in os.walk(os.path.join(tmp, top)):
                    dirs[:] = [d for d in dirs if d != "runs"]
                    for n in names:
                        with open(os.path.join(root, n), "rb") as f:
                            files[os.path.join(root, n)] = f.read()
            return files

        # no run yet: --summary and --resume have nothing to read
        check.refused(run(["--summary"]), "--summary before any run")
        check.refused(run(QUICK + ["--resume"]), "--resume before any run")

        # the reference stand-ins
        os.makedirs(os.path.join(tmp, "results"))
        os.makedirs(os.path.join(tmp, "plots"))
        for path, text in (("results/params.csv", "# the reference\nkind\nsweep\n"),
                           ("results/SUMMARY.md", "reference summary\n"),
                           ("plots/params.png", "not a png\n")):
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        before = snapshot()

        proc = run(FLAGS)
        check(proc.returncode == 0, "a run: exit 0 (%s)" % proc.stderr.strip()[-300:])
        check(re.search(r"expected duration: about [0-9.]+s", proc.stdout) is not None and
              proc.stdout.index("expected duration") < proc.stdout.index("== [1/2]"),
              "the expected duration comes before the first experiment")
        runs = os.path.join(tmp, "results", "runs")
        folders = [d for d in os.listdir(runs) if d != "latest"] if os.path.isdir(runs) else []
        check(len(folders) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\d-\d{4}-\w+(-dirty)?", folders[0]),
              "one run folder named DATE-COMMIT: %s" % folders)
        if folders:
            run_dir = os.path.join(runs, folders[0])
            check(os.readlink(os.path.join(runs, "latest")) == folders[0],
                  "results/runs/latest points to it")
            check(sorted(os.listdir(run_dir)) == ["SUMMARY.md", "decode.csv", "params.csv"],
                  "it holds the CSV files and SUMMARY.md: %s" % sorted(os.listdir(run_dir)))
            with open(os.path.join(run_dir, "SUMMARY.md")) as f:
                summary = f.read()
            check("| gpt2 | 768 | 12 | 3072 | 12 | 124439808 |" in summary,
                  "SUMMARY.md: GPT-2's exact count")
            check(re.search(r"\*\*[\d.]+× faster\*\* \(range [\d.]+×–[\d.]+×", summary) is not None,
                  "SUMMARY.md: the decode speed-up with its range")
            check(summary in proc.stdout, "the summary printed is SUMMARY.md")
        check(snapshot() == before, "the reference files are as they were")

        # the reference is refused without --update
        for args, what in ((["--out-dir", "results"], "--out-dir results"),
                           (["--out-dir", "./results/"], "--out-dir ./results/"),
                           (["--plots-dir", "plots"], "--plots-dir plots"),
                           (["--update", "--out-dir", "elsewhere"], "--update --out-dir")):
            check.refused(run(QUICK + args), what)
        check(snapshot() == before and not os.path.exists(os.path.join(tmp, "elsewhere")),
              "after the refusals, nothing written")

        # --resume and --summary use the latest run
        proc = run(QUICK + ["--resume"])
        check(proc.returncode == 0 and "into %s" % os.path.realpath(run_dir) in proc.stdout,
              "--resume continues results/runs/latest")
        check(len([d for d in os.listdir(runs) if d != "latest"]) == 1, "and makes no new folder")
        proc = run(["--summary"])
        check(proc.returncode == 0 and "# Summary of %s" % os.path.realpath(run_dir) in
              proc.stdout, "--summary reads results/runs/latest")

        # --update writes the reference
        proc = run(QUICK + ["--update"])
        with open(os.path.join(tmp, "results", "params.csv")) as f:
            params = f.read()
        with open(os.path.join(tmp, "results", "SUMMARY.md")) as f:
            ref_summary = f.read()
        check(proc.returncode == 0 and params.startswith("# linattn params:") and
              "124439808" in ref_summary, "--update rewrites results/ and its SUMMARY.md")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
