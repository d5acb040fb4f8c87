# crossover.gp — the sequence length N above which linear attention is faster than
# softmax attention, against the head size d: measured (bisection between sweep points)
# and predicted by the FLOP model, non-causal and causal.
# Reads ../results/crossover.csv; writes crossover.png|svg.
load "style.gpi"
data = "../results/crossover.csv"

sel(c, col) = (column("causal") == c && strcol("status") eq "ok") ? column(col) : NaN
pred(c) = column("causal") == c ? column("predicted_crossover_n") : NaN
# linear already faster at the smallest N swept: drawn at that N, pointing down
below(c, col) = (column("causal") == c && strcol("status") eq "below_range") ? column(col) : NaN

# the below-range series only where there are such points (else gnuplot warns)
stats data using (strcol("status") eq "below_range" && column("causal") == 0 ? 1 : 0) nooutput
below0 = STATS_sum > 0 ? 'data using (below(0, "d")):(below(0, "bracket_hi_n")) with points lc rgb c_linear pt 11 ps 1.6 title "non-causal: linear faster at every N swept (below the smallest)",' : ''
stats data using (strcol("status") eq "below_range" && column("causal") == 1 ? 1 : 0) nooutput
below1 = STATS_sum > 0 ? 'data using (below(1, "d")):(below(1, "bracket_hi_n")) with points lc rgb c_softmax_c pt 11 ps 1.6 title "causal: linear faster at every N swept (below the smallest)",' : ''
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

eval png("crossover")
plot data using (sel(0, "d")):(sel(0, "measured_crossover_n")):(sel(0, "bracket_lo_n")):(sel(0, "bracket_hi_n")) \
         with yerrorbars lc rgb c_linear pt 7 ps 1.4 title "non-causal: measured (fused softmax vs linear)", \
     data using (pred(0) > 0 ? column("d") : NaN):(pred(0)) with linespoints lc rgb c_linear dt 2 pt 6 ps 1.2 title "non-causal: predicted by FLOPs", \
     data using (sel(1, "d")):(sel(1, "measured_crossover_n")):(sel(1, "bracket_lo_n")):(sel(1, "bracket_hi_n")) \
         with yerrorbars lc rgb c_softmax_c pt 5 ps 1.4 title "causal: measured (causal softmax vs chunked linear)", \
     data using (pred(1) > 0 ? column("d") : NaN):(pred(1)) with linespoints lc rgb c_softmax_c dt 2 pt 4 ps 1.2 title "causal: predicted by FLOPs", \
     @below0 @below1 \
     x with lines lc rgb "#888888" dt 3 title "N = d"
eval svg("crossover")
