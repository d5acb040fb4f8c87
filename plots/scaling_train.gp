# scaling_train.gp — one training step's attention, forward + backward, against N: the
# CPU version of Katharopoulos et al. (2020), Fig. 1. Left: time per forward+backward
# call (median, bars the interquartile range), log-log, with the exponent fitted over the upper half of
# each curve (in log N) in the legend; right: the peak resident memory of the point
# (VmHWM, reset before it), with its fitted exponent likewise. Every variant the file has
# train rows for, in the order they first appear (the sweep runs fused softmax,
# materializing softmax, linear and causal linear).
# Reads ../results/scaling_train.csv (`linattn scaling --pass train`: its first line
# names the experiment scaling_train, every row is a forward + backward point); writes
# scaling_train.png|svg. A file without ok rows is reported on stderr and nothing is
# drawn. `linattn plot` picks this script for such files (and gives formats, outputs,
# subtitle); by hand: gnuplot -e 'data="x/scaling_train.csv"; out="x/scaling_train"'
# scaling_train.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling_train.csv"
if (!exists("out")) out = "scaling_train"

names = series(data, "variant")
n = words(names)
if (n == 0) {
    print sprintf("scaling_train.gp: no rows in %s (run linattn scaling --pass train); nothing drawn", data)
    exit
}

# a row's value of column c when it is an ok train point of variant v, else NaN
train(v, c) = (strcol("variant") eq v && strcol("status") eq "ok") ? column(c) : NaN
is_train(v) = (strcol("variant") eq v && strcol("status") eq "ok") ? 1 : 0

# least-squares slope of log(c) against log(n) over each variant's points with
# n >= sqrt(n_min · n_max) (at least 2 such points; else no fit: slope -99)
array t_slope[n]
array t_pref[n]
array m_slope[n]
array fit_lo[n]
array fit_hi[n]
do for [i=1:n] {
    v = word(names, i)
    t_slope[i] = -99; m_slope[i] = -99
    stats data using (is_train(v)) nooutput
    if (STATS_sum >= 2) {
        stats data using (train(v, "n")) nooutput
        fit_lo[i] = sqrt(STATS_min * STATS_max); fit_hi[i] = STATS_max
        upper(c) = column("n") >= fit_lo[i] ? train(v, c) : NaN
        stats data using (column("n") >= fit_lo[i] ? is_train(v) : 0) nooutput
        if (STATS_sum >= 2) {
            stats data using (log(upper("n"))):(log(upper("median_s"))) nooutput
            t_slope[i] = STATS_slope; t_pref[i] = exp(STATS_intercept)
            stats data using (log(upper("n"))):(log(upper("peak_rss_bytes"))) nooutput
            m_slope[i] = STATS_slope
        }
    }
}
t_label(i) = t_slope[i] > -99 ? sprintf("%s: slope %.2f", title_of(word(names, i)), t_slope[i]) : sprintf("%s: no fit", title_of(word(names, i)))
m_label(i) = m_slope[i] > -99 ? sprintf("%s: slope %.2f", title_of(word(names, i)), m_slope[i]) : sprintf("%s: no fit", title_of(word(names, i)))
t_fit(i, x) = (t_slope[i] > -99 && x >= fit_lo[i] && x <= fit_hi[i]) ? t_pref[i] * x**t_slope[i] : NaN
MiB = 1048576.0

stats data using (strcol("status") eq "ok" ? column("n") : NaN) nooutput
n_lo = STATS_min * 0.8; n_hi = STATS_max * 1.25
# each panel's key sits at its top left, above the curves: the y ranges reach three
# decades (time) and two (memory) past the largest value, which the small N beneath the
# key never come near
stats data using (strcol("status") eq "ok" ? column("median_s") : NaN) nooutput
t_top = STATS_max * 1000
stats data using (strcol("status") eq "ok" ? column("peak_rss_bytes") / 1048576.0 : NaN) nooutput
m_top = STATS_max * 100

do for [fmt in formats] {
    eval term(fmt, out, 1700, 720)
    set multiplot layout 1,2 title heading("Training cost of attention: forward + backward against sequence length N (float32)") font ",15"

    set title "time per forward + backward call" font ",13"
    set xlabel "sequence length N (tokens, N = M)"
    set ylabel "time per call (s), median of repetitions"
    set logscale x 2
    set logscale y 10
    set xrange [n_lo : n_hi]
    set format x "%.0f"
    set xtics 1, 2 font ",10"
    set mxtics 1
    set format y "10^{%L}"
    set yrange [* : t_top]
    set key top left font ",10"
    set bars small
    set label 1 "bars: interquartile range of the repetitions; dotted: least-squares fit over the upper half of each curve" at graph 0.99, graph 0.03 right font ",9" tc rgb "#555555"
    plot for [i=1:n] data using (train(word(names, i), "n")):(train(word(names, i), "median_s")):(train(word(names, i), "q1_s")):(train(word(names, i), "q3_s")) \
             with yerrorlines lc rgb color_of(word(names, i)) pt (i + 3) ps 1.1 title t_label(i), \
         for [i=1:n] t_fit(i, x) with lines lc rgb color_of(word(names, i)) dt 3 lw 2 notitle
    unset label 1

    set title "peak resident memory of the point" font ",13"
    set ylabel "peak resident memory (MiB), VmHWM reset before the point"
    set yrange [* : m_top]
    set label 1 "includes inputs, outputs, gradients, scratch and the program; slope fitted as on the left" at graph 0.99, graph 0.03 right font ",9" tc rgb "#555555"
    plot for [i=1:n] data using (train(word(names, i), "n")):(train(word(names, i), "peak_rss_bytes") / MiB) \
             with linespoints lc rgb color_of(word(names, i)) pt (i + 3) ps 1.1 title m_label(i)
    unset label 1
    unset multiplot
    set output
}
