"""dist_attend.py — `mpirun -np P linattn dist-attend` writes the file `linattn attend`
writes (to rounding: 1e-6 relative in float32, 1e-12 in float64) for P = 1..4, N not
divisible by P, softmax and linear, causal or not, both causal-linear forms; and bad input
under MPI (shapes that disagree, an unreadable file, N < P) makes every rank exit 2 with
one line, no hang (a timeout), no output file. Usage: dist_attend.py BUILD/linattn (an
MPI build: make test passes build/mpi/linattn)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "command"))
import checks  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--timeout", "300"]


def mpirun(binary, np_, args):
    return subprocess.run(MPIRUN + ["-np", str(np_), binary, "dist-attend"] + args,
                          capture_output=True, text=True, timeout=400)


def main():
    binary = checks.binary_arg("dist_attend.py")
    seed = checks.seed("dist_attend")
    rng = np.random.default_rng(seed)
    check = checks.Checks("dist_attend")
    with tempfile.TemporaryDirectory() as d:
        path = lambda name: os.path.join(d, name)  # noqa: E731
        shape_q, d_v = (2, 3, 23, 8), 5
        q = rng.standard_normal(shape_q)
        k = rng.standard_normal(shape_q)
        v = rng.standard_normal(shape_q[:-1] + (d_v,))
        for name, a in (("q", q), ("k", k), ("v", v)):
            np.save(path(name + ".npy"), a)
        io = ["--q", path("q.npy"), "--k", path("k.npy"), "--v", path("v.npy")]
        cases = [("softmax", []), ("softmax", ["--causal"]), ("linear", []),
                 ("linear", ["--causal", "--chunk", "4"]),
                 ("linear", ["--causal", "--chunk", "4", "--scan", "allgather"]),
                 ("linear", ["--feature-map", "relu"])]
        for precision, tol in (("float32", 1e-6), ("float64", 1e-12)):
            for variant, extra in cases:
                # --scan is dist-attend's own: attend computes the same thing without it
                attend_extra = [x for x in extra if x not in ("--scan", "allgather")]
                ref_path = path("ref.npy")
                proc = checks.run(binary, ["attend", "--variant", variant, "--precision",
                                           precision, "--out", ref_path] + io + attend_extra)
                if not check(proc.returncode == 0, "attend %s %s" % (variant, proc.stderr)):
                    continue
                ref = np.load(ref_path)
                for ranks in (1, 2, 3, 4):
                    out = path("y%d.npy" % ranks)
                    what = "dist-attend -np %d --variant %s %s %s" % (
                        ranks, variant, precision, " ".join(extra))
                    proc = mpirun(binary, ranks, ["--variant", variant, "--precision",
                                                  precision, "--out", out] + io + extra)
                    if not check(proc.returncode == 0, what + " ran " + proc.stderr.strip()):
                        continue
                    y = np.load(out)
                    err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
                    check(y.shape == ref.shape and y.dtype == ref.dtype and err < tol,
                          "%s: shape %s dtype %s, relative error %.3g" % (
                              what, y.shape, y.dtype, err))

        # bad input: every rank exits 2, one line (rank 0's), no file
        np.save(path("v_short.npy"), v[:, :, :-1])
        np.save(path("q_short.npy"), q[:, :, :3])
        np.save(path("k_short.npy"), k[:, :, :3])
        np.save(path("v3.npy"), v[:, :, :3])
        bad = [("V has fewer rows", ["--q", path("q.npy"), "--k", path("k.npy"),
                                     "--v", path("v_short.npy")], 3),
               ("a file that cannot be read", ["--q", path("q.npy"), "--k", path("missing.npy"),
                                               "--v", path("v.npy")], 2),
               ("N = 3 for 4 ranks", ["--q", path("q_short.npy"), "--k", path("k_short.npy"),
                                      "--v", path("v3.npy")], 4),
               ("an unknown variant", ["--variant", "hard"] + io, 3),
               ("a bad flag", ["--bogus"] + io, 2)]
        for what, args, ranks in bad:
            out = path("bad.npy")
            if "--variant" not in args:
                args = ["--variant", "linear"] + args
            proc = mpirun(binary, ranks, args + ["--out", out])
            lines = [line for line in proc.stderr.splitlines() if line.startswith("linattn: ")]
            check(proc.returncode == 2 and len(lines) == 1 and not os.path.exists(out),
                  "%s (-np %d): exit %d, %d line(s) %s, file %s" % (
                      what, ranks, proc.returncode, len(lines), lines,
                      "written" if os.path.exists(out) else "absent"))
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
