"""dist_scaling.py — `mpirun -np 2 linattn dist-scaling`, briefly: both files written with
their headers, one row per (mode, kernel, P) for P = 1, 2, every row ok, the bytes each
rank sent equal to the formulas (linear: H·d·(d + 1)·4 once, nothing on one rank; ring:
(P − 1) slices of H·(N/P)·2d·4), the model's rows up to P = 1024 and N = 1e8; and a bad
flag refused on every rank with one line. Usage: dist_scaling.py BUILD/linattn (an MPI
build: make test passes build/mpi/linattn)."""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "command"))
import checks  # noqa: E402

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "--timeout", "300", "-np", "2"]


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def main():
    binary = checks.binary_arg("dist_scaling.py")
    check = checks.Checks("dist_scaling")
    with tempfile.TemporaryDirectory() as d:
        out, model = os.path.join(d, "s.csv"), os.path.join(d, "m.csv")
        n, npr, dim, heads = 96, 40, 16, 2
        proc = subprocess.run(MPIRUN + [binary, "dist-scaling", "--n", str(n), "--n-per-rank",
                                        str(npr), "--d", str(dim), "--heads", str(heads),
                                        "--reps", "1", "--out", out, "--model-out", model],
                              capture_output=True, text=True, timeout=400)
        if not check(proc.returncode == 0, "dist-scaling ran: exit %d%s" % (
                proc.returncode, "" if proc.returncode == 0 else " " + proc.stderr[-300:])):
            return check.report()
        r = rows(out)
        check(len(r) == 2 * 5 * 2, "%d rows: 2 modes x 5 kernels x P = 1, 2" % len(r))
        for row in r:
            P, N = int(row["ranks"]), int(row["n"])
            check(N == (n if row["mode"] == "strong" else npr * P), "%s %s P=%d: N = %d" % (
                row["mode"], row["kernel"], P, N))
            if row["kernel"].startswith("softmax"):
                expected = (P - 1) * heads * (N // P) * 2 * dim * 4  # N even: equal slices
            else:
                expected = heads * dim * (dim + 1) * 4 if P > 1 else 0
            check(row["status"] == "ok" and float(row["bytes_sent_per_rank"]) == expected
                  and float(row["median_s"]) > 0,
                  "%s %s P=%d: ok, %s bytes sent (expected %d)" % (
                      row["mode"], row["kernel"], P, row["bytes_sent_per_rank"], expected))
        m = rows(model)
        check(max(int(x["ranks"]) for x in m) == 1024 and max(float(x["n"]) for x in m) == 1e8
              and {x["link_gbit_s"] for x in m} == {"10", "100"},
              "the model reaches P = 1024, N = 1e8, at 10 and 100 Gbit/s")
        proc = subprocess.run(MPIRUN + [binary, "dist-scaling", "--bogus"], capture_output=True,
                              text=True, timeout=400)
        lines = [x for x in proc.stderr.splitlines() if x.startswith("linattn: ")]
        check(proc.returncode == 2 and len(lines) == 1, "a bad flag: exit %d, lines %s" % (
            proc.returncode, lines))
    return check.report()


if __name__ == "__main__":
    sys.exit(main())
