# scaling_memory.gp — the peak resident memory of each point against N (measured,
# VmHWM reset before the point; every variant in the CSV, in the order it first
# appears), with the cost model's bytes for the inputs and output alone (from the
# linear rows) and for the materialising kernel's score matrix on top of them.
# Reads ../results/scaling.csv; writes scaling_memory.png|svg.
# Other files: gnuplot -e 'data="x/scaling.csv"; out="x/scaling_memory"' scaling_memory.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("out")) out = "scaling_memory"
names = series(data, "variant")
MiB = 1048576.0

stats data using (column("n")) nooutput
set xrange [STATS_min * 0.8 : STATS_max * 1.25]

set title "Peak resident memory against sequence length N (float32)" font ",15"
set xlabel "sequence length N (tokens, N = M)"
set ylabel "peak resident memory of the point (MiB)"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 2 font ",10"
set format y "10^{%L}"
set key top left
set label 1 "measured: VmHWM of the process during the point (inputs, output, scratch, program);\nmodel: la\\_attention\\_cost bytes" at graph 0.99, graph 0.05 right font ",10" tc rgb "#555555"

eval png(out)
plot for [v in names] data using (ok(v, "n")):(ok(v, "peak_rss_bytes") / MiB) \
         with linespoints lc rgb color_of(v) pt 7 ps 0.9 title title_of(v), \
     data using (ok("linear", "n")):(ok("linear", "io_bytes") / MiB) \
         with lines lc rgb "black" dt 2 lw 1.5 title "model: q, k, v and output", \
     data using (strcol("variant") eq "softmax_materialized" ? column("n") : NaN):((column("io_bytes") + column("workspace_bytes")) / MiB) \
         with lines lc rgb c_materialized dt 2 lw 1.5 title "model: materialising (with N×N scores)"
eval svg(out)
