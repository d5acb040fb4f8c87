# scaling_gflops.gp — arithmetic rate of each kernel (every variant in the CSV, in the
# order it first appears) against N: the FLOP model (la_attention_cost) divided by the
# median time. Reads ../results/scaling.csv; writes scaling_gflops.png|svg.
# Other files: gnuplot -e 'data="x/scaling.csv"; out="x/scaling_gflops"' scaling_gflops.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("out")) out = "scaling_gflops"
names = series(data, "variant")

stats data using (column("n")) nooutput
set xrange [STATS_min * 0.8 : STATS_max * 1.25]
stats data using (strcol("status") eq "ok" ? column("gflops") : NaN) nooutput
set yrange [0 : STATS_max * 1.25]

set title "Arithmetic rate against sequence length N (float32, FLOPs from the cost model)" font ",15"
set xlabel "sequence length N (tokens, N = M)"
set ylabel "GFLOP/s (model FLOPs / median time)"
set logscale x 2
set format x "%.0f"
set xtics 1, 2 font ",10"
set key top left

eval png(out)
plot for [v in names] data using (ok(v, "n")):(ok(v, "gflops")) \
         with linespoints lc rgb color_of(v) pt 7 ps 0.9 title title_of(v)
eval svg(out)
