# accuracy_error.gp — float32 (and float64) error of each kernel against the float64
# reference as N grows (left: every variant of the study error_vs_n, in the order it
# first appears; one with error 0 everywhere is exact and only named), and the chunked
# causal linear kernel for every chunk size against the recurrent kernel and the
# reference (right). Reads ../results/accuracy.csv; writes accuracy_error.png|svg.
# Other files: linattn plot --from x/accuracy.csv, or
#   gnuplot -e 'data="x/accuracy.csv"; out="x/accuracy_error"' accuracy_error.gp
load "style.gpi"
if (!exists("data")) data = "../results/accuracy.csv"
if (!exists("out")) out = "accuracy_error"

err(study, v, prec, cmp) = (strcol("study") eq study && strcol("variant") eq v && \
    strcol("precision") eq prec && strcol("compared_to") eq cmp && strcol("status") eq "ok") ? column("rel_error") : NaN
at_n(study, v, prec) = err(study, v, prec, "reference_f64") > 0 ? column("n") : NaN

# the kernels of the left panel; an exact one (no error above 0) cannot be drawn on a log scale
names = ""
exact = ""
n_exact = 0
do for [v in series_where(data, "variant", "study", "error_vs_n")] {
    stats data using (err("error_vs_n", v, "float32", "reference_f64") > 0 || \
                      err("error_vs_n", v, "float64", "reference_f64") > 0 ? 1 : 0) nooutput
    if (STATS_sum > 0) { names = names . " " . v } else { exact = exact . (exact eq "" ? "" : "; ") . title_of(v); n_exact = n_exact + 1 }
}
exact_note = n_exact == 0 ? "" : sprintf(n_exact > 1 ? "%s are exact (error 0) and not drawn" : \
                                         "%s attention is exact (error 0) and not drawn", exact)

stats data using (strcol("study") eq "chunk" ? column("n") : NaN) nooutput
chunk_n = STATS_max
stats data using (err("chunk", "linear_causal_recurrent", "float32", "reference_f64")) nooutput
recurrent_err = STATS_max

# each axis covers every nonzero error of its panel (at least its usual range)
nonzero(study) = (strcol("study") eq study && strcol("status") eq "ok" && column("rel_error") > 0)
stats data using (nonzero("error_vs_n") ? column("rel_error") : 1e300) nooutput
lo_l = STATS_min < 1e-17 ? STATS_min / 3 : 1e-17
stats data using (nonzero("error_vs_n") ? column("rel_error") : 0) nooutput
hi_l = STATS_max > 1e-4 ? STATS_max * 3 : 1e-4
stats data using (nonzero("chunk") ? column("rel_error") : 1e300) nooutput
lo_r = STATS_min < 1e-9 ? STATS_min / 3 : 1e-9
stats data using (nonzero("chunk") ? column("rel_error") : 0) nooutput
hi_r = STATS_max > 1e-5 ? STATS_max * 3 : 1e-5
# the N not measured (skipped_mem, skipped_time): hollow at the bottom, with the status
skip_n(v) = strcol("study") eq "error_vs_n" && strcol("variant") eq v && strcol("status") ne "ok"
# (the variants are skipped at the same N, by the reference's budget: one label, of the first)
skipped_l = ""
labelled = 0
do for [i=1:words(names)] {
    stats data using (skip_n(word(names, i)) ? 1 : 0) nooutput
    if (STATS_sum > 0) {
        skipped_l = skipped_l . sprintf(', data using (skip_n(word(names, %d)) ? spread_x(column("n"), %d, words(names)) : NaN):(lo_l * 3) with points lc rgb color_of(word(names, %d)) pt 6 ps 1.3 notitle', i, i, i) . \
                                (labelled ? "" : sprintf(', data using (skip_n(word(names, %d)) ? column("n") : NaN):(lo_l * 8):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb "#555555" notitle', i))
        labelled = 1
    }
}
if (skipped_l ne "") { skipped_l = skipped_l . ', keyentry with points pt 6 ps 1.3 lc rgb "#555555" title "not measured (hollow, at the bottom)"' }

do for [fmt in formats] {
    eval term(fmt, out, 1500, 700)
    set multiplot layout 1,2 title heading("Numerical error of the kernels against the float64 reference (‖y − y_{ref}‖ / ‖y_{ref}‖)") font ",15"

    # left: error against N
    set title "error against sequence length N" font ",13"
    set xlabel "sequence length N (tokens, N = M)"
    set ylabel "relative error"
    set logscale x 2
    set logscale y 10
    set format x "%.0f"
    set xtics 1, 4
    set format y "10^{%L}"
    set yrange [lo_l : hi_l]
    set key at graph 0.98, graph 0.62 right top font ",10"
    set label 1 exact_note at graph 0.02, graph 0.96 font ",10" tc rgb "#555555"
    set label 2 "float32 kernels (solid)" at graph 0.02, graph 0.72 font ",11"
    set label 3 "float64 kernels (dashed)" at graph 0.02, graph 0.22 font ",11"
    plot for [v in names] data using (at_n("error_vs_n", v, "float32")):(err("error_vs_n", v, "float32", "reference_f64")) \
             with linespoints lc rgb color_of(v) pt 7 ps 0.8 title title_of(v), \
         for [v in names] data using (at_n("error_vs_n", v, "float64")):(err("error_vs_n", v, "float64", "reference_f64")) \
             with linespoints lc rgb color_of(v) dt 2 pt 6 ps 0.8 notitle @skipped_l
    unset label 1; unset label 2; unset label 3

    # right: chunk size
    set title sprintf("causal linear attention, float32, N = %d: the chunk size is invisible", chunk_n) font ",13"
    set xlabel "chunk size C (tokens per chunk)"
    set ylabel "relative difference"
    set xtics 1, 2
    set yrange [lo_r : hi_r]
    set key at graph 0.02, graph 0.98 left top font ",10"
    plot data using (err("chunk", "linear_causal_chunked", "float32", "reference_f64") > 0 ? column("chunk") : NaN):(err("chunk", "linear_causal_chunked", "float32", "reference_f64")) \
             with linespoints lc rgb c_linear_c pt 7 title "chunked vs float64 reference", \
         data using (err("chunk", "linear_causal_chunked", "float32", "recurrent_f32") > 0 ? column("chunk") : NaN):(err("chunk", "linear_causal_chunked", "float32", "recurrent_f32")) \
             with linespoints lc rgb c_linear_r pt 5 title "chunked vs recurrent kernel (both float32)", \
         recurrent_err with lines lc rgb "black" dt 2 title "recurrent vs float64 reference"
    unset multiplot
    set output
}
