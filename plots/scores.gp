# scores.gp — why scaled dot-product attention divides by √d_k: on N(0, 1) queries and
# keys, against d_k (log scale), for unscaled (scale 1) and scaled (1/√d_k) dot products,
# left the mean entropy of the attention weights' rows (nats; dashed: its maximum ln N,
# uniform weights), right the median over rows of the softmax Jacobian's largest entry
# (log scale; 1/4 is its bound). Lines: the mean over seeds; small hollow markers: each
# seed.
# Reads ../results/scores.csv (`linattn scores`); writes scores.png|svg.
# By hand: gnuplot -e 'data="x/scores.csv"; out="x/scores"' scores.gp
load "style.gpi"
if (!exists("data")) data = "../results/scores.csv"
if (!exists("out")) out = "scores"

if (words(series(data, "scaling")) == 0) {
    print sprintf("scores.gp: no rows in %s (run linattn scores); nothing drawn", data)
    exit
}
# an ok row of scaling s: column c, else NaN
pt(s, c) = (strcol("scaling") eq s && strcol("status") eq "ok") ? column(c) : NaN
c_none = "#d81b60"
c_sqrt = "#283593"
stats data using (strcol("status") eq "ok" ? column("entropy_max_nats") : NaN) nooutput
h_max = STATS_max
stats data using (strcol("status") eq "ok" ? column("d_k") : NaN) nooutput
d_lo = STATS_min / 1.3; d_hi = STATS_max * 1.3
stats data using (strcol("status") eq "ok" && column("grad_median") > 0 ? column("grad_median") : NaN) nooutput
g_lo = STATS_min / 3
stats data using (strcol("status") eq "ok" ? column("n") : NaN) nooutput
n_keys = STATS_max

do for [fmt in formats] {
    eval term(fmt, out, 1400, 650)
    set multiplot layout 1, 2 title heading(sprintf("Scaled vs unscaled dot-product attention, N = %d queries and keys N(0, 1)", n_keys)) font ",15"
    set logscale x 2
    set xrange [d_lo : d_hi]
    set xlabel "head size d_k"
    set grid xtics ytics lc rgb "#dddddd"

    set title "entropy of the attention weights (mean over rows)" font ",12"
    set ylabel "entropy (nats)"
    unset logscale y
    set format y "%g"
    set yrange [0 : h_max * 1.12]
    set key bottom left font ",10"
    set arrow 1 from d_lo, h_max to d_hi, h_max nohead dt 2 lc rgb "#777777" lw 1.2
    set label 1 sprintf("ln N = %.2f (uniform)", h_max) at d_hi, h_max right offset -0.5, 0.7 font ",9" tc rgb "#555555"
    plot data using (pt("sqrt", "d_k")):(pt("sqrt", "entropy_mean_nats")) smooth unique \
             with linespoints lc rgb c_sqrt pt 7 ps 0.9 title "scaled: q·k / √d_k", \
         data using (pt("sqrt", "d_k")):(pt("sqrt", "entropy_mean_nats")) with points lc rgb c_sqrt pt 6 ps 0.5 notitle, \
         data using (pt("none", "d_k")):(pt("none", "entropy_mean_nats")) smooth unique \
             with linespoints lc rgb c_none pt 5 ps 0.9 title "unscaled: q·k", \
         data using (pt("none", "d_k")):(pt("none", "entropy_mean_nats")) with points lc rgb c_none pt 4 ps 0.5 notitle
    unset arrow 1
    unset label 1

    set title "largest softmax gradient |∂a_j/∂s_l| (median over rows)" font ",12"
    set ylabel "max_{j,l} |(diag(a) − a a^T)_{jl}|"
    set logscale y 10
    set format y "10^{%L}"
    set yrange [g_lo : 0.5]
    set key bottom left font ",10"
    set arrow 2 from d_lo, 0.25 to d_hi, 0.25 nohead dt 2 lc rgb "#777777" lw 1.2
    set label 2 "bound 1/4" at d_hi, 0.25 right offset -0.5, 0.7 font ",9" tc rgb "#555555"
    plot data using (pt("sqrt", "d_k")):(pt("sqrt", "grad_median")) smooth unique \
             with linespoints lc rgb c_sqrt pt 7 ps 0.9 title "scaled: q·k / √d_k", \
         data using (pt("sqrt", "d_k")):(pt("sqrt", "grad_median")) with points lc rgb c_sqrt pt 6 ps 0.5 notitle, \
         data using (pt("none", "d_k")):(pt("none", "grad_median")) smooth unique \
             with linespoints lc rgb c_none pt 5 ps 0.9 title "unscaled: q·k", \
         data using (pt("none", "d_k")):(pt("none", "grad_median")) with points lc rgb c_none pt 4 ps 0.5 notitle
    unset arrow 2
    unset label 2
    unset multiplot
    set output
}
