#!/usr/bin/python3
"""learn_runs.py — the learning experiments end to end at a few steps: `linattn copy-task`
and `linattn recall` write their `#` metadata lines, header and one row per evaluation (per
point), the accuracies in [0, 1] and the losses finite, and a second run from the same seed
writes the same bits (every column but elapsed_s); --resume keeps the finished variants and
adds none; `linattn train-speed` writes one row per variant and N whose parts add up to no
more than the step's time plus the timing's noise; bad flags are refused with exit 2, one
line and no file.

Usage: /usr/bin/python3 tests/command/learn_runs.py BUILD/linattn   (run by `make test`)

A few steps per variant at the experiments' scaled-down sizes: a few seconds (the quick
profile runs two variants, the full one four).
"""
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)

COPY_COLUMNS = ["variant", "step", "seq_len", "layers", "d_model", "heads", "batch",
                "train_loss", "eval_loss", "eval_accuracy", "elapsed_s", "status"]
RECALL_COLUMNS = ["study", "variant", "seq_len", "pairs", "width", "head_dim", "vocab", "batch",
                  "steps", "eval_loss", "eval_accuracy", "elapsed_s", "status"]


def rows_of(path):
    with open(path) as f:
        return checks.parse_results(f.read())


def without_clock(rows):
    return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in rows]


def main():
    binary = checks.binary_arg("learn_runs.py")
    check = checks.Checks("learn_runs")
    seed = checks.seed("learn_runs") % 1000
    run = checks.run
    variants = "softmax,linear_elu" if checks.quick() else "softmax,linear_elu,taylor,favor"
    n_variants = len(variants.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        # copy-task: 3 steps per variant, evaluated at the last
        out_a, out_b = os.path.join(tmp, "a.csv"), os.path.join(tmp, "b.csv")
        base = ["copy-task", "--steps", "3", "--variants", variants, "--seed", str(seed),
                "--threads", "1"]
        p = run(binary, base + ["--out", out_a])
        check(p.returncode == 0, "copy-task runs (%s)" % p.stderr.strip()[-300:])
        if p.returncode == 0:
            meta, header, rows = rows_of(out_a)
            check(header == COPY_COLUMNS, "copy-task header %s" % header)
            check(any(m.startswith("# linattn copy_task") for m in meta)
                  and any(m.startswith("# git_commit:") for m in meta),
                  "copy-task has the # metadata lines")
            check([r["variant"] for r in rows] == variants.split(",")
                  and all(r["step"] == "3" and r["status"] == "ok" for r in rows),
                  "copy-task: one row per variant at step 3: %s"
                  % [(r["variant"], r["step"]) for r in rows])
            check(all(0 <= float(r["eval_accuracy"]) <= 1 and math.isfinite(float(r["eval_loss"]))
                      and math.isfinite(float(r["train_loss"])) for r in rows),
                  "copy-task: accuracies in [0, 1], losses finite")
            p = run(binary, ["copy-task", "--steps", "3", "--variants", variants, "--seed",
                             str(seed), "--threads", "2", "--out", out_b])
            _, _, rows_b = rows_of(out_b) if p.returncode == 0 else (None, None, [])
            check(without_clock(rows) == without_clock(rows_b),
                  "copy-task: the same seed gives the same bits (1 and 2 threads)")
            p = run(binary, base + ["--out", out_a, "--resume"])
            _, _, rows_r = rows_of(out_a)
            check(p.returncode == 0 and len(rows_r) == len(rows),
                  "copy-task --resume keeps the finished variants, adds no row (%d rows)"
                  % len(rows_r))

        # recall: 2 steps per point
        out = os.path.join(tmp, "recall.csv")
        p = run(binary, ["recall", "--steps", "2", "--variants", variants, "--seed", str(seed),
                         "--threads", "1", "--out", out])
        check(p.returncode == 0, "recall runs (%s)" % p.stderr.strip()[-300:])
        if p.returncode == 0:
            meta, header, rows = rows_of(out)
            check(header == RECALL_COLUMNS, "recall header %s" % header)
            check(len(rows) == 5 * n_variants, "recall: 5 points per variant (%d rows)" % len(rows))
            check(sorted({r["study"] for r in rows}) == ["both", "pairs", "width"],
                  "recall: studies both, pairs, width")
            check(all(0 <= float(r["eval_accuracy"]) <= 1 and math.isfinite(float(r["eval_loss"]))
                      for r in rows), "recall: accuracies in [0, 1], losses finite")
            check(all(int(r["pairs"]) * 4 <= int(r["seq_len"]) for r in rows),
                  "recall: 4K <= N at every point")

        # train-speed: two tiny points per variant
        out = os.path.join(tmp, "speed.csv")
        p = run(binary, ["train-speed", "--n", "16,32", "--tokens", "64", "--min-time", "0",
                         "--variants", "softmax,linear_elu", "--threads", "1", "--out", out])
        check(p.returncode == 0, "train-speed runs (%s)" % p.stderr.strip()[-300:])
        if p.returncode == 0:
            _, header, rows = rows_of(out)
            check([(r["variant"], r["n"], r["sequences"]) for r in rows]
                  == [("softmax", "16", "4"), ("linear_elu", "16", "4"),
                      ("softmax", "32", "2"), ("linear_elu", "32", "2")],
                  "train-speed: one row per N and variant, batch = tokens / N")
            check(all(float(r["tokens_per_s"]) > 0 and 0 < float(r["attention_share"])
                      and float(r["gemm_gflops"]) > 0 for r in rows),
                  "train-speed: tokens/s, the attention's share and the GEMM rate positive")
            parts = ["attention_s", "projections_s", "ffn_s", "norms_s", "head_s", "optimizer_s"]
            check(all(float(r[c]) > 0 for r in rows for c in parts + ["step_s"]),
                  "train-speed: every part of the step timed, positive")
            check(all(abs(float(r["attention_share"]) * float(r["step_s"])
                          - float(r["attention_s"])) <= 1e-3 * float(r["attention_s"]) + 1e-9
                      for r in rows), "train-speed: attention_share = attention_s / step_s")
            check(all(abs(sum(float(r[c]) for c in parts + ["other_s"]) - float(r["step_s"]))
                      <= 1e-4 * float(r["step_s"]) for r in rows),
                  "train-speed: the parts and other_s add up to step_s")

        # refused: exit 2, one line, no file
        for args, what in [
                (["copy-task", "--variants", "softmax,bogus"], "an unknown variant"),
                (["copy-task", "--steps", "0"], "--steps 0"),
                (["recall", "--variants", "softmax,softmax"], "a variant given twice"),
                (["train-speed", "--n", "48", "--tokens", "64"], "an N that does not divide T")]:
            path = os.path.join(tmp, "refused.csv")
            p = run(binary, args + ["--out", path])
            check.refused(p, what)
            check(not os.path.exists(path), "%s: no file written" % what)
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
