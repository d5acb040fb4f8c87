#!/usr/bin/python3
"""train_runs.py — `linattn train` end to end on a tiny model: a run stopped half-way
(--steps S/2, then --resume to S) ends with the very weights, moments and generator of the
uninterrupted run, byte for byte, and so does one stopped by SIGINT (exit 130 after its
checkpoint) and resumed, and (full profile) a recall run in float64 with learned positions
and a tied head; 2 threads give the bits of 1 (full profile); the log's `#` metadata lines
and one row per evaluation, kept across --resume; the loss falls on the copy task; a
checkpoint of another shape refused and left as it was; a loss that is not finite stops the run with exit 2 and one line,
the checkpoint already in the folder untouched; the text task's data file refused when
missing, empty or too short.

Usage: /usr/bin/python3 tests/command/train_runs.py BUILD/linattn   (run by `make test`)

A model of 16 features and one layer, a few dozen steps per run: a few seconds (the quick
profile checks softmax attention only, the full one linear attention too).
"""
import math
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)

TINY = ["--d-model", "16", "--heads", "2", "--d-ff", "32", "--layers", "1", "--seq-len", "16",
        "--batch", "4", "--threads", "1", "--eval-every", "5", "--warmup", "3"]
COLUMNS = ["step", "train_loss", "eval_loss", "eval_accuracy", "elapsed_s", "tokens_per_s"]


def folder_bytes(path):
    """{file name: bytes} of a checkpoint folder, without its settings' elapsed_s line
    (the one value that is the clock's, not the run's)."""
    out = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            data = f.read()
        if name == "checkpoint.txt":
            data = b"\n".join(l for l in data.split(b"\n")
                              if not l.startswith((b"setting.elapsed_s ", b"setting.steps ")))
        out[name] = data
    return out


def same_folders(a, b):
    """'' when the two checkpoints hold the same bytes, else what differs"""
    fa, fb = folder_bytes(a), folder_bytes(b)
    if fa.keys() != fb.keys():
        return "files differ: %s" % sorted(set(fa) ^ set(fb))
    diff = [n for n in fa if fa[n] != fb[n]]
    return "differ: %s" % diff[:5] if diff else ""


def rows_of(path):
    with open(path) as f:
        meta, header, rows = checks.parse_results(f.read())
    return meta, header, rows


def main():
    binary = checks.binary_arg("train_runs.py")
    check = checks.Checks("train_runs")
    seed = checks.seed("train_runs") % 1000000
    run = checks.run
    for attention in ["softmax"] if checks.quick() else ["softmax", "linear"]:
        base = TINY + ["--attention", attention, "--seed", str(seed)]
        with tempfile.TemporaryDirectory() as tmp:
            whole, half, stopped = (os.path.join(tmp, n) for n in ("whole", "half", "stopped"))
            log = os.path.join(tmp, "half.csv")
            p = run(binary, ["train", "--steps", "20", "--checkpoint", whole] + base)
            check(p.returncode == 0, "%s: 20 steps run (%s)" % (attention, p.stderr.strip()[-300:]))
            p = run(binary, ["train", "--steps", "10", "--checkpoint", half, "--log", log] + base)
            check(p.returncode == 0, "%s: 10 steps run (%s)" % (attention, p.stderr.strip()[-300:]))
            p = run(binary, ["train", "--resume", half, "--steps", "20", "--checkpoint", half,
                             "--log", log, "--threads", "1"])
            check(p.returncode == 0, "%s: --resume to 20 runs (%s)" % (attention, p.stderr.strip()[-300:]))
            if p.returncode == 0:
                why = same_folders(whole, half)
                check(why == "", "%s: 10 steps + 10 resumed = 20 steps, byte for byte %s"
                      % (attention, why))
                meta, header, rows = rows_of(log)
                check(header == COLUMNS, "log header %s" % header)
                check(any(m.startswith("# linattn train") for m in meta)
                      and any(m.startswith("# git_commit:") for m in meta),
                      "log has the # metadata lines")
                check([r["step"] for r in rows] == ["5", "10", "15", "20"],
                      "%s: one row per evaluation kept across --resume: %s"
                      % (attention, [r["step"] for r in rows]))
                check(all(math.isfinite(float(r[c])) for r in rows for c in COLUMNS[1:]),
                      "%s: every value finite" % attention)

            # stopped by SIGINT after its first checkpoint, resumed: the same bytes as a run
            # straight to that step + 5
            proc = subprocess.Popen([binary, "train", "--steps", "1000000", "--checkpoint",
                                     stopped] + base, stderr=subprocess.PIPE, text=True)
            deadline = time.time() + 60
            while not os.path.exists(os.path.join(stopped, "checkpoint.txt")) \
                    and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
            check(proc.returncode == 130, "%s: SIGINT: exit %s, want 130 (%s)"
                  % (attention, proc.returncode, err.strip()[-200:]))
            with open(os.path.join(stopped, "checkpoint.txt")) as f:
                step = int([l.split()[1] for l in f if l.startswith("step ")][0])
            check(step >= 5, "%s: the checkpoint at SIGINT is at step %d" % (attention, step))
            p = run(binary, ["train", "--resume", stopped, "--steps", str(step + 5),
                             "--threads", "1"])  # (--checkpoint: the folder resumed)
            check(p.returncode == 0, "%s: resumed after SIGINT (%s)" % (attention, p.stderr.strip()[-300:]))
            straight = os.path.join(tmp, "straight")
            p = run(binary, ["train", "--steps", str(step + 5), "--checkpoint", straight] + base)
            why = same_folders(straight, stopped) if p.returncode == 0 else "no run"
            check(why == "", "%s: interrupted at %d and resumed to %d = straight, byte for byte %s"
                  % (attention, step, step + 5, why))

            # another shape, another vocabulary: refused, the checkpoint untouched
            before = folder_bytes(half)
            for flag, value in [("--d-model", "32"), ("--task", "recall"), ("--layers", "2")]:
                p = run(binary, ["train", "--resume", half, "--steps", "30", "--checkpoint",
                                 half, flag, value])
                check(checks.refused(p) and flag in p.stderr,
                      "%s: --resume with %s %s refused: %s" % (attention, flag, value,
                                                              p.stderr.strip()))
            check(folder_bytes(half) == before, "%s: the refused runs left it as it was" % attention)

    if not checks.quick():
        # recall in float64 with learned positions and a tied head: resumed = straight; and
        # 2 threads give the bits of 1
        base = TINY[:-6] + ["--task", "recall", "--pairs", "3", "--vocab",
                            "20", "--precision", "float64", "--positions", "learned", "--head",
                            "tied", "--eval-every", "4", "--seed", str(seed)]
        with tempfile.TemporaryDirectory() as tmp:
            whole, half, two = (os.path.join(tmp, n) for n in ("whole", "half", "two"))
            p1 = run(binary, ["train", "--steps", "8", "--checkpoint", whole, "--threads", "1"]
                     + base)
            p2 = run(binary, ["train", "--steps", "4", "--checkpoint", half, "--threads", "1"]
                     + base)
            p3 = run(binary, ["train", "--resume", half, "--steps", "8", "--threads", "1"])
            ok = all(p.returncode == 0 for p in (p1, p2, p3))
            why = same_folders(whole, half) if ok else (p1.stderr + p2.stderr + p3.stderr)[-300:]
            check(why == "", "recall, float64, learned, tied: 4 + 4 resumed = 8 steps %s" % why)
            p = run(binary, ["train", "--steps", "8", "--checkpoint", two, "--threads", "2"]
                    + base)
            why = same_folders(whole, two) if p.returncode == 0 else p.stderr[-300:]
            check(why == "", "2 threads give the bits of 1 %s" % why)

    with tempfile.TemporaryDirectory() as tmp:
        # the loss falls on the copy task
        log = os.path.join(tmp, "copy.csv")
        p = run(binary, ["train", "--steps", "150", "--eval-every", "50", "--log", log,
                         "--seq-len", "16", "--d-model", "32", "--threads", "1",
                         "--seed", str(seed)])
        if check(p.returncode == 0, "copy: 150 steps (%s)" % p.stderr.strip()[-200:]):
            _, _, rows = rows_of(log)
            first, last = float(rows[0]["eval_loss"]), float(rows[-1]["eval_loss"])
            check(last < 0.8 * first, "copy: held-out loss falls, %.3f -> %.3f" % (first, last))

        # a loss that is not finite: exit 2, one line, the checkpoint there untouched
        ck = os.path.join(tmp, "ck")
        p = run(binary, ["train", "--steps", "5", "--checkpoint", ck] + TINY)
        before = folder_bytes(ck)
        p = run(binary, ["train", "--steps", "50", "--lr", "1e30", "--clip", "0",
                         "--warmup", "0", "--checkpoint", ck] + TINY[:-4])
        check(checks.refused(p) and "not finite" in p.stderr,
              "a diverging run stops with one line: %s" % p.stderr.strip()[:200])
        check(folder_bytes(ck) == before, "its checkpoint folder is as it was")

        # the text task's file
        short = os.path.join(tmp, "short.txt")
        with open(short, "w") as f:
            f.write("x" * 20)
        empty = os.path.join(tmp, "empty.txt")
        open(empty, "w").close()
        for path, what in [(os.path.join(tmp, "missing.txt"), "missing"), (empty, "empty"),
                           (short, "too short")]:
            p = run(binary, ["train", "--task", "text", "--data", path, "--steps", "2"] + TINY)
            check(checks.refused(p), "text: a %s file refused: %s" % (what, p.stderr.strip()))
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write("the quick brown fox jumps over the lazy dog. " * 40)
        p = run(binary, ["train", "--task", "text", "--data", text, "--steps", "5"] + TINY)
        check(p.returncode == 0, "text: 5 steps on a file (%s)" % p.stderr.strip()[-200:])
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
