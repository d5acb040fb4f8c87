#!/usr/bin/python3
"""params_models.py — `linattn params` end to end: --model gives the published counts (the
table itself is checked against them in test_models.c; here the command's output), a flag
after --model changes one size, the default without --model is one encoder layer, and bad
input is one line and exit 2.

Usage: /usr/bin/python3 tests/command/params_models.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

MODELS = {"transformer-base": 63082496, "transformer-big": 214245376, "bert-base": 109482240,
          "bert-large": 335141888, "gpt2": 124439808, "gpt2-medium": 354823168,
          "gpt2-large": 774030080, "gpt2-xl": 1557611200, "t5-small": 60506624,
          "t5-base": 222903552}


def main():
    binary = checks.binary_arg("params_models.py")
    check = checks.Checks("params_models")

    def run(args):
        return checks.run(binary, ["params"] + args, timeout=60)

    def counts(args):
        proc = run(args + ["--format", "json"])
        if proc.returncode != 0:
            return {}, {}
        doc = json.loads(proc.stdout)
        return doc, doc["parameters"]

    for name, total in MODELS.items():
        doc, p = counts(["--model", name])
        check(p.get("total") == total and doc.get("model") == name,
              "--model %s: %d parameters" % (name, total))
        parts = sum(v for k, v in p.items()
                    if k not in ("total", "approx_12d2", "mha", "ffn", "layer_norm",
                                 "encoder_layer", "decoder_layer"))
        check(parts == total, "--model %s: the components add up to the total" % name)

    _, bert = counts(["--model", "bert-base"])
    check(bert.get("pooler") == 768 * 768 + 768 and bert.get("token_type") == 2 * 768 and
          bert.get("embedding_norm") == 2 * 768, "bert-base: pooler, segments, embedding norm")
    _, t5 = counts(["--model", "t5-small"])
    check(t5.get("mha") == 4 * 512 * 512 and t5.get("layer_norm") == 512 and
          t5.get("relative_position") == 2 * 32 * 8, "t5-small: no biases, RMSNorm, 32 buckets")
    _, gpt = counts(["--model", "gpt2", "--vocab", "50304"])
    check(gpt.get("total") == 124439808 + (50304 - 50257) * 768,
          "--model gpt2 --vocab 50304: the flag changes the vocabulary")

    doc, p = counts(["--d-model", "512", "--heads", "8", "--d-ff", "2048"])
    check(doc.get("encoder_layers") == 1 and doc.get("decoder_layers") == 0 and
          p.get("total") == 3152384 + 1024, "default: one encoder layer (and its final norm)")
    _, p = counts(["--d-model", "512", "--heads", "8", "--d-ff", "2048", "--encoder-layers", "6",
                   "--decoder-layers", "6"])
    check(p.get("total") == 44140544, "6+6 layers: nn.Transformer's 44,140,544")

    helptext = checks.run(binary, ["help", "params"], timeout=None).stdout
    check(all(name in helptext for name in MODELS), "help lists every model")

    for args, what in ((["--model", "gpt3"], "an unknown model"),
                       ([], "no sizes and no model"),
                       (["--model", "gpt2", "--heads", "7"], "heads not dividing D"),
                       (["--model", "gpt2", "--model", "bert-base"], "--model twice")):
        proc = run(args)
        check(checks.refused(proc) and not proc.stdout,
              "%s: exit 2, one line (%s)" % (what, proc.stderr.strip()))

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
