# block.gp — where the time of one encoder layer goes as N grows, one panel per attention
# kernel in the CSV (softmax and linear today, in the order they first appear): stacked
# shares of each component (attention, projections, FFN, LayerNorm, the rest; every
# component in the CSV but the whole layer) and the layer's time on the right axis.
# Reads ../results/block.csv; writes block.png|svg.
# Other files: linattn plot --from x/block.csv, or
#   gnuplot -e 'data="x/block.csv"; out="x/block"' block.gp
load "style.gpi"
if (!exists("data")) data = "../results/block.csv"
if (!exists("out")) out = "block"

comp(att, c, col) = (strcol("attention") eq att && strcol("component") eq c && strcol("status") eq "ok") ? column(col) : NaN
layer_t(att) = (strcol("attention") eq att && strcol("component") eq "layer" && strcol("status") eq "ok") ? column("median_s") : NaN

stats data using (column("d_model")) nooutput
D = STATS_max
stats data using (column("n")) nooutput
nlo = STATS_min; nhi = STATS_max

attns = series(data, "attention")
na = words(attns)
if (na == 0) { exit error sprintf("block.gp: no attention kernel in %s", data) }
names_c = ""
do for [c in series(data, "component")] { if (c ne "layer") { names_c = names_c . " " . c } }
nc = words(names_c)
title_c(c) = c eq "attention" ? "attention kernel" : c eq "projections" ? "projections (Q, K, V, out)" : \
             c eq "ffn" ? "FFN" : c eq "layer_norm" ? "LayerNorm (two)" : c eq "other" ? "residual adds, copies" : esc(c)
color_c(c, i) = c eq "attention" ? "#c0392b" : c eq "projections" ? "#2471a3" : c eq "ffn" ? "#17a589" : \
                c eq "layer_norm" ? "#b7950b" : c eq "other" ? "#aaaaaa" : palette_at(i)
title_a(a) = sprintf("%s attention", esc(a))
# the right axis covers every layer time (at least 1e-4..1e2 s)
stats data using (strcol("component") eq "layer" && strcol("status") eq "ok" && column("median_s") > 0 ? column("median_s") : 1e300) nooutput
t_lo = STATS_min < 1e-4 * 2 ? STATS_min / 2 : 1e-4
stats data using (strcol("component") eq "layer" && strcol("status") eq "ok" ? column("median_s") : 0) nooutput
t_hi = STATS_max > 1e2 / 2 ? STATS_max * 2 : 1e2
# the N of a kernel not measured (skipped_mem, skipped_time): hollow at the bottom
skip_at(att) = strcol("attention") eq att && strcol("component") eq "layer" && strcol("status") ne "ok"

do for [fmt in formats] {
    eval term(fmt, out, 750 * na, 720)
    set multiplot layout 1,na title heading(sprintf("One encoder layer (D = %d, post-LN, float32): where the time goes as N grows", D)) font ",15"
    do for [a in attns] {
        stats data using (skip_at(a) ? 1 : 0) nooutput
        skipped = STATS_sum == 0 ? "" : \
            ', data using (skip_at(a) ? column("n") : NaN):(3) with points lc rgb "black" pt 6 ps 1.4 title "not measured (hollow)"' . \
            ', data using (skip_at(a) ? column("n") : NaN):(6):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" notitle'
        set title title_a(a) font ",13"
        set xlabel "sequence length N (tokens)"
        set ylabel "share of the layer's time"
        set logscale x 2
        unset logscale y
        set format x "%.0f"
        set format y "%.0f%%"
        set xtics 1, 2
        set xrange [nlo : nhi]
        set yrange [0 : 100]
        set y2label "time of the whole layer (s)"
        set y2tics
        set logscale y2 10
        set format y2 "10^{%L}"
        set y2range [t_lo : t_hi]
        set bmargin 9
        set key at graph 0.5, graph -0.13 center top horizontal maxrows 2 box opaque font ",10"
        set style fill solid 0.75 noborder
        set arrow 1 from D, graph 0 to D, graph 1 nohead front lc rgb "black" dt 2 lw 1.5
        set label 1 "N = D" at D, graph 0.95 left offset 0.4,0 front font ",11"
        # eval: a macro (@) in a loop is expanded before the loop runs
        eval 'plot for [i=1:nc] data using (comp(a, word(names_c, i), "n")):(100 * comp(a, word(names_c, i), "share_below")):(100 * (comp(a, word(names_c, i), "share_below") + comp(a, word(names_c, i), "share"))) ' . \
             'with filledcurves lc rgb color_c(word(names_c, i), i) title title_c(word(names_c, i)), ' . \
             'data using (layer_t(a) > 0 ? column("n") : NaN):(layer_t(a)) axes x1y2 with linespoints lc rgb "black" pt 7 ps 0.8 lw 2 title "whole layer time (right axis)"' . skipped
    }
    unset multiplot
    set output
}
