#!/usr/bin/python3
"""generate_runs.py — `linattn generate` end to end on checkpoints of tiny `linattn train`
runs: greedy decoding prints N token ids below the vocabulary and exits 0 with one summary
line (tokens/s) on stderr; it is deterministic, and continuing a prompt extended by the first
k generated tokens gives the rest; sampling with --temperature repeats with its --seed;
--precision float64 runs a float32 checkpoint; the text task prints N bytes; a
linear-attention checkpoint decodes on its recurrent state; learned positions take the
prompt and N - 1 more up to --seq-len and refuse one more. The hostile cases exit 2 with
one line: bad flags, a missing checkpoint or a folder that is none, a prompt token outside
the vocabulary, --tokens 0. No run writes a file.

Usage: /usr/bin/python3 tests/command/generate_runs.py BUILD/linattn   (run by `make test`)

Each training run is a model of 16 features and one layer for a few steps: seconds in all.
"""
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  (tests/command/checks.py)

TINY = ["--d-model", "16", "--heads", "2", "--d-ff", "32", "--layers", "1", "--seq-len", "16",
        "--batch", "4", "--threads", "1", "--eval-every", "5", "--warmup", "3", "--steps", "5"]


def listing(root):
    """Every file under root with its size and modification time."""
    out = {}
    for base, _, files in os.walk(root):
        for f in files:
            st = os.stat(os.path.join(base, f))
            out[os.path.join(base, f)] = (st.st_size, st.st_mtime_ns)
    return out


def ids(p):
    """The token ids of a run's stdout, or None when it is not one line of integers."""
    lines = p.stdout.split("\n")
    if len(lines) != 2 or lines[1] != "":
        return None
    try:
        return [int(t) for t in lines[0].split(" ")]
    except ValueError:
        return None


def main():
    binary = checks.binary_arg("generate_runs.py")
    check = checks.Checks("generate_runs")
    seed = checks.seed("generate_runs") % 1000000
    rng = random.Random(seed)
    run = checks.run
    with tempfile.TemporaryDirectory() as tmp:
        copy, linear, learned, text_ck = (os.path.join(tmp, n)
                                          for n in ("copy", "linear", "learned", "text"))
        data = os.path.join(tmp, "text.txt")
        with open(data, "w") as f:
            f.write("the quick brown fox jumps over the lazy dog. " * 40)
        for ck, extra in [(copy, []), (linear, ["--attention", "linear"]),
                          (learned, ["--positions", "learned", "--precision", "float64"]),
                          (text_ck, ["--task", "text", "--data", data])]:
            p = run(binary, ["train", "--checkpoint", ck, "--seed", str(seed)] + TINY + extra)
            check(p.returncode == 0, "train %s (%s)" % (extra, p.stderr.strip()[-200:]))
        before = listing(tmp)

        # greedy on the copy task: N ids below 12, one summary line, deterministic
        prompt = [rng.randrange(1, 11) for _ in range(rng.randrange(1, 6))] + [11]
        text = " ".join(map(str, prompt))
        n = 24  # past --seq-len 16: sinusoidal positions go on
        p = run(binary, ["generate", "--checkpoint", copy, "--prompt", text, "--tokens", str(n)])
        got = ids(p)
        check(p.returncode == 0 and got is not None and len(got) == n
              and all(0 <= t < 12 for t in got),
              "copy: %d ids below 12 (%r, %s)" % (n, p.stdout[:200], p.stderr.strip()))
        check(len(p.stderr.splitlines()) == 1 and "tokens/s" in p.stderr
              and "KV cache" in p.stderr, "copy: one summary line: %s" % p.stderr.strip())
        q = run(binary, ["generate", "--checkpoint", copy, "--prompt", text, "--tokens", str(n),
                         "--threads", "1"])
        check(q.stdout == p.stdout, "copy: greedy decoding repeats: %r vs %r"
              % (q.stdout, p.stdout))
        if got:
            k = rng.randrange(1, n)
            longer = " ".join(map(str, prompt + got[:k]))
            q = run(binary, ["generate", "--checkpoint", copy, "--prompt", longer, "--tokens",
                             str(n - k)])
            check(ids(q) == got[k:], "copy: the prompt and %d generated tokens continue with "
                  "the rest: %s vs %s" % (k, ids(q), got[k:]))

        # sampling repeats with its seed
        sampled = [run(binary, ["generate", "--checkpoint", copy, "--prompt", text, "--tokens",
                                "30", "--temperature", "2", "--seed", s]) for s in ("7", "7")]
        check(all(s.returncode == 0 for s in sampled) and sampled[0].stdout == sampled[1].stdout
              and len(ids(sampled[0]) or []) == 30,
              "copy: sampling with --seed 7 repeats (%s)" % sampled[0].stderr.strip())

        # another precision: the parameters converted
        p = run(binary, ["generate", "--checkpoint", copy, "--prompt", text, "--tokens", "5",
                         "--precision", "float64"])
        check(p.returncode == 0 and len(ids(p) or []) == 5,
              "copy: --precision float64 runs (%s)" % p.stderr.strip())

        # linear attention: the recurrent state
        p = run(binary, ["generate", "--checkpoint", linear, "--prompt", text, "--tokens", "5"])
        check(p.returncode == 0 and len(ids(p) or []) == 5 and "recurrent state" in p.stderr,
              "linear: 5 ids on the recurrent state (%r, %s)" % (p.stdout, p.stderr.strip()))

        # learned positions: prompt + N - 1 <= 16
        p = run(binary, ["generate", "--checkpoint", learned, "--prompt", "1 2 3 11",
                         "--tokens", "13"])
        check(p.returncode == 0 and len(ids(p) or []) == 13,
              "learned: 4 + 13 - 1 = 16 positions run (%s)" % p.stderr.strip())
        p = run(binary, ["generate", "--checkpoint", learned, "--prompt", "1 2 3 11",
                         "--tokens", "14"])
        check.refused(p, "learned: 17 positions")
        check("--tokens" in p.stderr, "learned: the error names --tokens: %s" % p.stderr.strip())

        # the text task: bytes
        t = subprocess.run([binary, "generate", "--checkpoint", text_ck, "--prompt", "the q",
                            "--tokens", "20"], capture_output=True, timeout=300)
        check(t.returncode == 0 and len(t.stdout) == 21 and t.stdout.endswith(b"\n"),
              "text: 20 bytes and a newline (%r, %s)" % (t.stdout, t.stderr.strip()))

        # hostile cases: exit 2, one line
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        before[empty] = None
        base = ["generate", "--checkpoint", copy, "--prompt", text]
        for args, what in [
                (base + ["--tokens", "0"], "--tokens 0"),
                (base + ["--tokens", "x"], "--tokens x"),
                (base, "no --tokens"),
                (["generate", "--checkpoint", copy, "--tokens", "3"], "no --prompt"),
                (["generate", "--prompt", text, "--tokens", "3"], "no --checkpoint"),
                (base + ["--tokens", "3", "--bogus", "1"], "an unknown flag"),
                (base + ["--tokens", "3", "--seed", "1"], "--seed without --temperature"),
                (base + ["--tokens", "3", "--temperature", "-1"], "--temperature -1"),
                (base + ["--tokens", "3", "--threads", "0"], "--threads 0"),
                (base + ["--tokens", "3", "--precision", "half"], "--precision half"),
                (["generate", "--checkpoint", os.path.join(tmp, "missing"), "--prompt", text,
                  "--tokens", "3"], "a missing checkpoint"),
                (["generate", "--checkpoint", empty, "--prompt", text, "--tokens", "3"],
                 "an empty folder"),
                (["generate", "--checkpoint", copy, "--prompt", "1 12", "--tokens", "3"],
                 "token 12 of a vocabulary of 12"),
                (["generate", "--checkpoint", copy, "--prompt", "1 -2", "--tokens", "3"],
                 "token -2"),
                (["generate", "--checkpoint", copy, "--prompt", "1 x", "--tokens", "3"],
                 "a token that is not a number"),
                (["generate", "--checkpoint", copy, "--prompt", "  ", "--tokens", "3"],
                 "no token in the prompt")]:
            p = run(binary, args)
            check.refused(p, what)
            check(p.stdout == "", "%s: nothing on stdout (%r)" % (what, p.stdout[:80]))
        after = listing(tmp)
        before.pop(empty)
        check(after == before, "no run wrote a file: %s" % sorted(set(after.items())
                                                                 ^ set(before.items()))[:4])
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
