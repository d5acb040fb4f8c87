# accuracy_distance.gp — how far the approximating variants are from exact softmax
# attention (left: each variant of the distance study at its budget, the budget in its
# legend title, on random inputs or the user's arrays, dashed on inputs with one dominant
# key; the error RMS(y − y_softmax) / RMS(v), error_scale rms_v), and the effect of linear
# attention's ε (right, its curves chosen here by name).
# Reads ../results/accuracy.csv; writes accuracy_distance.png|svg.
# Other files: linattn plot --from x/accuracy.csv, or
#   gnuplot -e 'data="x/accuracy.csv"; out="x/accuracy_distance"' accuracy_distance.gp
load "style.gpi"
if (!exists("data")) data = "../results/accuracy.csv"
if (!exists("out")) out = "accuracy_distance"

if (words(series(data, "error_scale")) == 0) {
    exit error sprintf("accuracy_distance.gp: %s has no error_scale column (an older run): run linattn accuracy again", data)
}
dist(v, input) = (strcol("study") eq "distance" && strcol("variant") eq v && strcol("compared_to") eq "softmax" && \
    strcol("input") eq input && strcol("status") eq "ok" && column("rel_error") >= 1e-12) ? column("rel_error") : NaN
# the distance study's variants and inputs (the first: random or user; dominant_key dashed)
names = series_where(data, "variant", "study", "distance")
d_inputs = series_where(data, "input", "study", "distance")
in1 = words(d_inputs) > 0 ? word(d_inputs, 1) : "random"
has_dom = words(d_inputs) > 1
in1_title = in1 eq "user" ? "your arrays" : "random inputs"
# a variant's legend title with its budget: a fixed letter and the number from the CSV
budget_letter(b) = b eq "window" ? "r" : b eq "proj_rank" ? "k" : b eq "features" ? "m" : ""
array dtitle[words(names) > 0 ? words(names) : 1]
do for [i = 1:words(names)] {
    v = word(names, i)
    bn = word(series_where(data, "budget_name", "variant", v) . " none", 1)
    stats data using ((strcol("study") eq "distance" && strcol("variant") eq v) ? column("budget") : NaN) nooutput
    dtitle[i] = title_of(v) . (budget_letter(bn) ne "" ? sprintf(" (%s = %d)", budget_letter(bn), STATS_max) : "")
}
epsv(v, fm, prec) = (strcol("study") eq "eps" && strcol("variant") eq v && strcol("feature_map") eq fm && \
    strcol("precision") eq prec && strcol("status") eq "ok" && column("eps") > 0) ? column("rel_error") : NaN

stats data using (strcol("study") eq "eps" ? column("n") : NaN) nooutput
eps_n = STATS_max
# the right axis covers every nonzero difference; differences of exactly 0 cannot be
# drawn on it and are counted in a note
eps_ok = 'strcol("study") eq "eps" && strcol("status") eq "ok" && column("eps") > 0'
stats data using (@eps_ok && column("rel_error") > 0 ? column("rel_error") : 1e300) nooutput
lo_r = STATS_min < 1e-17 ? STATS_min / 3 : 1e-17
stats data using (@eps_ok && column("rel_error") > 0 ? column("rel_error") : 0) nooutput
hi_r = STATS_max > 1 ? STATS_max * 3 : 1
stats data using (@eps_ok && column("rel_error") == 0 ? 1 : 0) nooutput
zero_note = STATS_sum > 0 ? sprintf("%d point%s with difference 0 (exact) not drawn on the log axis", STATS_sum, STATS_sum > 1 ? "s" : "") : ""
# the left axis covers every nonzero distance; the N not measured (skipped_mem,
# skipped_time) are hollow markers at its bottom with their status
# errors below 1e-12 are softmax to rounding (local attention while every key is inside
# its window): counted in a note, not drawn, so they do not stretch the axis
dist_ok = 'strcol("study") eq "distance" && strcol("status") eq "ok" && column("rel_error") >= 1e-12'
stats data using (@dist_ok ? column("rel_error") : 1e300) nooutput
lo_l = STATS_min < 1e300 ? STATS_min / 10 : 1e-6
stats data using (@dist_ok ? column("rel_error") : 0) nooutput
hi_l = STATS_max > 0 ? STATS_max * 1000 : 1    # headroom for the key
stats data using ((strcol("study") eq "distance" && strcol("status") eq "ok" && column("rel_error") < 1e-12) ? 1 : 0) nooutput
exact_note = STATS_sum > 0 ? sprintf("%d point%s below 10^{-12} not drawn: softmax to rounding\n(local attention while every key is in its window)", STATS_sum, STATS_sum > 1 ? "s" : "") : ""
stats data using (strcol("study") eq "distance" ? column("n") : 1e300) nooutput
n_lo = STATS_min
stats data using (strcol("study") eq "distance" ? column("n") : 0) nooutput
n_hi = STATS_max
skip_d = 'strcol("study") eq "distance" && strcol("status") ne "ok"'
stats data using (@skip_d ? 1 : 0) nooutput
skipped_l = STATS_sum == 0 ? "" : \
    ', data using (' . skip_d . ' ? column("n") : NaN):(lo_l * 1.6) with points lc rgb "#555555" pt 6 ps 1.4 title "not measured (hollow)"' . \
    ', data using (' . skip_d . ' ? column("n") : NaN):(lo_l * 3):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb "#555555" notitle'

do for [fmt in formats] {
    eval term(fmt, out, 1500, 750)
    set multiplot layout 1,2 title heading("How far apart the attention variants are") font ",15"

    set title "each approximation against exact softmax on the same inputs (float64)" font ",13"
    set xlabel "sequence length N (tokens, N = M)"
    set ylabel "error  RMS(y − y_{softmax}) / RMS(v)"
    set logscale x 2
    set logscale y 10
    set format x "%.0f"
    set xtics 1, 4
    set format y "10^{%L}"
    set xrange [n_lo / 1.3 : n_hi * 1.3]
    set yrange [lo_l : hi_l]
    set key inside top left font ",10" maxrows 3 width -2
    set label 2 exact_note at graph 0.98, graph 0.79 right font ",9" tc rgb "#555555"
    plot for [i = 1:words(names)] data using (column("n")):(dist(word(names, i), in1)) with linespoints lc rgb color_of(word(names, i)) pt 7 title dtitle[i], \
         for [i = 1:(has_dom ? words(names) : 0)] data using (column("n")):(dist(word(names, i), "dominant_key")) with linespoints lc rgb color_of(word(names, i)) dt 2 pt 6 notitle, \
         NaN with lines lc rgb "#555555" title in1_title . " (solid)", \
         NaN with lines lc rgb "#555555" dt 2 title (has_dom ? "one dominant key (dashed)" : "") @skipped_l

    set title sprintf("linear attention: effect of ε in φ(q)^TS / (φ(q)^Tz + ε), N = %d", eps_n) font ",13"
    set xlabel "ε"
    set xrange [*:*]
    set ylabel "relative difference"
    set xtics auto
    set logscale x 10
    set format x "10^{%L}"
    set yrange [lo_r : hi_r]
    set label 1 zero_note at graph 0.02, graph 0.03 font ",10" tc rgb "#555555"
    unset label 2
    set key inside top left font ",10" maxrows auto width 0
    plot data using (column("eps")):(epsv("linear", "elu", "float64")) with linespoints lc rgb c_linear pt 7 title "output at ε vs ε = 0: elu+1", \
         data using (column("eps")):(epsv("linear_causal_chunked", "elu", "float64")) with linespoints lc rgb c_linear_c pt 7 title "  elu+1, causal", \
         data using (column("eps")):(epsv("linear", "relu", "float64")) with linespoints lc rgb c_linear dt 2 pt 6 title "  relu", \
         data using (column("eps")):(epsv("linear_causal_chunked", "relu", "float64")) with linespoints lc rgb c_linear_c dt 2 pt 6 title "  relu, causal", \
         data using (column("eps")):(epsv("linear", "elu", "float32")) with lines lc rgb "#555555" dt 3 title "float32 kernel vs float64 reference at the same ε (elu+1)"
    unset label 1
    unset multiplot
    set output
}
