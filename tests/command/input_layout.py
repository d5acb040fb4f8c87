#!/usr/bin/python3
"""input_layout.py — the command says how it read its input, and reads (B, N, H, d) too:

  1. attend, block and accuracy print, on success, one stderr line giving B, H, N, M,
     d_k, d_v, the precision and the layout;
  2. attend --layout bnhd on (B, N, H, d) arrays gives bit for bit the output of the
     default layout on the same arrays transposed to (B, H, N, d), written back as
     (B, N, H, d_v): float32 and float64, N != M, causal, 4-D and 3-D (N, H, d);
  3. PyTorch-style (2, 256, 4, 32) arrays read in the default layout are reported as
     H = 256 heads of N = 4 tokens (the trap is visible), and as H = 4, N = 256 with bnhd;
  4. accuracy --layout bnhd reads the same arrays as the default layout does their
     transposes (the same errors, the # inputs line says which layout);
  5. a bad --layout value, --layout bnhd with --grad-*, accuracy --layout without --q and
     block --layout (its X has no head axis) are refused with one line saying why; a
     failed run prints no layout line.
Fresh random inputs (seed printed; LA_TEST_SEED replays); small arrays: about a second.

Usage: /usr/bin/python3 tests/command/input_layout.py BUILD/linattn   (run by `make test`)
Exit status 1 when a check fails.
"""
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)

LINE = re.compile(r"^(attend|block|accuracy): input B=(\d+) H=(\d+) N=(\d+) M=(\d+) "
                  r"d_k=(\d+) d_v=(\d+), (float32|float64)[^,]*, layout (\S+)")


def input_line(stderr, command):
    """The one input line of stderr (its fields), or None when there is not exactly one."""
    lines = [l for l in stderr.splitlines() if l.startswith(command + ": input ")]
    if len(lines) != 1:
        return None
    m = LINE.match(lines[0])
    return m.groups() if m else None


def main():
    binary = checks.binary_arg("input_layout.py")
    check = checks.Checks("input_layout")
    rng = np.random.default_rng(checks.seed("input_layout"))

    with tempfile.TemporaryDirectory() as tmp:
        def path(name):
            return os.path.join(tmp, name)

        def run(*args):
            return checks.run(binary, list(args), cwd=tmp)

        def attend(prefix, layout, extra=()):
            args = ["attend", "--variant", "softmax", "--causal", "--q", prefix + "q.npy",
                    "--k", prefix + "k.npy", "--v", prefix + "v.npy", "--out", prefix + "y.npy"]
            if layout:
                args += ["--layout", layout]
            return run(*(args + list(extra)))

        # 2. bnhd against bhnd, bit for bit
        for dtype, shape_q, shape_k, d_v in ((np.float32, (2, 37, 3, 8), (2, 29, 3, 8), 5),
                                             (np.float64, (2, 37, 3, 8), (2, 29, 3, 8), 5),
                                             (np.float32, (41, 2, 16), (23, 2, 16), 16)):
            q = rng.standard_normal(shape_q).astype(dtype)
            k = rng.standard_normal(shape_k).astype(dtype)
            v = rng.standard_normal(shape_k[:-1] + (d_v,)).astype(dtype)
            axes = (0, 2, 1, 3) if q.ndim == 4 else (1, 0, 2)
            for name, a in (("q", q), ("k", k), ("v", v)):
                np.save(path("n_" + name + ".npy"), a)
                np.save(path("h_" + name + ".npy"), np.ascontiguousarray(a.transpose(axes)))
            prec = ["--precision", "float64"] if dtype == np.float64 else []
            pn, ph = attend("n_", "bnhd", prec), attend("h_", None, prec)
            what = "%s q %s" % (np.dtype(dtype).name, shape_q)
            check(pn.returncode == 0 and ph.returncode == 0,
                  "%s: both layouts exit 0 (%s %s)" % (what, pn.stderr.strip(), ph.stderr.strip()))
            if pn.returncode == 0 and ph.returncode == 0:
                yn, yh = np.load(path("n_y.npy")), np.load(path("h_y.npy"))
                check(yn.shape == shape_q[:-1] + (d_v,),
                      "%s: bnhd output is (…, N, H, d_v): %s" % (what, yn.shape))
                check(np.array_equal(yn, yh.transpose(axes)),
                      "%s: bnhd output equals the bhnd output transposed, bit for bit" % what)
                heads, n, m = shape_q[-2], shape_q[-3], shape_k[-3]
                got = input_line(pn.stderr, "attend")
                want = (str(shape_q[0] if q.ndim == 4 else 1), str(heads), str(n), str(m),
                        str(shape_q[-1]), str(d_v), np.dtype(dtype).name)
                check(got is not None and got[1:8] == want and got[8] == "bnhd",
                      "%s: the input line says B H N M d_k d_v dtype bnhd (%s)" % (what, got))
                got = input_line(ph.stderr, "attend")
                check(got is not None and got[8] == "bhnd", "%s: default layout bhnd" % what)

        # 3. the trap made visible
        q = rng.standard_normal((2, 256, 4, 32)).astype(np.float32)
        for name in "qkv":
            np.save(path("t_" + name + ".npy"), q)
        got = input_line(attend("t_", None).stderr, "attend")
        check(got is not None and (got[2], got[3]) == ("256", "4"),
              "(2, 256, 4, 32) read as bhnd: reported H = 256, N = 4 (%s)" % (got,))
        got = input_line(attend("t_", "bnhd").stderr, "attend")
        check(got is not None and (got[2], got[3]) == ("4", "256"),
              "(2, 256, 4, 32) read as bnhd: reported H = 4, N = 256 (%s)" % (got,))

        # 1. block's line
        d, heads, dff = 16, 4, 32
        layer = path("layer")
        os.makedirs(layer)
        w = {"self_attn.in_proj_weight": (3 * d, d), "self_attn.in_proj_bias": (3 * d,),
             "self_attn.out_proj.weight": (d, d), "self_attn.out_proj.bias": (d,),
             "linear1.weight": (dff, d), "linear1.bias": (dff,), "linear2.weight": (d, dff),
             "linear2.bias": (d,), "norm1.weight": (d,), "norm1.bias": (d,),
             "norm2.weight": (d,), "norm2.bias": (d,)}
        for key, shape in w.items():
            np.save(os.path.join(layer, key + ".npy"), (0.2 * rng.standard_normal(shape))
                    .astype(np.float32))
        np.save(path("x.npy"), rng.standard_normal((3, 11, d)).astype(np.float32))
        proc = run("block", "--weights", layer, "--x", "x.npy", "--out", "bx.npy", "--heads",
                   str(heads))
        got = input_line(proc.stderr, "block")
        check(proc.returncode == 0 and got is not None and
              got[1:8] == ("3", "4", "11", "11", "4", "4", "float32"),
              "block: one input line B=3 H=4 N=11 M=11 d_k=d_v=4 float32 (%s)" % (got,))

        # 4. accuracy, both layouts
        a = rng.standard_normal((1, 64, 2, 8)).astype(np.float32)
        np.save(path("a_n.npy"), a)
        np.save(path("a_h.npy"), np.ascontiguousarray(a.transpose(0, 2, 1, 3)))
        base = ["accuracy", "--n", "32,64", "--studies", "error_vs_n"]
        pn = run(*(base + ["--q", "a_n.npy", "--k", "a_n.npy", "--v", "a_n.npy", "--layout",
                           "bnhd", "--out", "an.csv"]))
        ph = run(*(base + ["--q", "a_h.npy", "--k", "a_h.npy", "--v", "a_h.npy",
                           "--out", "ah.csv"]))
        check(pn.returncode == 0 and ph.returncode == 0, "accuracy: both layouts exit 0 (%s)"
              % (pn.stderr.strip()[-200:] if pn.returncode else
                 ph.stderr.strip()[-200:] if ph.returncode else ""))
        if pn.returncode == 0 and ph.returncode == 0:
            mn, _, rn = checks.parse_results(open(path("an.csv")).read())
            mh, _, rh = checks.parse_results(open(path("ah.csv")).read())
            err = lambda rows: [(r.get("series"), r.get("n"), r.get("rel_error")) for r in rows]
            check(rn and err(rn) == err(rh), "accuracy: bnhd errors equal bhnd on the transposes")
            check(any("layout bnhd" in l for l in mn if l.startswith("# inputs")) and
                  any("layout bhnd" in l for l in mh if l.startswith("# inputs")),
                  "accuracy: the # inputs line names the layout")
            got = input_line(pn.stderr, "accuracy")
            check(got is not None and got[1:4] == ("1", "2", "64") and got[8] == "bnhd",
                  "accuracy: one input line, B=1 H=2 N=64, bnhd (%s)" % (got,))
        proc = run("accuracy", "--n", "16", "--studies", "chunk", "--fixed-n", "16", "--out",
                   "ar.csv")
        got = input_line(proc.stderr, "accuracy")
        check(proc.returncode == 0 and got is not None, "accuracy, random inputs: one input line")

        # 5. refusals
        proc = attend("h_", "bhdn")
        check.refused(proc, "--layout bhdn")
        check("did you mean" in proc.stderr, "--layout bhdn: did you mean (%s)" % proc.stderr)
        np.save(path("h_do.npy"), np.load(path("h_y.npy")))
        check.refused(attend("h_", "bnhd", ["--grad-out", "h_do.npy", "--grad-q", "gq.npy",
                                            "--grad-k", "gk.npy", "--grad-v", "gv.npy"]),
                      "--layout bnhd with --grad-*")
        check.refused(run("accuracy", "--layout", "bnhd"), "accuracy --layout without --q")
        proc = run("block", "--layout", "bnhd", "--weights", "w", "--x", "x.npy", "--out",
                   "by.npy", "--heads", "2")
        check.refused(proc, "block --layout: X has no head axis")
        check("no head axis" in proc.stderr and "unknown flag" not in proc.stderr,
              "block --layout says why (%s)" % proc.stderr.strip())
        proc = run("attend", "--variant", "softmax", "--q", "n_q.npy", "--k", "a_n.npy",
                   "--v", "n_v.npy", "--out", "bad.npy", "--layout", "bnhd")
        check.refused(proc, "attend --layout bnhd with shapes that disagree")
        check(not os.path.exists(path("bad.npy")), "no output after the refusal")
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
