# complexity.gp — Vaswani et al.'s Table 1 measured: time of one layer against N at fixed
# d, log-log, one line per layer type (self-attention, recurrent, convolutional,
# restricted self-attention, linear attention and its recurrent form), interquartile
# bars, the exponent fitted over the upper half of each curve (with its 95% interval) and
# the theory's complexity in the legend, N and N² guides, points not measured marked at
# the bottom.
# Reads ../results/complexity.csv and ../results/complexity_fit.csv; writes complexity.png|svg.
# Other files: linattn plot --from x/complexity.csv, or
#   gnuplot -e 'data="x/complexity.csv"; fits="x/complexity_fit.csv"; out="x/complexity"' complexity.gp
load "style.gpi"
if (!exists("data")) data = "../results/complexity.csv"
if (!exists("fits")) fits = "../results/complexity_fit.csv"
if (!exists("out")) out = "complexity"
eval groups_default
eval choose_bars
names = series(gfile[1], "layer")
n = words(names)
if (n == 0) { exit error sprintf("complexity.gp: no layer in %s", gfile[1]) }

# a row of layer v: its column c when it is an ok point, else NaN; whether it was not measured
okl(v, c) = (strcol("layer") eq v && strcol("status") eq "ok" && in_group(1)) ? column(c) : NaN
not_okl(v) = strcol("layer") eq v && strcol("status") ne "ok" && strcol("status") ne "" && in_group(1)

# the layer types' names, complexities and colours (the attention rows in the colours of
# the other figures)
layer_title(v) = v eq "self_attention" ? "self-attention, O(N^2·d)" : \
                 v eq "recurrent" ? "recurrent, O(N·d^2)" : \
                 v eq "convolutional" ? "convolutional, O(k·N·d^2)" : \
                 v eq "restricted_attention" ? "restricted self-attention, O(r·N·d)" : \
                 v eq "linear_attention" ? "linear attention, O(N·d^2)" : \
                 v eq "linear_attention_recurrent" ? "linear attention, recurrent, O(N·d^2)" : esc(v)
layer_color(v) = v eq "self_attention" ? c_softmax : v eq "recurrent" ? "#43a047" : \
                 v eq "convolutional" ? "#283593" : v eq "restricted_attention" ? "#d81b60" : \
                 v eq "linear_attention" ? c_linear : v eq "linear_attention_recurrent" ? c_linear_r : \
                 palette_at(1 + name_hash(v))

# the axes: every row's N; the ok points' bars
stats gfile[1] using (in_group(1) ? column("n") : 1e300) nooutput
xmin = STATS_min
stats gfile[1] using (in_group(1) ? column("n") : 0) nooutput
xmax = STATS_max
stats gfile[1] using (in_group(1) && strcol("status") eq "ok" && column(bar_lo) > 0 ? column(bar_lo) : 1e300) nooutput
ymin = STATS_min
stats gfile[1] using (in_group(1) && strcol("status") eq "ok" && column(bar_hi) > 0 ? column(bar_hi) : 0) nooutput
ymax = STATS_max
if (ymax == 0) { ymin = 1e-6; ymax = 1 }
ybot = ymin / 6

# per layer: the measured curve, its fitted slope (legend, dotted line), skipped points
array slope[n]
array ci_lo[n]
array ci_hi[n]
array pref[n]
array nmin[n]
array nmax[n]
have_fits = gaux[1] ne "" && has_col(gaux[1], "fitted_exponent") && has_col(gaux[1], "prefactor_s")
curves = ""
fits_drawn = ""
skipped = ""
n_skipped = 0
do for [i=1:n] {
    v = word(names, i)
    slope[i] = -1
    ci_lo[i] = -1
    if (have_fits) {
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("fitted_exponent") : -1) nooutput
        slope[i] = STATS_max
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("prefactor_s") : -1) nooutput
        pref[i] = STATS_max
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("fit_n_min") : -1) nooutput
        nmin[i] = STATS_max
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("fit_n_max") : -1) nooutput
        nmax[i] = STATS_max
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("exponent_ci_lo") : -1) nooutput
        ci_lo[i] = STATS_max
        stats gaux[1] using (strcol("layer") eq v && in_aux(1) ? column("exponent_ci_hi") : -1) nooutput
        ci_hi[i] = STATS_max
    }
    stats gfile[1] using (okl(v, "median_s") > 0 ? 1 : 0) nooutput
    if (STATS_sum > 0) {
        curves = curves . sprintf('gfile[1] using (okl(word(names, %d), "n")):(okl(word(names, %d), "median_s")):(okl(word(names, %d), bar_lo)):(okl(word(names, %d), bar_hi)) with yerrorlines lc rgb layer_color(word(names, %d)) pt %d ps 1.1 title label(%d), ', \
                                  i, i, i, i, i, i + 3, i)
        if (slope[i] > 0) {
            fits_drawn = fits_drawn . sprintf('fitline(%d, x) with lines lc rgb layer_color(word(names, %d)) dt 3 lw 2 notitle, ', i, i)
        }
    }
    stats gfile[1] using (not_okl(v) ? 1 : 0) nooutput
    if (STATS_sum > 0) {
        n_skipped = n_skipped + STATS_sum
        skipped = skipped . sprintf('gfile[1] using (not_okl(word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(ybot * 1.6) with points lc rgb layer_color(word(names, %d)) pt 6 ps 1.3 notitle, ', i, i, i) . \
                            sprintf('gfile[1] using (not_okl(word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(ybot * 2.3):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb layer_color(word(names, %d)) notitle, ', i, i, i)
    }
}
ci_shown = 0
do for [i=1:n] { if (ci_lo[i] > 0) { ci_shown = 1 } }
slope_text(i) = slope[i] <= 0 ? "no fit" : ci_lo[i] > 0 ? sprintf("slope %.2f [%.2f, %.2f]", slope[i], ci_lo[i], ci_hi[i]) : \
                sprintf("slope %.2f", slope[i])
label(i) = sprintf("%s: %s", layer_title(word(names, i)), slope_text(i))
fitline(i, x) = (slope[i] > 0 && x >= nmin[i] && x <= nmax[i]) ? pref[i] * x**slope[i] : NaN
if (n_skipped > 0) { skipped = skipped . 'keyentry with points pt 6 ps 1.3 lc rgb "#555555" title not_measured_key, ' }

# guides: ∝ N² under self-attention's first point, ∝ N under the recurrent layer's last
guides = ""
stats gfile[1] using (okl("self_attention", "median_s") > 0 ? 1 : 0) nooutput
if (STATS_sum > 0) {
    stats gfile[1] using (okl("self_attention", "n")) nooutput
    n0 = STATS_min
    stats gfile[1] using (okl("self_attention", "median_s")) nooutput
    t0 = STATS_min
    guides = guides . 'guide2(x) with lines lc rgb "black" dt 2 lw 1.5 title "∝ N^2 (guide)", '
}
guide2(x) = 0.25 * t0 * (x / n0)**2
stats gfile[1] using (okl("recurrent", "median_s") > 0 ? 1 : 0) nooutput
if (STATS_sum > 0) {
    stats gfile[1] using (okl("recurrent", "n")) nooutput
    n1 = STATS_max
    stats gfile[1] using (okl("recurrent", "median_s")) nooutput
    t1 = STATS_max
    guides = guides . 'guide1(x) with lines lc rgb "#555555" dt 4 lw 1.5 title "∝ N (guide)", '
}
guide1(x) = 0.3 * t1 * (x / n1)

set xrange [xmin * 0.8 : xmax * 1.25]
set yrange [ybot : ymax * 100]   # headroom for the key
set title heading("Time of one layer against sequence length N (Vaswani et al., Table 1)") font ",15"
set xlabel "sequence length N (positions)"
set ylabel "time per call (s), median of repetitions"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 2 font ",10"
set mxtics 1
set format y "10^{%L}"
set key top left font ",10"
set bars small
set bmargin 5
set label 1 bars_note . "; dotted: least-squares fit over the upper half of each curve" . \
            (ci_shown ? ", [95% interval of the slope]" : "") at screen 0.99, screen 0.02 right font ",10" tc rgb "#555555"

eval png(out)
plot @curves @fits_drawn @skipped @guides NaN notitle
eval svg(out)
