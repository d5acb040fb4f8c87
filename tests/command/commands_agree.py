#!/usr/bin/python3
"""commands_agree.py — the commands speak one language:

  1. every subcommand's help (`linattn help NAME`, the names `linattn help` lists) opens
     with a usage line;
  2. --model NAME describes a published model in params, flops and block-sweep, from the
     one table: flops --model gpt2 counts exactly what flops with GPT-2's sizes and
     --causal counts, block-sweep --model bert-base records BERT's sizes, a misspelt name
     is refused with one line naming the nearest;
  3. a decoder-only model (GPT-2) is reported as decoder-only, an encoder-only one (BERT)
     as encoder-only, never as "N encoder + 0 decoder layers"; params' JSON says which;
  4. a mistyped flag or kernel is refused (exit 2, one line) with "did you mean" the
     nearest name, and a word far from every name gets no guess.
Closed forms and one tiny block-sweep point: about a second.

Usage: /usr/bin/python3 tests/command/commands_agree.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)


def main():
    binary = checks.binary_arg("commands_agree.py")
    check = checks.Checks("commands_agree")

    def run(*args, cwd=None):
        return checks.run(binary, list(args), cwd=cwd)

    # 1. usage lines
    listing = run("help").stdout
    names = re.findall(r"^  ([a-z][a-z-]+)  ", listing, re.M)
    check(len(names) >= 20, "linattn help lists the subcommands (%d)" % len(names))
    for name in names:
        text = run("help", name).stdout
        check(text.startswith("usage: ") and (" linattn %s" % name) in text.splitlines()[0],
              "help %s opens with its usage line (%r)" % (name, text.splitlines()[0][:60]
                                                         if text else ""))

    # 2. --model in params, flops, block-sweep
    def flops_table(*args):
        proc = run("flops", "--format", "csv", *args)
        check(proc.returncode == 0, "flops %s: exit 0 (%s)" % (" ".join(args), proc.stderr.strip()))
        return {r.split(",")[0]: r for r in proc.stdout.splitlines()[1:]}

    preset = flops_table("--model", "gpt2", "--n", "1024")
    explicit = flops_table("--d-model", "768", "--heads", "12", "--d-ff", "3072", "--n", "1024",
                           "--causal")
    check(preset == explicit and "total" in preset,
          "flops --model gpt2 counts what GPT-2's sizes with --causal count")
    changed = flops_table("--model", "gpt2", "--n", "1024", "--d-model", "384", "--heads", "6")
    check(changed != preset, "a size flag after --model changes that size")
    params = json.loads(run("params", "--model", "gpt2", "--format", "json").stdout)
    check(params["d_model"] == 768 and params["heads"] == 12 and params["d_ff"] == 3072,
          "params --model gpt2: GPT-2's sizes")
    with tempfile.TemporaryDirectory() as tmp:
        proc = run("block-sweep", "--model", "bert-base", "--n", "16", "--reps", "1",
                   "--min-time", "0", "--out", "b.csv", cwd=tmp)
        check(proc.returncode == 0, "block-sweep --model bert-base: exit 0 (%s)"
              % (proc.stderr.strip()[-200:] if proc.returncode else ""))
        rows = checks.parse_results(open(os.path.join(tmp, "b.csv")).read())[2] \
            if proc.returncode == 0 else []
        check(rows and all((r["d_model"], r["heads"], r["d_ff"]) == ("768", "12", "3072")
                           for r in rows),
              "block-sweep --model bert-base records D = 768, H = 12, d_ff = 3072")
    for command in (["params"], ["flops", "--n", "8"], ["block-sweep", "--n", "16"]):
        proc = run(*command, "--model", "gpt2-mediun")
        check.refused(proc, "%s --model gpt2-mediun" % command[0])
        check("did you mean gpt2-medium?" in proc.stderr,
              "%s --model gpt2-mediun names gpt2-medium" % command[0])

    # 3. decoder-only and encoder-only
    gpt2 = run("params", "--model", "gpt2").stdout
    check("12 decoder-only layers" in gpt2 and "0 decoder" not in gpt2,
          "params --model gpt2 says decoder-only (%s)" % gpt2.splitlines()[1][:90])
    bert = run("params", "--model", "bert-base").stdout
    check("12 encoder layers (encoder-only)" in bert and "0 decoder" not in bert,
          "params --model bert-base says encoder-only")
    check(params.get("stack") == "decoder-only", "params JSON: stack decoder-only")
    t5 = json.loads(run("params", "--model", "t5-small", "--format", "json").stdout)
    check(t5.get("stack") == "encoder-decoder", "params JSON: t5-small encoder-decoder")
    check("decoder-only" in run("flops", "--model", "gpt2", "--n", "8").stdout,
          "flops --model gpt2 says decoder-only")
    with tempfile.TemporaryDirectory() as tmp:
        proc = run("block-sweep", "--model", "gpt2", "--n", "16", "--reps", "1", "--min-time",
                   "0", "--out", "g.csv", cwd=tmp)
        said = [l for l in proc.stdout.splitlines() if l.startswith("block-sweep: model: ")]
        head = [l for l in open(os.path.join(tmp, "g.csv")) if l.startswith("# model: ")] \
            if proc.returncode == 0 else []
        check(len(said) == 1 and "gpt2 (decoder-only)" in said[0] and "encoder layer" in said[0]
              and len(head) == 1 and head[0][2:].strip() == said[0][len("block-sweep: "):],
              "block-sweep --model gpt2 says decoder-only, and that an encoder layer of its "
              "sizes is timed, on stdout and in # model (%s)" % said)

    # 4. did you mean
    for args, wanted in ((["scaling", "--wndow", "3"], "did you mean --window?"),
                         (["attend", "--varient", "linear"], "did you mean --variant?"),
                         (["attend", "--variant", "softmx", "--q", "q", "--k", "k", "--v", "v",
                           "--out", "y"], "did you mean softmax?"),
                         (["bench", "--variant", "lineer"], "did you mean linear?"),
                         (["scaling", "--variant", "linear_causal_chunkd"],
                          "did you mean linear_causal_chunked?"),
                         (["flops", "--d-model", "8", "--heads", "1", "--d-ff", "8", "--n", "8",
                           "--variant", "linear", "--feature-map", "elo"], "did you mean elu?")):
        proc = run(*args)
        check.refused(proc, " ".join(args))
        check(wanted in proc.stderr, "%s: %s (%s)" % (" ".join(args), wanted, proc.stderr.strip()))
    for args in (["scaling", "--zzzzzz", "3"], ["bench", "--variant", "qqqqqq"]):
        proc = run(*args)
        check.refused(proc, " ".join(args))
        check("did you mean" not in proc.stderr, "%s: no guess for a far word" % " ".join(args))
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
