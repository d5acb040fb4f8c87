# block.gp — where the time of one encoder layer goes as N grows, softmax against linear
# attention: stacked shares of attention, projections, FFN, LayerNorm and the rest.
# Reads ../results/block.csv; writes block.png|svg.
load "style.gpi"
data = "../results/block.csv"

comp(att, c, col) = (strcol("attention") eq att && strcol("component") eq c && strcol("status") eq "ok") ? column(col) : NaN
layer_t(att) = (strcol("attention") eq att && strcol("component") eq "layer" && strcol("status") eq "ok") ? column("median_s") : NaN

stats data using (column("d_model")) nooutput
D = STATS_max
stats data using (column("n")) nooutput
nlo = STATS_min; nhi = STATS_max

names_c = "attention projections ffn layer_norm other"
title_c(i) = i == 1 ? "attention kernel" : i == 2 ? "projections (Q, K, V, out)" : i == 3 ? "FFN" : i == 4 ? "LayerNorm (two)" : "residual adds, copies"
colors_c = "#c0392b #2471a3 #17a589 #b7950b #aaaaaa"

do for [fmt in "png svg"] {
    eval term(fmt, "block", 1500, 720)
    set multiplot layout 1,2 title sprintf("One encoder layer (D = %d, post-LN, float32): where the time goes as N grows", D) font ",15"
    do for [a in "softmax linear"] {
        set title (a eq "softmax" ? "softmax attention" : "linear attention") font ",13"
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
        set y2range [1e-4 : 1e2]
        set bmargin 9
        set key at graph 0.5, graph -0.13 center top horizontal maxrows 2 box opaque font ",10"
        set style fill solid 0.75 noborder
        set arrow 1 from D, graph 0 to D, graph 1 nohead front lc rgb "black" dt 2 lw 1.5
        set label 1 "N = D" at D, graph 0.95 left offset 0.4,0 front font ",11"
        plot for [i=1:5] data using (comp(a, word(names_c, i), "n")):(100 * comp(a, word(names_c, i), "share_below")):(100 * (comp(a, word(names_c, i), "share_below") + comp(a, word(names_c, i), "share"))) \
                 with filledcurves lc rgb word(colors_c, i) title title_c(i), \
             data using (layer_t(a) > 0 ? column("n") : NaN):(layer_t(a)) axes x1y2 with linespoints lc rgb "black" pt 7 ps 0.8 lw 2 title "whole layer time (right axis)"
    }
    unset multiplot
    set output
}
