#!/usr/bin/python3
"""plot_figures.py — `linattn plot` end to end: figures of tiny experiment runs, with the
run's settings in the subtitle, overlays, points not measured marked, and bad input
refused with one line and no file.

Usage: /usr/bin/python3 tests/command/plot_figures.py BUILD/linattn   (run by `make test`)

Runs `linattn scaling` with tiny sizes (and a memory budget so that some points are
skipped) at d = 64 and d = 32, then `linattn plot` on them, and reads the SVG text:
the subtitle holds d, heads, threads, precision, CPU and commit of the CSV's own
metadata; two files overlay with both settings in the legend (and so does one
long-format file holding both, and two decode runs); skipped points carry their label; `# noisy: yes` puts
"(noisy run)" in the title; q1_s/q3_s columns switch the bars to the interquartile range
(read by name, wherever the columns are); a crossover beyond the largest N swept is an
arrow with its label. Bad input (missing file, a CSV that is not linattn's, a kind with
no figure, no gnuplot, a file gnuplot cannot draw) exits 2 with one line on stderr and
leaves no file (an older figure stays as it was). Exit status 1 when a check fails.
"""
import html
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import checks  # noqa: E402  (tests/command/checks.py)


def main():
    binary = checks.binary_arg("plot_figures.py")
    if not shutil.which("gnuplot"):
        print("plot_figures: gnuplot is missing (make deps, or apt-get install gnuplot-nox)")
        return 1
    check = checks.Checks("plot_figures")

    def run(args, env=None, cwd=None):
        return checks.run(binary, args, env=env, cwd=cwd)

    def must(args):
        proc = run(args)
        if proc.returncode != 0:
            raise SystemExit("plot_figures: linattn %s: exit %d: %s"
                             % (" ".join(args), proc.returncode, proc.stderr.strip()))
        return proc

    def svg_text(path):
        """the text of an SVG figure, entities decoded"""
        with open(path, encoding="utf-8") as f:
            return html.unescape(f.read())

    def meta(path, key):
        with open(path) as f:
            for line in f:
                if line.startswith("# %s: " % key):
                    return line.split(": ", 1)[1].strip()
        return None

    def figures(folder):
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []

    with tempfile.TemporaryDirectory() as tmp:
        # two tiny runs; --max-mem makes the largest N skipped_mem
        runs = {}
        for d in ("64", "32"):
            folder = os.path.join(tmp, "d" + d)
            os.makedirs(folder)
            runs[d] = os.path.join(folder, "scaling.csv")
            must(["scaling", "--n", "64:256", "--d", d, "--heads", "1", "--reps", "1",
                  "--min-time", "0", "--max-mem", "300K", "--out", runs[d]])
        with open(runs["64"]) as f:
            skipped = sum(1 for line in f if ",skipped_mem," in line)
        check(skipped > 0, "the tiny run has skipped points to mark (%d)" % skipped)

        # one file: PNG and SVG, the subtitle from the file's own metadata
        out = os.path.join(tmp, "fig")
        proc = run(["plot", "--from", runs["64"], "--out", out])
        check(proc.returncode == 0, "plot --from scaling.csv exits 0 (%s)" % proc.stderr.strip())
        for name in ("scaling_time", "scaling_memory", "scaling_gflops"):
            for ext in ("png", "svg"):
                p = os.path.join(out, name + "." + ext)
                check(os.path.isfile(p) and os.path.getsize(p) > 0, "%s.%s is written" % (name, ext))
        with open(os.path.join(out, "scaling_time.png"), "rb") as f:
            check(f.read(8) == b"\x89PNG\r\n\x1a\n", "scaling_time.png is a PNG")
        svg = svg_text(os.path.join(out, "scaling_time.svg"))
        commit = meta(runs["64"], "git_commit").split(" ")[0]
        cpu = meta(runs["64"], "cpu")
        threads = meta(runs["64"], "threads")
        for want in ("d = 64", "1 head,", "%s thread" % threads, "float32", cpu,
                     "commit " + commit):
            check(want in svg, "the subtitle says %r" % want)
        check("d = 32" not in svg, "and not another run's d")
        check("skipped: memory" in svg and "not measured" in svg,
              "skipped points are marked with their label and a key entry")
        # scaling writes q1_s, q3_s (interquartile bars) and # noisy: from its machine check
        with open(runs["64"]) as f:
            has_quartiles = "q1_s" in next(l for l in f if not l.startswith("#")).split(",")
        bars = "interquartile" if has_quartiles else "bars: min..max"
        check(bars in svg, "the figure says the bars are %s" % bars)
        noisy_run = (meta(runs["64"], "noisy") or "no").startswith("yes")
        check(("(noisy run)" in svg) == noisy_run,
              "the title says (noisy run) exactly when the file's # noisy: says yes")
        check(not [f for f in figures(out) if ".tmp" in f], "no temporary file is left")

        # --format svg writes only the SVG files
        only = os.path.join(tmp, "only_svg")
        must(["plot", "--from", runs["64"], "--out", only, "--format", "svg"])
        check(figures(only) == ["scaling_gflops.svg", "scaling_memory.svg", "scaling_time.svg"],
              "--format svg writes the SVG figures only (%s)" % figures(only))

        # two files overlay: the legend names the setting that differs
        over = os.path.join(tmp, "overlay")
        must(["plot", "--from", runs["64"], runs["32"], "--out", over])
        svg = svg_text(os.path.join(over, "scaling_time.svg"))
        check("linear: " in svg and re.search(r"linear: [^<]*d = 64", svg) and
              re.search(r"linear: [^<]*d = 32", svg),
              "two runs overlay: the legend has the linear series at d = 64 and at d = 32")
        check("1 head," in svg, "the settings they share stay in the subtitle")

        # one long-format file holding both d (rows, not columns): overlaid the same way
        both = os.path.join(tmp, "long", "scaling.csv")
        os.makedirs(os.path.dirname(both))
        with open(runs["64"]) as a, open(runs["32"]) as b, open(both, "w") as f:
            f.write(a.read())
            f.writelines(line for line in b.readlines()
                         if not line.startswith("#") and not line.startswith("variant,"))
        must(["plot", "--from", both, "--out", os.path.join(tmp, "long_fig"), "--format", "svg"])
        svg = svg_text(os.path.join(tmp, "long_fig", "scaling_time.svg"))
        check(re.search(r"linear: [^<]*d = 64", svg) and re.search(r"linear: [^<]*d = 32", svg),
              "one file with d = 32 and d = 64 rows: a series for each d")

        # decode runs overlay the same way
        dec = []
        for d in ("16", "32"):
            dec.append(os.path.join(tmp, "dec" + d, "decode.csv"))
            os.makedirs(os.path.dirname(dec[-1]))
            must(["decode", "--tokens", "32", "--heads", "2", "--d", d, "--reps", "1",
                  "--out", dec[-1]])
        must(["plot", "--from"] + dec + ["--out", os.path.join(tmp, "dec_fig"), "--format", "svg"])
        svg = svg_text(os.path.join(tmp, "dec_fig", "decode.svg"))
        check(re.search(r"KV cache[^<]*d = 16", svg) and re.search(r"KV cache[^<]*d = 32", svg),
              "two decode runs overlay: a series for each d")

        # a noisy run, with quartile columns inserted after max_s (read by name)
        noisy = os.path.join(tmp, "noisy", "scaling.csv")
        os.makedirs(os.path.dirname(noisy))
        with open(runs["64"]) as f:
            lines = f.read().splitlines()
        header_at = next(i for i, l in enumerate(lines) if not l.startswith("#"))
        columns = lines[header_at].split(",")
        at = columns.index("max_s") + 1
        with open(noisy, "w") as f:
            f.write(lines[0] + "\n# noisy: yes (load average 3.0 on 2 cores)\n")
            for i, line in enumerate(lines[1:], 1):
                if line.startswith("# noisy:"):
                    continue
                if i >= header_at and "q1_s" not in columns:
                    fields = line.split(",")
                    extra = ["q1_s", "q3_s"] if i == header_at else [fields[columns.index("min_s")],
                                                                      fields[columns.index("max_s")]]
                    line = ",".join(fields[:at] + extra + fields[at:])
                f.write(line + "\n")
        must(["plot", "--from", noisy, "--format", "svg"])
        svg = svg_text(os.path.join(os.path.dirname(noisy), "scaling_time.svg"))
        check("(noisy run)" in svg, "# noisy: yes titles the figure (noisy run)")
        check("interquartile" in svg, "with q1_s and q3_s the bars are the interquartile range")

        # a crossover beyond the largest N swept: an arrow up, labelled (a file as
        # `linattn crossover` writes it, made up so that one d is above the range)
        cross = os.path.join(tmp, "cross", "crossover.csv")
        os.makedirs(os.path.dirname(cross))
        with open(cross, "w") as f:
            f.write("# linattn crossover: N above which linear attention is faster\n"
                    "# command: build/linattn crossover --d 16,32,64\n"
                    "# threads: 2\n"
                    "d,causal,heads,threads,status,measured_crossover_n,bracket_lo_n,"
                    "bracket_hi_n,predicted_crossover_n,softmax_kernel,linear_kernel\n"
                    "16,0,4,2,ok,64.1,64,67,17,softmax,linear\n"
                    "32,0,4,2,ok,36.2,36,38,33,softmax,linear\n"
                    "64,0,4,2,above_range,,1024,,65,softmax,linear\n"
                    "16,1,4,2,below_range,,,16,32,softmax_causal,linear_causal_chunked\n")
        must(["plot", "--from", os.path.dirname(cross), "--format", "svg"])
        svg = svg_text(os.path.join(os.path.dirname(cross), "crossover.svg"))
        check("> 1024" in svg and "beyond the largest N swept" in svg,
              "a crossover above the N swept is an arrow from N = 1024 with its label")

        # bad input: exit 2, one line, no file
        plain = os.path.join(tmp, "plain.csv")
        with open(plain, "w") as f:
            f.write("a,b\n1,2\n")
        bench = os.path.join(tmp, "bench.csv")
        with open(bench, "w") as f:
            f.write(must(["bench", "--n", "16", "--variant", "linear", "--reps", "1",
                          "--min-time", "0", "--format", "csv"]).stdout)
        broken = os.path.join(tmp, "broken", "scaling.csv")
        os.makedirs(os.path.dirname(broken))
        with open(broken, "w") as f:
            f.write("# linattn scaling: made up\nkernel,size\nsoftmax,64\n")
        # dist-scaling's two files (as mpirun -np P linattn dist-scaling writes them)
        dist = os.path.join(tmp, "dist")
        os.makedirs(dist)
        with open(os.path.join(dist, "dist_scaling.csv"), "w") as f:
            f.write("# linattn dist_scaling: made up\n# cpu: test\n"
                    "mode,kernel,ranks,n,n_per_rank,d,heads,precision,median_s,min_s,comm_s,"
                    "comm_share,bytes_sent_per_rank,bytes_sent_max,messages,status\n")
            for kernel, t in (("linear", 1e-3), ("softmax_ring", 2e-2)):
                for p in (1, 2, 4):
                    f.write("strong,%s,%d,4096,%d,64,1,float32,%g,%g,0,0,0,0,0,ok\n"
                            % (kernel, p, 4096 // p, t / p, t / p))
        with open(os.path.join(dist, "dist_model.csv"), "w") as f:
            f.write("# linattn dist_model: made up\n"
                    "link_gbit_s,latency_s,kernel,ranks,n,d,heads,compute_s,comm_s,time_s,"
                    "comm_share,bytes_sent_per_rank,unit_cost_s\n")
            for link in (10, 100):
                for kernel, t in (("linear", 1e-3), ("softmax_ring", 2e-2)):
                    for n in (4096, 1000000, 100000000):
                        for p in (1, 4, 16, 64):
                            f.write("%d,2e-06,%s,%d,%d,64,1,%g,0,%g,0,0,0\n"
                                    % (link, kernel, p, n, t * n / 4096 / p, t * n / 4096 / p))
        proc = run(["plot", "--from", os.path.join(dist, "dist_scaling.csv"), "--format", "svg"])
        check(proc.returncode == 0 and figures(dist) == ["dist_model.csv", "dist_scaling.csv",
                                                         "dist_scaling.svg"],
              "plot --from dist_scaling.csv: its figure, with the dist_model.csv beside it (%s: %s)"
              % (figures(dist), proc.stderr.strip()[-200:]))
        if os.path.exists(os.path.join(dist, "dist_scaling.svg")):
            text = svg_text(os.path.join(dist, "dist_scaling.svg"))
            check("strong scaling, N = 4096" in text and "softmax ring" in text,
                  "dist_scaling.svg: both panels and the kernels' names")
        lone = os.path.join(tmp, "lone")
        os.makedirs(lone)
        shutil.copy(os.path.join(dist, "dist_scaling.csv"), lone)

        no_gnuplot = dict(os.environ, PATH="/nonexistent")
        cases = [
            ("dist_scaling.csv without its dist_model.csv",
             [os.path.join(lone, "dist_scaling.csv")], None),
            ("a missing file", [os.path.join(tmp, "missing.csv")], None),
            ("a CSV that is not linattn's", [plain], None),
            ("a kind with no figure (bench)", [bench], None),
            ("a companion file alone", [os.path.join(tmp, "d64", "scaling_fit.csv")], None),
            ("no gnuplot on PATH", [runs["64"]], no_gnuplot),
            ("a file gnuplot cannot draw", [broken], None),
        ]
        for what, inputs, env in cases:
            target = os.path.join(tmp, "bad")
            os.makedirs(target, exist_ok=True)
            old = os.path.join(target, "scaling_time.png")
            with open(old, "wb") as f:
                f.write(b"old figure")
            proc = run(["plot", "--from"] + inputs + ["--out", target], env=env)
            lines = proc.stderr.strip().splitlines()
            check(proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("linattn: "),
                  "%s: exit 2 and one line (%d: %s)" % (what, proc.returncode, proc.stderr.strip()))
            with open(old, "rb") as f:
                kept = f.read() == b"old figure"
            check(figures(target) == ["scaling_time.png"] and kept,
                  "%s: no file written, the old figure untouched (%s)" % (what, figures(target)))
            shutil.rmtree(target)
        proc = run(["plot", "--from", runs["64"], "--format", "gif"])
        check(proc.returncode == 2 and proc.stderr.count("\n") == 1, "--format gif is refused")

    return check.report()


if __name__ == "__main__":
    sys.exit(main())
