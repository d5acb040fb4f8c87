# scaling_time.gp — time per call against N, log-log, one line per kernel (every
# variant in the CSV, in the order it first appears), with the exponent fitted over the
# upper half of each curve in the legend and N, N² guides through softmax and linear.
# Reads ../results/scaling.csv and ../results/scaling_fit.csv; writes scaling_time.png|svg.
# Other files: gnuplot -e 'data="x/scaling.csv"; fits="x/scaling_fit.csv"; out="x/scaling_time"' scaling_time.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("fits")) fits = "../results/scaling_fit.csv"
if (!exists("out")) out = "scaling_time"

names = series(data, "variant")
n = words(names)
if (n == 0) { exit error sprintf("scaling_time.gp: no variant in %s", data) }

# fitted exponent and prefactor of each kernel (-1: no fit)
array slope[n]
array pref[n]
array nmin[n]
array nmax[n]
do for [i=1:n] {
    v = word(names, i)
    stats fits using (strcol("variant") eq v ? column("fitted_exponent") : -1) nooutput
    slope[i] = STATS_max
    stats fits using (strcol("variant") eq v ? column("prefactor_s") : -1) nooutput
    pref[i] = STATS_max
    stats fits using (strcol("variant") eq v ? column("fit_n_min") : -1) nooutput
    nmin[i] = STATS_max
    stats fits using (strcol("variant") eq v ? column("fit_n_max") : -1) nooutput
    nmax[i] = STATS_max
}
label(i) = slope[i] > 0 ? sprintf("%s: slope %.2f", title_of(word(names, i)), slope[i]) : sprintf("%s: no fit", title_of(word(names, i)))
fitline(i, x) = (slope[i] > 0 && x >= nmin[i] && x <= nmax[i]) ? pref[i] * x**slope[i] : NaN

# guides through the fused softmax and the linear fit, offset so they do not hide them
stats data using (ok("softmax", "n")):(ok("softmax", "median_s")) nooutput
n0 = STATS_min_x; t0 = STATS_min_y
guide2(x) = 0.25 * t0 * (x / n0)**2
stats data using (ok("linear", "n")):(ok("linear", "median_s")) nooutput
n1 = STATS_max_x; t1 = STATS_max_y
guide1(x) = 4 * t1 * (x / n1)

stats data using (column("n")) nooutput
set xrange [STATS_min * 0.8 : STATS_max * 1.25]

set title "Attention time against sequence length N (float32)" font ",15"
set xlabel "sequence length N (tokens, N = M)"
set ylabel "time per call (s), median of repetitions"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 2 font ",10"
set mxtics 1
set format y "10^{%L}"
set key top left
set bars small
set label 1 "bars: min..max over repetitions; dotted: least-squares fit over the upper half of each curve" at graph 0.99, graph 0.03 right font ",10" tc rgb "#555555"

eval png(out)
plot for [i=1:n] data using (ok(word(names, i), "n")):(ok(word(names, i), "median_s")):(ok(word(names, i), "min_s")):(ok(word(names, i), "max_s")) \
         with yerrorlines lc rgb color_of(word(names, i)) pt (i + 3) ps 1.1 title label(i), \
     for [i=1:n] fitline(i, x) with lines lc rgb color_of(word(names, i)) dt 3 lw 2 notitle, \
     guide2(x) with lines lc rgb "black" dt 2 lw 1.5 title "∝ N^2 (guide)", \
     guide1(x) with lines lc rgb "#555555" dt 4 lw 1.5 title "∝ N (guide)"
eval svg(out)
