#!/usr/bin/python3
"""vocabulary.py — one name per kernel and per flag, one list syntax, in every subcommand.

Usage: /usr/bin/python3 tests/command/vocabulary.py BUILD/linattn   (run by `make test`)

The kernel names come from the registry's source (lib/linattn.h, lib/attention/*.c), not from the
command, so a command that spells a kernel its own way fails here:
  1. attend, block, flops and bench take their kernels with --variant (flops also with
     --cross-variant; model's help lists the same names as block's), and accept every
     registry name they run in both spellings (softmax_materialized, softmax-materialized);
     an unknown name, or a kernel the command cannot run, exits 2 with one line;
  2. their help texts list the registry's names, never the '-' spelling; bench's table and
     CSV name kernels and series as the registry does;
  3. the deprecated spellings (attend --kernel, block/flops --attention, bench
     --causal-form) still work, with exactly one line "linattn: warning: X is deprecated,
     use Y", and give the same result as the new spelling;
  4. the numeric sweep flags (bench --n, crossover --n/--d, accuracy --n, block-sweep --n,
     params-sweep --d-model) take V, LO:HI and LO:HI:xF lists and say so in their help; a malformed list exits 2
     with one line naming the flag, before anything is written.

Exits 1 on any failure; the last line is "vocabulary: N passed, N failed".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SWEEP_SYNTAX = "V, LO:HI (doubling) or LO:HI:xF, comma-separated"


def registry():
    """[(name, causal rule)] from the registry's source, in registry order: LA_KERNEL_LIST in
    lib/linattn.h gives the order and each row's symbol, the kernel files under
    lib/attention/ define the rows."""
    with open(os.path.join(ROOT, "lib", "linattn.h")) as f:
        order = re.findall(r"X\(LA_KERNEL_\w+, (la_row_\w+)\)", f.read())
    defined = {}
    folder = os.path.join(ROOT, "lib", "attention")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".c"):
            with open(os.path.join(folder, name)) as f:
                for m in re.finditer(r"const la_kernel_info (la_row_\w+) = \{(.*?)\n\};",
                                     f.read(), re.S):
                    fields = re.search(r'\.name = "([a-z_]+)".*?\.causal = (LA_CAUSAL_[A-Z]+)',
                                       m.group(2), re.S)
                    if fields:
                        defined[m.group(1)] = (fields.group(1), fields.group(2))
    rows = [defined[row] for row in order if row in defined]
    if len(rows) < 5 or len(rows) != len(order):
        sys.exit("vocabulary: cannot read the registry's rows (LA_KERNEL_LIST in lib/linattn.h, "
                 "the rows in lib/attention/*.c)")
    return rows


class Checker:
    def __init__(self, binary):
        self.binary = binary
        self.passed = self.failed = 0
        self.dir = tempfile.mkdtemp(prefix="la_vocabulary_")

    def run(self, args):
        p = subprocess.run([self.binary] + args, capture_output=True, text=True, timeout=600)
        # the timing experiments' busy-machine warning is about the machine, not names
        err = "".join(l for l in p.stderr.splitlines(True)
                      if not l.startswith("linattn: warning: the machine is busy")
                      and not re.match(r"(attend|block|accuracy): input ", l)  # how it read
                      and not l.startswith("["))  # progress lines when stderr is a pipe
        return p.returncode, p.stdout, err

    def check(self, label, problems):
        if problems:
            self.failed += 1
            print("FAIL %s: %s" % (label, "; ".join(problems)))
        else:
            self.passed += 1

    def path(self, name):
        return os.path.join(self.dir, name)

    def works(self, label, args, warning=None):
        """args exit 0; stderr is empty, or exactly the one warning line given."""
        rc, out, err = self.run(args)
        problems = []
        if rc != 0:
            problems.append("exit %d, stderr %r" % (rc, err))
        want = "" if warning is None else "linattn: warning: %s\n" % warning
        if rc == 0 and err != want:
            problems.append("stderr %r, want %r" % (err, want))
        self.check(label, problems)
        return out

    def refused(self, label, args, starts=None):
        """args exit 2 with exactly one line "linattn: ..." (starting with starts)."""
        rc, _, err = self.run(args)
        lines = err.splitlines()
        problems = []
        if rc != 2:
            problems.append("exit %d, want 2" % rc)
        if len(lines) != 1 or not err.endswith("\n") or not lines[0].startswith("linattn: "):
            problems.append("stderr %r, want one line" % err)
        elif starts and not lines[0].startswith("linattn: " + starts):
            problems.append("stderr %r, want 'linattn: %s…'" % (err, starts))
        self.check(label, problems)


def hyphen(name):
    return name.replace("_", "-")


def inputs(c):
    """Small Q, K, V for attend; a layer's weights and X for block (D = 4, d_ff = 8)."""
    rng = np.random.default_rng(7)
    for name in "qkv":
        np.save(c.path(name + ".npy"), rng.standard_normal((2, 6, 4)).astype(np.float32))
    os.mkdir(c.path("layer"))
    shapes = {"self_attn.in_proj_weight": (12, 4), "self_attn.in_proj_bias": (12,),
              "self_attn.out_proj.weight": (4, 4), "self_attn.out_proj.bias": (4,),
              "linear1.weight": (8, 4), "linear1.bias": (8,), "linear2.weight": (4, 8),
              "linear2.bias": (4,), "norm1.weight": (4,), "norm1.bias": (4,),
              "norm2.weight": (4,), "norm2.bias": (4,)}
    for key, shape in shapes.items():
        np.save(c.path("layer/%s.npy" % key), (0.3 * rng.standard_normal(shape)).astype(np.float32))
    np.save(c.path("x.npy"), rng.standard_normal((5, 4)).astype(np.float32))


def kernel_names(c, kernels):
    """1 and 2: every subcommand that chooses kernels, every name, both spellings."""
    attend = ["--q", c.path("q.npy"), "--k", c.path("k.npy"), "--v", c.path("v.npy")]
    block = ["--weights", c.path("layer"), "--x", c.path("x.npy"), "--heads", "2"]
    flops = ["--d-model", "64", "--heads", "2", "--d-ff", "128", "--n", "100"]
    layer = [name for name, rule in kernels if rule == "LA_CAUSAL_ALLOWED"]
    for name, rule in kernels:
        causal = ["--causal"] if rule != "LA_CAUSAL_REFUSED" else []
        # linformer's default rank (256) is above these inputs' M = 6: K must be in 1..M
        params = ["--proj-rank", "3"] if name == "linformer" else []
        for spelling in (name, hyphen(name)):
            out = c.path("y_%s.npy" % spelling)
            c.works("attend --variant %s" % spelling,
                    ["attend", "--variant", spelling, "--out", out] + attend + causal + params)
            if name in layer:
                c.works("block --variant %s" % spelling,
                        ["block", "--variant", spelling, "--out", c.path("b.npy")] + block)
                c.works("flops --variant %s" % spelling, ["flops", "--variant", spelling] + flops)
                c.works("flops --cross-variant %s" % spelling,
                        ["flops", "--layer", "decoder", "--cross-variant", spelling] + flops)
            else:
                c.refused("block refuses %s" % spelling,
                          ["block", "--variant", spelling, "--out", c.path("b.npy")] + block,
                          "--variant: '%s' is not one of %s" % (spelling, ", ".join(layer)))
                c.refused("flops refuses %s" % spelling, ["flops", "--variant", spelling] + flops,
                          "--variant: '%s' is not one of %s" % (spelling, ", ".join(layer)))
                c.refused("flops --cross-variant refuses %s" % spelling,
                          ["flops", "--layer", "decoder", "--cross-variant", spelling] + flops,
                          "--cross-variant: '%s' is not one of %s" % (spelling, ", ".join(layer)))
        # both spellings compute the same thing
        with open(c.path("y_%s.npy" % name), "rb") as a, \
                open(c.path("y_%s.npy" % hyphen(name)), "rb") as b:
            c.check("attend %s = %s" % (name, hyphen(name)),
                    [] if a.read() == b.read() else ["outputs differ"])

    everything = ", ".join(name for name, _ in kernels)
    for bad in ("bilinear", "softmax__materialized", "Softmax", "softmax_", "linear-causal-chunked"):
        c.refused("attend refuses %s" % bad,
                  ["attend", "--variant", bad, "--out", c.path("y.npy")] + attend,
                  "--variant: '%s' is not one of %s" % (bad, everything))
        c.refused("bench refuses %s" % bad, ["bench", "--variant", "linear," + bad],
                  "--variant: '%s' is not one of %s" % (bad, everything))
        c.refused("block refuses %s" % bad,
                  ["block", "--variant", bad, "--out", c.path("b.npy")] + block, "--variant:")
        c.refused("flops refuses %s" % bad, ["flops", "--variant", bad] + flops, "--variant:")
    c.refused("attend: one kernel, not a list",
              ["attend", "--variant", "softmax,linear", "--out", c.path("y.npy")] + attend,
              "--variant: takes one kernel here")
    c.refused("bench: a kernel twice in two spellings",
              ["bench", "--variant", "softmax_materialized,softmax-materialized"], "--variant:")
    c.refused("bench: a causal-only kernel without --causal",
              ["bench", "--variant", [n for n, r in kernels if r == "LA_CAUSAL_REQUIRED"][0]],
              "--variant:")

    # bench: every kernel in a list of each spelling; the table and the CSV name them
    # as the registry does
    small = ["--n", "16", "--heads", "1", "--d", "8", "--reps", "1", "--min-time", "0", "--causal"]
    causal_ok = [n for n, r in kernels if r != "LA_CAUSAL_REFUSED"]
    for spell in (lambda n: n, hyphen):
        listed = ",".join(spell(n) for n in causal_ok)
        table = c.works("bench --variant %s" % listed, ["bench", "--variant", listed] + small)
        rows = [line.split()[0] for line in table.splitlines()
                if line and not line.startswith("#") and line.split()[0] not in ("variant",
                                                                                  "sgemm")]
        c.check("bench table names (%s)" % listed,
                [] if rows == causal_ok else ["variant column %s, want %s" % (rows, causal_ok)])
    csv = c.works("bench --format csv", ["bench", "--format", "csv"] + small)
    lines = [line for line in csv.splitlines() if line and not line.startswith("#")]
    header = lines[0].split(",")
    got = [(r.split(",")[header.index("variant")], r.split(",")[header.index("kernel")])
           for r in lines[1:] if r.split(",")[header.index("variant")] != "sgemm"]
    c.check("bench csv kernel column", [] if [k for _, k in got] == causal_ok
            else ["kernel column %s, want %s" % ([k for _, k in got], causal_ok)])
    c.check("bench csv variant column: series of the registry",
            [] if all(v.startswith(k.split("_")[0]) and "-" not in v for v, k in got)
            else ["variant column %s" % got])

    # help: the registry's names, never the '-' spelling
    for command, names in (("attend", [n for n, _ in kernels]), ("bench", [n for n, _ in kernels]),
                           ("block", layer), ("flops", layer), ("model", layer)):
        rc, text, _ = c.run(["help", command])
        problems = ["exit %d" % rc] if rc else []
        listed = re.findall(r"^  ([a-z_]+)  +\S", text.split("\nkernels (--variant")[-1], re.M)
        if "\nkernels (--variant, from the registry" not in text:
            problems.append("no 'kernels (--variant, from the registry…' heading")
        elif listed[:len(names)] != names:
            problems.append("kernels listed %s, want %s" % (listed, names))
        for name, _ in kernels:
            if "_" in name and hyphen(name) in text:
                problems.append("'%s' spelt %s" % (name, hyphen(name)))
        for line in text.splitlines():
            for old in ("--attention", "--kernel", "--causal-form"):
                if line.startswith("  " + old + " ") and "deprecated" not in line:
                    problems.append("help offers %s without 'deprecated'" % old)
        want = ("  --variant LIST   comma-separated kernels, of those above" if command == "bench"
                else "  --variant K          the kernel, one of those below")
        if want not in text:
            problems.append("no line '%s'" % want.strip())
        c.check("help %s: the registry's names" % command, problems)


def deprecations(c):
    """3: each old spelling works, with exactly one warning line, as the new one does."""
    attend = ["--q", c.path("q.npy"), "--k", c.path("k.npy"), "--v", c.path("v.npy")]
    for family, form, kernel, causal in (("softmax", "materialized", "softmax_materialized", []),
                                         ("softmax", "fused", "softmax", []),
                                         ("linear", "recurrent", "linear_recurrent", ["--causal"]),
                                         ("linear", "chunked", "linear", ["--causal"])):
        old, new = c.path("old.npy"), c.path("new.npy")
        c.works("attend --variant %s --kernel %s" % (family, form),
                ["attend", "--variant", family, "--kernel", form, "--out", old] + attend + causal,
                "--kernel is deprecated, use --variant %s" % kernel)
        c.works("attend --variant %s" % kernel,
                ["attend", "--variant", kernel, "--out", new] + attend + causal)
        with open(old, "rb") as a, open(new, "rb") as b:
            c.check("attend --kernel %s = --variant %s" % (form, kernel),
                    [] if a.read() == b.read() else ["outputs differ"])

    block = ["--weights", c.path("layer"), "--x", c.path("x.npy"), "--heads", "2"]
    c.works("block --attention", ["block", "--attention", "linear", "--out", c.path("old.npy")]
            + block, "--attention is deprecated, use --variant")
    c.works("block --variant", ["block", "--variant", "linear", "--out", c.path("new.npy")] + block)
    with open(c.path("old.npy"), "rb") as a, open(c.path("new.npy"), "rb") as b:
        c.check("block --attention = --variant", [] if a.read() == b.read() else ["differ"])
    c.refused("block --attention and --variant", ["block", "--attention", "linear", "--variant",
                                                  "linear", "--out", c.path("b.npy")] + block)

    flops = ["flops", "--d-model", "64", "--heads", "2", "--d-ff", "128", "--n", "100"]
    old = c.works("flops --attention", flops + ["--attention", "linear"],
                  "--attention is deprecated, use --variant")
    new = c.works("flops --variant", flops + ["--variant", "linear"])
    c.check("flops --attention = --variant", [] if old == new else ["outputs differ"])

    small = ["--n", "16", "--heads", "1", "--d", "8", "--reps", "1", "--min-time", "0", "--causal"]
    table = c.works("bench --causal-form recurrent",
                    ["bench", "--variant", "linear", "--causal-form", "recurrent"] + small,
                    "--causal-form is deprecated, use --variant linear_recurrent")
    rows = [line.split()[0] for line in table.splitlines() if line.startswith("linear")]
    c.check("bench --causal-form recurrent runs linear_recurrent",
            [] if rows == ["linear_recurrent"] else ["rows %s" % rows])
    c.refused("bench --causal-form unknown",
              ["bench", "--causal-form", "flash"] + small, "--causal-form:")


def lists(c):
    """4: the one list syntax, in the help and on the command line."""
    for command, flags in (("bench", ["--n"]), ("crossover", ["--n", "--d"]),
                           ("accuracy", ["--n"]), ("block-sweep", ["--n"]),
                           ("params-sweep", ["--d-model"])):
        rc, text, _ = c.run(["help", command])
        problems = []
        if text.count(SWEEP_SYNTAX) < len(flags):
            problems.append("the list syntax '%s' is not given for %s" % (SWEEP_SYNTAX, flags))
        for flag in flags:
            if not re.search(r"^  %s LIST " % flag, text, re.M):
                problems.append("no '%s LIST' line" % flag)
            if "%s LO:HI" % flag in text:
                problems.append("'%s LO:HI' still in the help" % flag)
        c.check("help %s: the list syntax" % command, problems)

        for flag in flags:
            for bad, why in (("16,,64", "empty item"), ("64:16", "HI is below LO"),
                             ("1:8:x1", "is not a factor"), ("0", "at least 1"),
                             ("abc", "is not a value"), ("99999999999999999999", "too large")):
                out = c.path("never.csv")
                c.refused("%s %s %s" % (command, flag, bad),
                          [command, flag, bad, "--out", out] if command != "bench"
                          else [command, flag, bad], "%s: " % flag)
                c.check("%s %s %s wrote nothing" % (command, flag, bad),
                        ["%s exists" % out] if os.path.exists(out) else [])

    # a list, a range and a factor range in one flag, run for real on tiny sizes
    quick = ["--reps", "1", "--min-time", "0"]
    out = c.path("accuracy.csv")
    c.works("accuracy --n 48,16:32:x2", ["accuracy", "--n", "48,16:32:x2", "--d", "4",
                                         "--heads", "1", "--studies", "error_vs_n", "--out", out])
    with open(out) as f:
        ns = sorted({int(row.split(",")[3]) for row in f if row[0] != "#" and row[0:5] != "study"})
    c.check("accuracy --n 48,16:32:x2 measured N", [] if ns == [16, 32, 48] else ["N %s" % ns])
    out = c.path("block.csv")
    c.works("block-sweep --n 24,8:16", ["block-sweep", "--n", "24,8:16", "--d-model", "8",
                                        "--heads", "2", "--out", out] + quick)
    with open(out) as f:
        ns = [int(row.split(",")[1]) for row in f
              if row[0] != "#" and not row.startswith("attention,") and ",layer," in row]
    c.check("block-sweep --n 24,8:16: increasing N per kernel",
            [] if ns == [8, 16, 24, 8, 16, 24] else ["N %s" % ns])
    out = c.path("crossover.csv")
    c.works("crossover --n 16,32 --d 4:8", ["crossover", "--n", "16,32", "--d", "4:8",
                                            "--heads", "1", "--bisect-steps", "0", "--out", out]
            + quick)
    with open(out) as f:
        ds = sorted({int(row.split(",")[0]) for row in f if row[0] != "#" and row[0] != "d"})
    c.check("crossover --d 4:8 measured d", [] if ds == [4, 8] else ["d %s" % ds])
    out = c.path("params.csv")
    c.works("params-sweep --d-model 128,64:96:x1.5",
            ["params-sweep", "--d-model", "128,64:96:x1.5", "--out", out])
    with open(out) as f:
        ds = [int(row.split(",")[2]) for row in f if row.startswith("sweep,")]
    c.check("params-sweep --d-model 128,64:96:x1.5: sorted", [] if ds == [64, 96, 128]
            else ["D %s" % ds])
    bench = c.works("bench --n 16:32,24", ["bench", "--variant", "linear", "--n", "16:32,24",
                                           "--heads", "1", "--d", "8"] + quick)
    rows = [line.split() for line in bench.splitlines() if line.startswith(("linear", "sgemm"))]
    ns = [int(r[2]) for r in rows if r[0] == "linear"]
    c.check("bench --n 16:32,24 in the order given", [] if ns == [16, 32, 24] else ["N %s" % ns])
    # --reps 1 --min-time 0: one timed run of every point and of the yardstick (the
    # default 0.5 s would give a 16-query point 1000)
    runs = [r[5] for r in rows]
    c.check("bench --reps 1 --min-time 0: one run each", [] if runs == ["1"] * 4
            else ["runs column %s" % runs])


def scaling(c, kernels):
    """scaling, once it has adopted --variant and the list syntax (its own branch): series
    names in both spellings, --variants with one warning, --n as a list. Skipped, and
    said, while its help still shows the old forms."""
    rc, text, _ = c.run(["help", "scaling"])
    quick = ["scaling", "--d", "4", "--heads", "1", "--reps", "1", "--min-time", "0"]
    if re.search(r"^  --variant LIST ", text, re.M):
        for series in ("linear_causal_chunked", "linear-causal-chunked"):
            c.works("scaling --variant %s" % series, quick + ["--n", "16", "--variant", series,
                                                              "--out", c.path("s.csv")])
        c.works("scaling --variants", quick + ["--n", "16", "--variants", "linear", "--out",
                                               c.path("s.csv")],
                "--variants is deprecated, use --variant")
        c.refused("scaling --variant bilinear", quick + ["--variant", "bilinear", "--out",
                                                       c.path("s.csv")], "--variant: 'bilinear'")
    else:
        print("vocabulary: skipped scaling --variant (its help has no '--variant LIST' yet)")
    if SWEEP_SYNTAX in text and re.search(r"^  --n LIST ", text, re.M):
        c.works("scaling --n 16,32", quick + ["--n", "16,32", "--variant" if "--variant LIST"
                                              in text else "--variants", "linear", "--out",
                                              c.path("s.csv")])
        c.refused("scaling --n 64:16", quick + ["--n", "64:16", "--out", c.path("s.csv")],
                  "--n: ")
    else:
        print("vocabulary: skipped scaling --n LIST (its help does not give the list syntax yet)")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    c = Checker(os.path.abspath(sys.argv[1]))
    try:
        inputs(c)
        kernels = registry()
        kernel_names(c, kernels)
        deprecations(c)
        lists(c)
        scaling(c, kernels)
    finally:
        shutil.rmtree(c.dir, ignore_errors=True)
    print("vocabulary: %d passed, %d failed" % (c.passed, c.failed))
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
