#!/usr/bin/python3
"""data_numpy.py — the user's own data in `linattn`: attend --save-weights, float16 and
bfloat16 inputs, and --q/--k/--v in accuracy, bench and scaling.

Usage: /usr/bin/python3 tests/command/data_numpy.py BUILD/linattn   (run by `make test`)

Part 1, the attention matrix: `attend --save-weights W.npy` for softmax (fused and
materialized), hard and linear (elu and relu; non-causal, chunked and recurrent causal)
with key lengths and M != N, against an independent float64 NumPy computation of the
weights (< 1e-5 in float32, < 1e-12 in float64; hard exactly), and W·V against Y.
Part 2, half precision: float16 ('<f2') and bfloat16 ('|V2' as NumPy writes a V2 view,
'<V2' as ml_dtypes' bfloat16 is saved) inputs give bit for bit the output of the same
values saved as float32.
Part 3, the experiments on user arrays: accuracy, bench and scaling run on --q/--k/--v
prefixes and record "# inputs: q.npy k.npy v.npy ..." (random runs: "# inputs: random
(seed N)").
Part 4, bad inputs: each exits 2 with exactly one stderr line "linattn: ..." and writes
no file.

Inputs are random with a printed seed; LA_TEST_SEED=N replays a run. Exits 1 on any
failure; the last line is "data_numpy: N passed, N failed".
"""
import html
import os
import re
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)
from attend_numpy import phi, rel_error  # noqa: E402  (the same φ and error as attend's)
from attend_numpy import (favor_features, ref_favor, ref_hard, ref_linear,  # noqa: E402
                          ref_local, ref_softmax, ref_taylor)

DEFAULT_EPS = 1e-6  # LA_DEFAULT_EPS
TOL = {"float32": 1e-5, "float64": 1e-12}


class Run(checks.Cases):
    def cmd(self, args):
        """the command with ARGS in the work folder, on 2 threads: (exit, stdout, stderr)"""
        proc = checks.run(self.binary, args, cwd=self.dir,
                          env=dict(os.environ, LA_NUM_THREADS="2"))
        return proc.returncode, proc.stdout, proc.stderr

    def save(self, name, array):
        path = self.path(name)
        np.save(path, array)
        return path


# ---------------------------------------------------------------- the reference


def key_mask(b, n, m, causal, lengths):
    """(B, 1, N, M) boolean: key j visible to query i of batch entry b."""
    j = np.arange(m)[None, None, :]
    visible = np.ones((b, n, m), bool)
    if lengths is not None:
        visible &= j < np.asarray(lengths)[:, None, None]
    if causal:
        visible &= j <= np.arange(n)[None, :, None]
    return visible[:, None]


def ref_weights(variant, q, k, causal, lengths, scale=None, feature_map="elu",
                eps=DEFAULT_EPS):
    """The normalised attention matrix (B, H, N, M) in float64 from its definition."""
    b, h, n, d = q.shape
    m = k.shape[2]
    mask = np.broadcast_to(key_mask(b, n, m, causal, lengths), (b, h, n, m))
    if variant == "linear":
        num = np.where(mask, np.einsum("bhnd,bhmd->bhnm", phi(q, feature_map),
                                       phi(k, feature_map)), 0.0)
        den = num.sum(axis=-1, keepdims=True) + eps
        return np.divide(num, den, out=np.zeros_like(num), where=den != 0)
    scale = 1 / np.sqrt(d) if scale is None else scale
    s = np.where(mask, np.einsum("bhnd,bhmd->bhnm", q, k) * scale, -np.inf)
    if variant == "hard":
        w = np.zeros_like(s)
        best = s.argmax(axis=-1)[..., None]
        np.put_along_axis(w, best, 1.0, axis=-1)
        return np.where(mask.any(axis=-1, keepdims=True), w, 0.0)
    mx = s.max(axis=-1, keepdims=True)
    mx = np.where(np.isfinite(mx), mx, 0.0)
    e = np.where(mask, np.exp(s - mx), 0.0)
    tot = e.sum(axis=-1, keepdims=True)
    return np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)


# ---------------------------------------------------------------- part 1: weights


def save_weights(run):
    rng = run.rng
    b, h, n, m, dk, dv = 2, 2, 23, 17, 8, 5
    q = rng.standard_normal((b, h, n, dk)).astype(np.float32)
    k = rng.standard_normal((b, h, m, dk)).astype(np.float32)
    v = rng.standard_normal((b, h, m, dv)).astype(np.float32)
    q_hard = (np.round(q * 4) / 8).astype(np.float32)  # exact scores: true ties only
    k_hard = (np.round(k * 4) / 8).astype(np.float32)
    lengths = np.array([m, 6], np.int64)
    paths = {name: run.save(name + ".npy", x) for name, x in
             (("q", q), ("k", k), ("v", v), ("qh", q_hard), ("kh", k_hard),
              ("lengths", lengths))}
    cases = []
    for causal in (False, True):
        cases += [(causal, "softmax", [], {}),
                  (causal, "softmax", ["--kernel", "materialized"], {}),
                  (causal, "hard", ["--scale", "0.125"], {"scale": 0.125}),
                  (causal, "linear", [], {}),
                  (causal, "linear", ["--feature-map", "relu", "--eps", "0"],
                   {"feature_map": "relu", "eps": 0.0})]
    cases.append((True, "linear", ["--kernel", "recurrent"], {}))
    for causal, variant, flags, params in cases:
        for precision in ("float32", "float64"):
            for with_lengths in (False, True):
                label = "weights %s %s%s %s%s" % (variant, " ".join(flags),
                                                 " causal" if causal else "", precision,
                                                 " lengths" if with_lengths else "")
                qp, kp = (paths["qh"], paths["kh"]) if variant == "hard" else \
                    (paths["q"], paths["k"])
                args = ["attend", "--variant", variant, "--q", qp, "--k", kp,
                        "--v", paths["v"], "--out", run.path("y.npy"),
                        "--save-weights", run.path("w.npy"), "--precision", precision]
                args += flags + (["--causal"] if causal else [])
                args += ["--key-lengths", paths["lengths"]] if with_lengths else []
                for f in ("y.npy", "w.npy"):
                    if os.path.exists(run.path(f)):
                        os.remove(run.path(f))
                rc, _, err = run.cmd(args)
                if rc != 0:
                    run.fail(label, "exit %d: %s" % (rc, err.strip()))
                    continue
                w = np.load(run.path("w.npy"))
                y = np.load(run.path("y.npy"))
                want_dtype = np.float32 if precision == "float32" else np.float64
                if w.dtype != want_dtype or w.shape != (b, h, n, m):
                    run.fail(label, "weights %s %s" % (w.dtype, w.shape))
                    continue
                qq = (q_hard if variant == "hard" else q).astype(np.float64)
                kk = (k_hard if variant == "hard" else k).astype(np.float64)
                ref = ref_weights(variant, qq, kk, causal,
                                  lengths if with_lengths else None, **params)
                if variant == "hard":
                    err_w = 0.0 if np.array_equal(w, ref) else np.inf
                else:
                    err_w = rel_error(w.astype(np.float64), ref)
                run.check(err_w < TOL[precision], label,
                          "weights relative error %.3g" % err_w)
                err_y = rel_error(w.astype(np.float64) @ v.astype(np.float64),
                                  y.astype(np.float64))
                run.check(err_y < TOL[precision], label + " W·V = Y",
                          "relative error %.3g" % err_y)
                hidden = ~np.broadcast_to(key_mask(b, n, m, causal,
                                                   lengths if with_lengths else None),
                                          w.shape)
                run.check(np.all(w[hidden] == 0), label + " hidden entries 0",
                          "a hidden entry is %g" % np.abs(w[hidden]).max(initial=0))
    # (N, d) inputs give an (N, M) matrix
    rc, _, err = run.cmd(["attend", "--variant", "softmax", "--q", run.save("q2.npy", q[0, 0]),
                          "--k", run.save("k2.npy", k[0, 0]), "--v", run.save("v2.npy", v[0, 0]),
                          "--out", run.path("y2.npy"), "--save-weights", run.path("w2.npy")])
    shape = np.load(run.path("w2.npy")).shape if rc == 0 else None
    run.check(shape == (n, m), "weights of (N, d) inputs", "exit %d, shape %s: %s"
              % (rc, shape, err.strip()))


# ---------------------------------------------------------------- part 2: half precision


def bfloat16_bits(x):
    """float32 -> bfloat16 bits (uint16), rounding to nearest even."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).astype(np.uint16)


def half_precision(run):
    rng = run.rng
    q = rng.standard_normal((3, 19, 8)) * 2
    k = rng.standard_normal((3, 21, 8)) * 2
    v = rng.standard_normal((3, 21, 6))
    q[0, 0, :4] = [1e-6, -3e-7, 65504, 0]  # float16 subnormals and its largest value
    k[0, 0, :2] = [2e-38, -1e-39]  # bfloat16 subnormals
    for kind in ("float16", "bfloat16 |V2", "bfloat16 <V2"):
        if kind == "float16":
            files = {n: run.save(n + "_h.npy", x.astype(np.float16)) for n, x in
                     (("q", q), ("k", k), ("v", v))}
            wide = {n: x.astype(np.float16).astype(np.float32) for n, x in
                    (("q", q), ("k", k), ("v", v))}
        else:
            files, wide = {}, {}
            for n, x in (("q", q), ("k", k), ("v", v)):
                bits = bfloat16_bits(x)
                path = run.save(n + "_b.npy", bits.view("V2"))  # descr '|V2'
                if kind.endswith("<V2"):  # the descr ml_dtypes' bfloat16 is saved with
                    with open(path, "rb") as f:
                        data = f.read()
                    assert b"'|V2'" in data[:128]
                    with open(path, "wb") as f:
                        f.write(data.replace(b"'|V2'", b"'<V2'", 1))
                files[n] = path
                wide[n] = (bits.astype(np.uint32) << 16).view(np.float32)
        f32 = {n: run.save(n + "_f32.npy", x) for n, x in wide.items()}
        for variant in ("softmax", "linear", "hard"):
            for precision in ("float32", "float64"):
                label = "%s inputs, %s, %s" % (kind, variant, precision)
                common = ["attend", "--variant", variant, "--precision", precision, "--causal"]
                rc1, _, e1 = run.cmd(common + ["--q", files["q"], "--k", files["k"], "--v",
                                               files["v"], "--out", run.path("y_half.npy")])
                rc2, _, e2 = run.cmd(common + ["--q", f32["q"], "--k", f32["k"], "--v", f32["v"],
                                               "--out", run.path("y_f32.npy")])
                if rc1 or rc2:
                    run.fail(label, "exit %d/%d: %s %s" % (rc1, rc2, e1.strip(), e2.strip()))
                    continue
                a, b = np.load(run.path("y_half.npy")), np.load(run.path("y_f32.npy"))
                run.check(a.dtype == b.dtype and np.array_equal(a, b), label,
                          "differs from the float32-converted inputs (max %g)"
                          % np.abs(a.astype(np.float64) - b).max())


# ---------------------------------------------------------------- part 3: experiments


def meta(text, key):
    for line in text.splitlines():
        if line.startswith("# %s:" % key):
            return line
    return None


def accuracy_distance(run, rows, text, q, k, v):
    """accuracy's distance study on the user's arrays: every approximating variant at its
    default budget against softmax, RMS(y − y_softmax) / RMS(v) as NumPy computes it on
    the first N = 64 queries and keys (the values as read: float32)."""
    if not rows:
        return
    header = rows[0]
    got = {r[header.index("variant")]: dict(zip(header, r)) for r in rows[1:]
           if r[header.index("study")] == "distance" and r[header.index("n")] == "64"}
    run.check((meta(text, "error") or "").startswith("# error: rel_error is ||y - y_ref||"),
              "accuracy: the # error line says which scale each row uses", meta(text, "error"))
    n, dk = 64, q.shape[-1]
    qh, kh, vh = (x.astype(np.float32).astype(np.float64)[None, :, :n] for x in (q, k, v))
    scale = 1 / np.sqrt(dk)
    exact = ref_softmax(qh, kh, vh, scale, False, None)
    want = {"hard": ("none", 0, ref_hard(qh, kh, vh, scale, False, None)),
            "linear": ("none", 0, ref_linear(qh, kh, vh, "elu", DEFAULT_EPS, False, None)),
            "taylor": ("none", 0, ref_taylor(qh, kh, vh, scale, DEFAULT_EPS, False, None)),
            "local": ("window", 64, ref_local(qh, kh, vh, scale, False, None, 64)),
            "favor": ("features", 256, ref_favor(qh, kh, vh, favor_features(256, dk, 1),
                                                 DEFAULT_EPS, False, None))}
    rms_v = np.sqrt(np.mean(vh ** 2))
    run.check(set(got) == set(want) | {"linformer"},
              "accuracy distance: every approximating variant", sorted(got))
    for name, (budget_name, budget, y) in want.items():
        r = got.get(name, {})
        expect = np.sqrt(np.mean((y - exact) ** 2)) / rms_v
        ok = (r.get("status") == "ok" and r.get("error_scale") == "rms_v" and
              (r.get("budget_name"), r.get("budget")) == (budget_name, str(budget)) and
              abs(float(r["rel_error"]) - expect) <= 1e-5 * expect + 1e-15)
        run.check(ok, "accuracy distance %s: RMS(y - y_softmax) / RMS(v)" % name,
                  "row %s, NumPy %.6g" % (r, expect))
    r = got.get("linformer", {})
    run.check(r.get("status") == "skipped_rank" and r.get("budget") == "256",
              "accuracy distance linformer: rank 256 above N = 64, skipped", r)
    # the figure: the scale on the axis, each variant's budget in its legend title
    if not shutil.which("gnuplot"):
        run.check(False, "gnuplot is missing (make deps, or apt-get install gnuplot-nox)", "")
        return
    rc, out, err = run.cmd(["plot", "--from", "acc.csv", "--out", "fig", "--format", "svg"])
    svg = run.path(os.path.join("fig", "accuracy_distance.svg"))
    text = re.sub(r"<[^>]*>", "", html.unescape(open(svg, encoding="utf-8").read())) \
        if rc == 0 and os.path.exists(svg) else ""
    run.check(all(t in text for t in ("RMS(v)", "local (r = 64)", "favor (m = 256)",
                                      "linformer (k = 256)", "your arrays")),
              "accuracy_distance.svg: the scale, the budgets and the inputs named",
              "exit %d: %s" % (rc, err.strip()[-200:]))


def experiments(run):
    rng = run.rng
    q = rng.standard_normal((2, 96, 16)).astype(np.float16)
    k = rng.standard_normal((2, 96, 16)).astype(np.float32)
    v = rng.standard_normal((2, 96, 16))
    for n, x in (("q", q), ("k", k), ("v", v)):
        run.save(n + ".npy", x)
    files = ["--q", "q.npy", "--k", "k.npy", "--v", "v.npy"]
    want = "# inputs: q.npy k.npy v.npy (B=1 H=2 N=96 M=96 d_k=16 d_v=16"

    rc, out, err = run.cmd(["accuracy", "--n", "16:64", "--fixed-n", "40", "--out",
                            "acc.csv"] + files)
    text = open(run.path("acc.csv")).read() if rc == 0 else ""
    rows = [r.split(",") for r in text.splitlines() if r and not r.startswith("#")]
    inputs = {r[2] for r in rows[1:]}
    ns = {int(r[3]) for r in rows[1:]}
    run.check(rc == 0 and (meta(text, "inputs") or "").startswith(want) and inputs == {"user"}
              and ns <= {16, 32, 40, 64}, "accuracy --q/--k/--v",
              "exit %d, inputs %s, column %s, N %s: %s" % (rc, meta(text, "inputs"), inputs,
                                                           sorted(ns), err.strip()))
    accuracy_distance(run, rows, text, q, k, v)

    rc, out, err = run.cmd(["bench", "--variant", "softmax,linear", "--n", "32,96", "--reps",
                            "1", "--min-time", "0", "--format", "csv"] + files)
    lines = [r.split(",") for r in out.splitlines() if r and not r.startswith("#")]
    points = {(r[0], r[3], r[4], r[5], r[7]) for r in lines[1:] if r[0] != "sgemm"}
    run.check(rc == 0 and (meta(out, "inputs") or "").startswith(want) and
              points == {(s, n, n, "16", "2") for s in ("softmax", "linear")
                         for n in ("32", "96")},
              "bench --q/--k/--v", "exit %d, %s, points %s: %s"
              % (rc, meta(out, "inputs"), sorted(points), err.strip()))

    rc, out, err = run.cmd(["scaling", "--n", "16:64", "--variant", "softmax,linear", "--reps",
                            "1", "--min-time", "0", "--out", "sc.csv"] + files)
    text = open(run.path("sc.csv")).read() if rc == 0 else ""
    rows = [r.split(",") for r in text.splitlines() if r and not r.startswith("#")]
    shapes = {(r[1], r[2], r[4], r[5], r[7]) for r in rows[1:]}
    run.check(rc == 0 and (meta(text, "inputs") or "").startswith(want) and
              shapes == {(n, "16", "2", "1", "ok") for n in ("16", "32", "64")},
              "scaling --q/--k/--v", "exit %d, %s, rows %s: %s"
              % (rc, meta(text, "inputs"), sorted(shapes), err.strip()))
    # without --n the default range is clipped to the arrays' 96 tokens
    rc, out, err = run.cmd(["scaling", "--variant", "linear", "--reps", "1", "--min-time", "0",
                            "--out", "sc2.csv"] + files)
    text = open(run.path("sc2.csv")).read() if rc == 0 else ""
    ns = {r.split(",")[1] for r in text.splitlines()[1:] if r and r[0] != "#"} - {"n"}
    run.check(rc == 0 and ns == {"96"}, "scaling --q/--k/--v, default N clipped",
              "exit %d, N %s: %s" % (rc, sorted(ns), err.strip()))
    # random inputs say so, with the seed
    rc, out, err = run.cmd(["scaling", "--n", "16:16", "--variant", "linear", "--reps", "1",
                            "--min-time", "0", "--seed", "7", "--out", "sc3.csv"])
    text = open(run.path("sc3.csv")).read() if rc == 0 else ""
    run.check(rc == 0 and meta(text, "inputs") == "# inputs: random (seed 7)",
              "scaling random inputs recorded", "exit %d, %s: %s" % (rc, meta(text, "inputs"),
                                                                   err.strip()))


# ---------------------------------------------------------------- part 4: bad inputs


def bad_inputs(run):
    rng = run.rng
    q = rng.standard_normal((2, 12, 4)).astype(np.float32)
    good = {n: run.save("g" + n + ".npy", x) for n, x in
            (("q", q), ("k", q), ("v", q))}
    odd = {
        "k_wrong_d": run.save("k_wrong_d.npy", np.zeros((2, 12, 5), np.float32)),
        "v_dv": run.save("v_dv.npy", np.zeros((2, 12, 3), np.float32)),
        "int": run.save("int.npy", np.zeros((2, 12, 4), np.int32)),
        "complex": run.save("complex.npy", np.zeros((2, 12, 4), np.complex64)),
        "void3": run.save("void3.npy", np.zeros((2, 12, 4), "V3")),
        "half_inf": run.save("half_inf.npy", np.full((2, 12, 4), np.inf, np.float16)),
        "long": run.save("long.npy", np.zeros((300000, 1), np.float32)),
    }
    g = ["--q", good["q"], "--k", good["k"], "--v", good["v"]]
    attend = ["attend", "--variant", "softmax", "--out", "y.npy"]
    cases = [
        ("attend: K's d_k differs", attend + ["--q", good["q"], "--k", odd["k_wrong_d"], "--v",
                                             good["v"], "--save-weights", "w.npy"]),
        ("attend: int32 input", attend + ["--q", odd["int"], "--k", good["k"], "--v", good["v"],
                                          "--save-weights", "w.npy"]),
        ("attend: complex64 input", attend + ["--q", odd["complex"], "--k", good["k"], "--v",
                                              good["v"]]),
        ("attend: 3-byte void input", attend + ["--q", odd["void3"], "--k", good["k"], "--v",
                                                good["v"]]),
        ("attend: infinite float16", attend + ["--q", odd["half_inf"], "--k", good["k"], "--v",
                                               good["v"], "--save-weights", "w.npy"]),
        ("attend: --save-weights is --out", attend + g + ["--save-weights", "y.npy"]),
        ("attend: weights beyond memory", attend + ["--q", odd["long"], "--k", odd["long"],
                                                    "--v", odd["long"], "--save-weights",
                                                    "w.npy"]),
        ("scaling: --n above the arrays' N", ["scaling", "--n", "8:64", "--out", "s.csv"] + g),
        ("scaling: --v missing", ["scaling", "--q", good["q"], "--k", good["k"], "--out",
                                  "s.csv"]),
        ("scaling: --d with arrays", ["scaling", "--d", "8", "--out", "s.csv"] + g),
        ("scaling: d_v != d_k", ["scaling", "--out", "s.csv", "--q", good["q"], "--k",
                                 good["k"], "--v", odd["v_dv"]]),
        ("accuracy: --fixed-n above N", ["accuracy", "--fixed-n", "13", "--out", "a.csv"] + g),
        ("accuracy: int32 input", ["accuracy", "--out", "a.csv", "--q", odd["int"], "--k",
                                   good["k"], "--v", good["v"]]),
        ("accuracy: --heads with arrays", ["accuracy", "--heads", "2", "--out", "a.csv"] + g),
        ("bench: --n above N", ["bench", "--n", "8,13"] + g),
        ("bench: --m above M", ["bench", "--m", "20"] + g),
        ("bench: complex64 input", ["bench", "--q", odd["complex"], "--k", good["k"], "--v",
                                    good["v"]]),
        ("bench: K's d_k differs", ["bench", "--q", good["q"], "--k", odd["k_wrong_d"], "--v",
                                    good["v"]]),
    ]
    outputs = ("y.npy", "w.npy", "s.csv", "s_fit.csv", "a.csv")
    for label, args in cases:
        for f in outputs:  # left by the parts above
            if os.path.exists(run.path(f)):
                os.remove(run.path(f))
        rc, out, err = run.cmd(args)
        lines = err.splitlines()
        written = [f for f in outputs if os.path.exists(run.path(f))]
        run.check(rc == 2 and len(lines) == 1 and lines[0].startswith("linattn: ") and
                  not written and not out, label,
                  "exit %d, stderr %r, stdout %r, written %s" % (rc, err, out[:200], written))


def main():
    binary = checks.binary_arg("data_numpy.py")
    seed = checks.seed("data_numpy")
    workdir = tempfile.mkdtemp(prefix="data_numpy.")
    run = Run(binary, workdir, np.random.default_rng(seed))
    try:
        save_weights(run)
        half_precision(run)
        experiments(run)
        bad_inputs(run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return run.report("data_numpy")


if __name__ == "__main__":
    sys.exit(main())
