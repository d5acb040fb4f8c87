#!/usr/bin/env python3
"""signals.py — kill `linattn attend` and `linattn scaling` with SIGINT, SIGTERM and
SIGKILL at random moments, 20 times each (5 in the quick profile, LA_TEST_PROFILE=quick:
the sanitizer stage, where each run takes several times longer), and count what is left
behind: temporary files (*.tmp.*), outputs that are not whole (.npy not equal to an
uninterrupted run's, CSV rows with the wrong number of fields or a last line without its
newline), and results files that lost the previous run's rows. SIGINT/SIGTERM must leave
nothing (the command removes its temporaries and dies of the signal: 130/143); SIGKILL
cannot be caught, so its leftovers are reported (zero where O_TMPFILE works: the unnamed
file vanishes with the process). Prints "ok NAME" / "FAIL NAME: why" per signal and
command.
Usage: signals.py build/linattn [runs per signal, default 20, quick profile 5]"""
import array
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1])
QUICK = os.environ.get("LA_TEST_PROFILE") == "quick"
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5 if QUICK else 20
seed = int(os.environ.get("LA_TEST_SEED", random.randrange(1 << 32)))
rng = random.Random(seed)
failed = False


def npy(path, rows, cols):
    d = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    h = d + " " * (64 - (10 + len(d) + 1) % 64) + "\n"
    data = array.array("f", [((i * 7919) % 1000) * 1e-3 for i in range(cols)]) * rows
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode())
        f.write(data.tobytes())


def leftovers(folder):
    return [n for n in os.listdir(folder) if ".tmp." in n]


def csv_whole(path):
    """(whole, rows): every line ends in a newline, every row has the header's fields."""
    with open(path, "rb") as f:
        text = f.read().decode()
    if text and not text.endswith("\n"):
        return False, 0
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    if not lines:
        return True, 0
    n = lines[0].count(",")
    return all(l.count(",") == n for l in lines), len(lines) - 1


def run_killed(cmd, sig, cwd, max_delay):
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0, max_delay))
    p.send_signal(sig)
    return p.wait()


def report(name, sig, left, bad, lost, codes):
    global failed
    counts = "leftovers %d, malformed %d, lost %d" % (left, bad, lost)
    catchable = sig != signal.SIGKILL
    expected = {128 + sig, -sig, 0}
    wrong = sorted(c for c in codes if c not in expected)
    if catchable and (left or bad or lost or wrong):
        print("FAIL %s_%s: %s%s" % (name, sig.name, counts, ", exit codes %s" % wrong if wrong else ""))
        failed = True
    elif not catchable and (bad or lost):
        print("FAIL %s_%s: %s" % (name, sig.name, counts))
        failed = True
    else:
        print("ok %s_%s # %d runs: %s" % (name, sig.name, RUNS, counts))


def attend(tmp):
    n, d = 65536, 32  # 8 MiB per array: reading and writing take a while
    for x in "qkv":
        npy(os.path.join(tmp, x + ".npy"), n, d)
    cmd = [BIN, "attend", "--variant", "linear", "--q", "q.npy", "--k", "k.npy", "--v", "v.npy",
           "--out", "y.npy", "--threads", "1"]
    t0 = time.time()
    subprocess.run(cmd, cwd=tmp, check=True)
    full = time.time() - t0
    print("# attend: %.2f s uninterrupted" % full)
    with open(os.path.join(tmp, "y.npy"), "rb") as f:
        want = f.read()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        left = bad = 0
        codes = []
        for _ in range(RUNS):
            with open(os.path.join(tmp, "y.npy"), "wb") as f:
                f.write(b"previous")
            codes.append(run_killed(cmd, sig, tmp, full * 1.2))
            left += len(leftovers(tmp))
            for n_ in leftovers(tmp):
                os.unlink(os.path.join(tmp, n_))
            with open(os.path.join(tmp, "y.npy"), "rb") as f:
                got = f.read()
            bad += got not in (want, b"previous")  # old or whole new, nothing between
        report("attend", sig, left, bad, 0, codes)


def scaling(tmp):
    cmd = [BIN, "scaling", "--n", "16:4096", "--d", "16", "--heads", "1", "--variant",
           "linear,softmax", "--reps", "1", "--min-time", "0", "--threads", "1",
           "--out", "s.csv"]
    path = os.path.join(tmp, "s.csv")
    t0 = time.time()
    subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
    full = time.time() - t0
    print("# scaling: %.2f s uninterrupted" % full)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        left = bad = lost = 0
        codes = []
        for i in range(RUNS):
            _, before = csv_whole(path)
            resume = i % 2 == 1
            if resume:  # resume from a cut-short copy, so there is work left
                with open(path) as f:
                    lines = f.read().splitlines(True)
                with open(path, "w") as f:
                    f.writelines(lines[: len(lines) - rng.randrange(1, 8)])
                _, before = csv_whole(path)
            codes.append(run_killed(cmd + (["--resume"] if resume else []), sig, tmp, full * 1.2))
            left += len(leftovers(tmp))
            for n_ in leftovers(tmp):
                os.unlink(os.path.join(tmp, n_))
            whole, after = csv_whole(path)
            bad += not whole
            # a new run replaces the file only with rows (a file left with none by an
            # earlier cut-short resume may stay so); --resume keeps what it had
            lost += after < (before if resume else min(before, 1))
        report("scaling", sig, left, bad, lost, codes)


tmp = tempfile.mkdtemp()
try:
    print("# signals: seed %d (replay with LA_TEST_SEED=%d)" % (seed, seed))
    attend(tmp)
    scaling(tmp)
finally:
    shutil.rmtree(tmp)
sys.exit(1 if failed else 0)
