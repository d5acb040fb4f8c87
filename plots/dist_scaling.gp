# dist_scaling.gp — distributed attention over MPI (linattn dist-scaling): time per call
# against ranks P. Left: strong scaling at the measured N, the model's curves (measured
# compute per rank + modelled communication, 10 Gbit/s solid, 100 Gbit/s dashed) with the
# measured points on them. Right: the model alone at 10 Gbit/s, N = 10^6 and 10^8.
# Reads ../results/dist_scaling.csv and the dist_model.csv beside it; writes
# dist_scaling.png|svg. Other files: linattn plot --from x/dist_scaling.csv (its
# dist_model.csv beside it), or from plots/:
#   gnuplot -e "data='x/dist_scaling.csv'; model='x/dist_model.csv'; out='x/dist_scaling'" dist_scaling.gp
load "style.gpi"
if (!exists("data")) data = "../results/dist_scaling.csv"
# the model's file: dist_model.csv in data's folder (dist-scaling writes both there)
last_slash(s, i) = i < 1 ? 0 : s[i:i] eq "/" ? i : last_slash(s, i - 1)
folder_of(p) = last_slash(p, strlen(p)) > 0 ? p[1:last_slash(p, strlen(p))] : ""
if (!exists("model")) model = folder_of(data) . "dist_model.csv"
if (system("test -r " . shq(model) . " && echo yes") ne "yes") {
    exit error sprintf("dist_scaling.gp: no %s beside %s (dist-scaling writes both)", model, data)
}
if (!exists("out")) out = "dist_scaling"

# the strong-scaling N: the first strong row's n
stats data using (strcol("mode") eq "strong" ? column("n") : NaN) nooutput
n_strong = STATS_min
n_big = 1e8

kernels = "linear linear_causal_exscan linear_causal_allgather softmax_ring softmax_ring_causal"
titles = "'linear (all-reduce)' 'linear causal (MPI\\_Exscan)' 'linear causal (LASP-2 all-gather)' 'softmax ring' 'softmax ring, causal'"
colors = "#1f77b4 #2ca02c #17becf #d62728 #ff7f0e"
k_title(i) = word(titles, i)
k_color(i) = word(colors, i)
kname(i) = word(kernels, i)

sel_model(k, link, n) = (strcol("kernel") eq k && column("link_gbit_s") == link && column("n") == n) ? column("time_s") : NaN
sel_meas(k) = (strcol("mode") eq "strong" && strcol("kernel") eq k && strcol("status") eq "ok") ? column("median_s") : NaN

set logscale xy 2
set logscale y 10
set format y "10^{%L}"
set xlabel "ranks P"
set ylabel "time per call (s)"
set grid xtics ytics lc rgb "#dddddd"
set key top right font ",10" box opaque samplen 3
set xrange [1:1024]

do for [fmt in formats] {
eval term(fmt, out, 1500, 650)
set multiplot layout 1,2 title heading("Sequence-parallel attention over MPI: measured points on the model's curves") . \
    "\n{/*0.72 model: measured compute per rank + communication at 10 Gbit/s (solid) and 100 Gbit/s (dashed), 2 µs latency}" font ",13"

set title sprintf("strong scaling, N = %.0f: measured (points) and model", n_strong)
plot for [i=1:5] model using "ranks":(sel_model(kname(i), 10, n_strong)) with lines lw 2 lc rgb k_color(i) title k_title(i), \
     for [i=1:5] model using "ranks":(sel_model(kname(i), 100, n_strong)) with lines lw 1.5 dt 2 lc rgb k_color(i) notitle, \
     for [i=1:5] data using "ranks":(sel_meas(kname(i))) with points pt 7 ps 1.4 lc rgb k_color(i) notitle

set title "model at 10 Gbit/s: N = 10^8 (solid) and N = 10^6 (dashed)"
plot for [i=1:5] model using "ranks":(sel_model(kname(i), 10, n_big)) with lines lw 2 lc rgb k_color(i) title k_title(i), \
     for [i=1:5] model using "ranks":(sel_model(kname(i), 10, 1e6)) with lines lw 1.5 dt 2 lc rgb k_color(i) notitle
unset multiplot
set output
}
