# crossover.gp — the sequence length N above which linear attention is faster than
# softmax attention, against the head size d: measured (bisection between sweep points)
# and predicted by the FLOP model, for every pair of kernels in the CSV (columns
# softmax_kernel, linear_kernel; today fused softmax vs linear, non-causal, and causal
# softmax vs chunked linear, causal), in the order they first appear, per group when
# several runs are overlaid (linattn plot). A crossover beyond the largest N swept
# (above_range) is an arrow up from that N; one not reached (a budget or an error stopped
# the search) a hollow marker labelled so.
# Reads ../results/crossover.csv; writes crossover.png|svg.
# Other files: linattn plot --from x/crossover.csv, or
#   gnuplot -e 'data="x/crossover.csv"; out="x/crossover"' crossover.gp
load "style.gpi"
if (!exists("data")) data = "../results/crossover.csv"
if (!exists("out")) out = "crossover"
eval groups_default

# the pairs (over every group's file): word(sks, i) against word(lks, i)
sks = ""
lks = ""
do for [g=1:ngroups] {
    do for [lk in series(gfile[g], "linear_kernel")] {
        do for [sk in series_where(gfile[g], "softmax_kernel", "linear_kernel", lk)] {
            if (!strstrt(" " . lks . " " , " " . lk . " ") || !strstrt(" " . sks . " ", " " . sk . " ")) { sks = sks . " " . sk; lks = lks . " " . lk }
        }
    }
}
np = words(lks)
if (np == 0) { exit error sprintf("crossover.gp: no kernel pair in %s", data) }
names = lks    # color_of() numbers the unknown names in this list

pair(g, i) = strcol("softmax_kernel") eq word(sks, i) && strcol("linear_kernel") eq word(lks, i) && in_group(g)
sel(g, i, col) = (pair(g, i) && strcol("status") eq "ok") ? column(col) : NaN
pred(g, i) = pair(g, i) ? column("predicted_crossover_n") : NaN
# linear already faster at the smallest N swept: drawn at that N, pointing down
below(g, i, col) = (pair(g, i) && strcol("status") eq "below_range") ? column(col) : NaN
# linear not faster up to the largest N swept: an arrow up from it (bracket_lo_n)
above(g, i, col) = (pair(g, i) && strcol("status") eq "above_range") ? column(col) : NaN
# the search stopped (budget, error) before linear won: at the last N where softmax won,
# else at the bottom of the axis
stopped(g, i) = pair(g, i) && strcol("status") ne "ok" && strcol("status") ne "below_range" && strcol("status") ne "above_range"
stopped_y(g, i) = column("bracket_lo_n") > 0 ? column("bracket_lo_n") : ybot * 1.3

# how the two pairs of today are named and coloured; any other as its kernels' names
known(i) = word(sks, i) eq "softmax" && word(lks, i) eq "linear" ? 1 : \
           word(sks, i) eq "softmax_causal" && word(lks, i) eq "linear_causal_chunked" ? 2 : 0
color_p(i) = known(i) == 1 ? c_linear : known(i) == 2 ? c_softmax_c : color_of(word(lks, i))
name_p(i) = known(i) == 1 ? "non-causal" : known(i) == 2 ? "causal" : sprintf("%s vs %s", esc(word(lks, i)), esc(word(sks, i)))
measured_p(i) = sprintf("%s: measured (%s)", name_p(i), known(i) == 1 ? "fused softmax vs linear" : \
                        known(i) == 2 ? "causal softmax vs chunked linear" : "bisection")
below_p(i) = sprintf("%s: %s faster at every N swept (below the smallest)", name_p(i), known(i) > 0 ? "linear" : esc(word(lks, i)))
above_p(i) = sprintf("%s: beyond the largest N swept (arrow up from it)", name_p(i))
stopped_p(i) = sprintf("%s: search stopped (budget or error), hollow", name_p(i))
# point types by pair: filled for the measured points, the same shape open for the
# predictions; with several groups, by group
pt_meas = "7 5 9 13 15"
pt_pred = "6 4 8 12 14"
pt_of(list, i) = 0 + word(list, 1 + (i - 1) % words(list))
ptm(g, i) = ngroups > 1 ? pt_of(pt_meas, g) : pt_of(pt_meas, i)
ptp(g, i) = ngroups > 1 ? pt_of(pt_pred, g) : pt_of(pt_pred, i)

# the axes: every d, and every N drawn (measured, brackets, predictions)
dmin = 1e300; dmax = 0; ymin = 1e300; ymax = 0
do for [g=1:ngroups] {
    stats gfile[g] using (in_group(g) ? column("d") : 1e300) nooutput   # a group may have no rows
    dmin = STATS_min < dmin ? STATS_min : dmin
    stats gfile[g] using (in_group(g) ? column("d") : 0) nooutput
    dmax = STATS_max > dmax ? STATS_max : dmax
    do for [c in "measured_crossover_n bracket_lo_n bracket_hi_n predicted_crossover_n"] {
        stats gfile[g] using (in_group(g) && column(c) > 0 ? column(c) : 1e300) nooutput
        ymin = STATS_min < ymin ? STATS_min : ymin
        stats gfile[g] using (in_group(g) && column(c) > 0 ? column(c) : 0) nooutput
        ymax = STATS_max > ymax ? STATS_max : ymax
    }
}
if (ymax == 0) { ymin = 16; ymax = 1024 }
ybot = (ymin < 8 ? ymin : 8) / 1.5

# for each group and pair, the series that have points (a series without points would
# make gnuplot warn)
curves = ""
marks = ""
do for [g=1:ngroups] {
    do for [i=1:np] {
        stats gfile[g] using (sel(g, i, "measured_crossover_n") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            curves = curves . sprintf('gfile[%d] using (sel(%d, %d, "d")):(sel(%d, %d, "measured_crossover_n")):(sel(%d, %d, "bracket_lo_n")):(sel(%d, %d, "bracket_hi_n")) with yerrorbars lc rgb color_p(%d) pt ptm(%d, %d) ps 1.4 title g_title(%d, measured_p(%d)), ', g, g, i, g, i, g, i, g, i, i, g, i, g, i)
        }
        stats gfile[g] using (pred(g, i) > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            curves = curves . sprintf('gfile[%d] using (pred(%d, %d) > 0 ? column("d") : NaN):(pred(%d, %d)) with linespoints lc rgb color_p(%d) dt 2 pt ptp(%d, %d) ps 1.2 title g_title(%d, sprintf("%%s: predicted by FLOPs", name_p(%d))), ', g, g, i, g, i, i, g, i, g, i)
        }
        stats gfile[g] using (below(g, i, "d") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            marks = marks . sprintf('gfile[%d] using (below(%d, %d, "d")):(below(%d, %d, "bracket_hi_n")) with points lc rgb color_p(%d) pt 11 ps 1.6 title g_title(%d, below_p(%d)), ', g, g, i, g, i, i, g, i)
        }
        stats gfile[g] using (above(g, i, "d") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            marks = marks . sprintf('gfile[%d] using (above(%d, %d, "d")):(above(%d, %d, "bracket_lo_n")):(0):(above(%d, %d, "bracket_lo_n") * 0.9) with vectors head filled size screen 0.012,25 lc rgb color_p(%d) lw 2 title g_title(%d, above_p(%d)), ', g, g, i, g, i, g, i, i, g, i) . \
                            sprintf('gfile[%d] using (above(%d, %d, "d")):(above(%d, %d, "bracket_lo_n") * 1.9):(sprintf("> %%d", above(%d, %d, "bracket_lo_n"))) with labels offset 0,0.7 font ",9" tc rgb color_p(%d) notitle, ', g, g, i, g, i, g, i, i)
        }
        stats gfile[g] using (stopped(g, i) ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            marks = marks . sprintf('gfile[%d] using (stopped(%d, %d) ? column("d") : NaN):(stopped_y(%d, %d)) with points lc rgb color_p(%d) pt 6 ps 1.6 title g_title(%d, stopped_p(%d)), ', g, g, i, g, i, i, g, i) . \
                            sprintf('gfile[%d] using (stopped(%d, %d) ? column("d") : NaN):(stopped_y(%d, %d)):(esc(strcol("status"))) with labels left offset 1,0 font ",9" tc rgb color_p(%d) notitle, ', g, g, i, g, i, i)
        }
    }
}
set xrange [dmin / 1.4 : dmax * 1.4]
set yrange [ybot : ymax * 6]   # room above for the arrows and the key

set title heading("Crossover: the sequence length above which linear attention is faster") font ",15"
set xlabel "head size d (d_k = d_v = d)"
set ylabel "crossover sequence length N (tokens)"
set logscale x 2
set logscale y 2
set format x "%.0f"
set format y "%.0f"
set xtics 1, 2
set key top left
eval overlay_key
set bmargin 6
set label 1 "measured: log-linear interpolation of t_{softmax}/t_{linear} = 1 after bisection (bars: bracketing N)\npredicted: N where the FLOP model's totals cross (la\\_attention\\_cost)" at screen 0.5, screen 0.04 center font ",10" tc rgb "#555555"

eval png(out)
plot @curves @marks \
     x with lines lc rgb "#888888" dt 3 title "N = d"
eval svg(out)
