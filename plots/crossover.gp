# crossover.gp — the sequence length N above which linear attention is faster than
# softmax attention, against the head size d: measured (bisection between sweep points)
# and predicted by the FLOP model, for every pair of kernels in the CSV (columns
# softmax_kernel, linear_kernel; today fused softmax vs linear, non-causal, and causal
# softmax vs chunked linear, causal), in the order they first appear.
# Reads ../results/crossover.csv; writes crossover.png|svg.
# Other files: gnuplot -e 'data="x/crossover.csv"; out="x/crossover"' crossover.gp
load "style.gpi"
if (!exists("data")) data = "../results/crossover.csv"
if (!exists("out")) out = "crossover"

# the pairs: word(sks, i) against word(lks, i)
sks = ""
lks = ""
do for [lk in series(data, "linear_kernel")] {
    do for [sk in series_where(data, "softmax_kernel", "linear_kernel", lk)] { sks = sks . " " . sk; lks = lks . " " . lk }
}
np = words(lks)
if (np == 0) { exit error sprintf("crossover.gp: no kernel pair in %s", data) }
names = lks    # color_of() numbers the unknown names in this list

pair(i) = strcol("softmax_kernel") eq word(sks, i) && strcol("linear_kernel") eq word(lks, i)
sel(i, col) = (pair(i) && strcol("status") eq "ok") ? column(col) : NaN
pred(i) = pair(i) ? column("predicted_crossover_n") : NaN
# linear already faster at the smallest N swept: drawn at that N, pointing down
below(i, col) = (pair(i) && strcol("status") eq "below_range") ? column(col) : NaN

# how the two pairs of today are named and coloured; any other as its kernels' names
known(i) = word(sks, i) eq "softmax" && word(lks, i) eq "linear" ? 1 : \
           word(sks, i) eq "softmax_causal" && word(lks, i) eq "linear_causal_chunked" ? 2 : 0
color_p(i) = known(i) == 1 ? c_linear : known(i) == 2 ? c_softmax_c : color_of(word(lks, i))
name_p(i) = known(i) == 1 ? "non-causal" : known(i) == 2 ? "causal" : sprintf("%s vs %s", esc(word(lks, i)), esc(word(sks, i)))
measured_p(i) = sprintf("%s: measured (%s)", name_p(i), known(i) == 1 ? "fused softmax vs linear" : \
                        known(i) == 2 ? "causal softmax vs chunked linear" : "bisection")
below_p(i) = sprintf("%s: %s faster at every N swept (below the smallest)", name_p(i), known(i) > 0 ? "linear" : esc(word(lks, i)))
# point types by pair: filled for the measured points, the same shape open for the predictions
pt_meas = "7 5 9 13 15"
pt_pred = "6 4 8 12 14"
pt_of(list, i) = 0 + word(list, 1 + (i - 1) % words(list))

# measured then predicted for each pair, then the below-range points of the pairs that
# have them (a series without points would make gnuplot warn)
curves = ""
belows = ""
do for [i=1:np] {
    curves = curves . sprintf('data using (sel(%d, "d")):(sel(%d, "measured_crossover_n")):(sel(%d, "bracket_lo_n")):(sel(%d, "bracket_hi_n")) with yerrorbars lc rgb color_p(%d) pt pt_of(pt_meas, %d) ps 1.4 title measured_p(%d), ', i, i, i, i, i, i, i) . \
                      sprintf('data using (pred(%d) > 0 ? column("d") : NaN):(pred(%d)) with linespoints lc rgb color_p(%d) dt 2 pt pt_of(pt_pred, %d) ps 1.2 title sprintf("%%s: predicted by FLOPs", name_p(%d)), ', i, i, i, i, i)
    stats data using (below(i, "d") > 0 ? 1 : 0) nooutput
    if (STATS_sum > 0) {
        belows = belows . sprintf('data using (below(%d, "d")):(below(%d, "bracket_hi_n")) with points lc rgb color_p(%d) pt 11 ps 1.6 title below_p(%d), ', i, i, i, i)
    }
}
stats data using (column("d")) nooutput
dmin = STATS_min; dmax = STATS_max
set xrange [dmin / 1.4 : dmax * 1.4]
set yrange [8 : *]

set title "Crossover: the sequence length above which linear attention is faster" font ",15"
set xlabel "head size d (d_k = d_v = d)"
set ylabel "crossover sequence length N (tokens)"
set logscale x 2
set logscale y 2
set format x "%.0f"
set format y "%.0f"
set xtics 1, 2
set key top left
set bmargin 6
set label 1 "measured: log-linear interpolation of t_{softmax}/t_{linear} = 1 after bisection (bars: bracketing N)\npredicted: N where the FLOP model's totals cross (la\\_attention\\_cost)" at screen 0.5, screen 0.04 center font ",10" tc rgb "#555555"

eval png(out)
plot @curves @belows \
     x with lines lc rgb "#888888" dt 3 title "N = d"
eval svg(out)
