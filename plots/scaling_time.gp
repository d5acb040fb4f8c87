# scaling_time.gp — time per call against N, log-log, one line per kernel (every
# variant in the CSV, in the order it first appears) and per group when several runs are
# overlaid (linattn plot: the legend names what differs, d = 32, d = 64), with the
# exponent fitted over the upper half of each curve in the legend, N and N² guides, and
# the points not measured marked at the bottom. The kernels are drawn in panels side by
# side, at most 6 series to a panel: the quadratic ones (softmax and its score
# functions, hard), the linear-attention family (linear, Taylor), the approximations
# (local, Linformer, FAVOR+), by the registry's rows; each panel's legend sits below its
# data, and every panel has the same axes.
# Reads ../results/scaling.csv and ../results/scaling_fit.csv; writes scaling_time.png|svg.
# Other files: linattn plot --from x/scaling.csv, or
#   gnuplot -e 'data="x/scaling.csv"; fits="x/scaling_fit.csv"; out="x/scaling_time"' scaling_time.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("fits")) fits = "../results/scaling_fit.csv"
if (!exists("out")) out = "scaling_time"
eval groups_default
eval all_variants
eval choose_bars
n = words(names)
if (n == 0) { exit error sprintf("scaling_time.gp: no variant in %s", data) }

# the axes: every row's N; the ok points' bars (1e300 / 0: no such point)
xmin = 1e300; xmax = 0; ymin = 1e300; ymax = 0
do for [g=1:ngroups] {
    stats gfile[g] using (in_group(g) ? column("n") : 1e300) nooutput   # a group may have no rows
    xmin = STATS_min < xmin ? STATS_min : xmin
    stats gfile[g] using (in_group(g) ? column("n") : 0) nooutput
    xmax = STATS_max > xmax ? STATS_max : xmax
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" && column(bar_lo) > 0 ? column(bar_lo) : 1e300) nooutput
    ymin = STATS_min < ymin ? STATS_min : ymin
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" && column(bar_hi) > 0 ? column(bar_hi) : 0) nooutput
    ymax = STATS_max > ymax ? STATS_max : ymax
}
if (ymax == 0) { ymin = 1e-6; ymax = 1 }
ybot = ymin / 6

# one series per group and variant that has points: the measured curve, its fitted
# slope in the legend and dotted fit line, and the markers of the points not measured
array slope[ngroups * n]
array ci_lo[ngroups * n]     # the exponent's confidence interval when the fit file has one
array ci_hi[ngroups * n]
array pref[ngroups * n]
array nmin[ngroups * n]
array nmax[ngroups * n]
# the panels: each variant's family (1 quadratic, 2 linear attention, 3 approximations),
# then at most per_panel variants (6 series with the overlaid groups) to a panel
# (linattn plot passes the registry's lists, series_quadratic and series_linear; these
# defaults serve a run by hand)
if (!exists("series_quadratic")) series_quadratic = " softmax softmax_causal softmax_materialized softmax_materialized_causal hard hard_causal general general_causal additive additive_causal cosine cosine_causal relative relative_causal "
if (!exists("series_linear")) series_linear = " linear linear_causal_chunked linear_causal_recurrent taylor taylor_causal_chunked "
family(v) = strstrt(series_linear, " ".v." ") > 0 ? 2 : (strstrt(series_quadratic, " ".v." ") > 0 ? 1 : 3)
per_panel = int(6 / ngroups) > 0 ? int(6 / ngroups) : 1
array panel_of[n]
npanels = 0
do for [f=1:3] {
    k = 0
    do for [i=1:n] {
        if (family(word(names, i)) == f) {
            if (k % per_panel == 0) { npanels = npanels + 1 }
            panel_of[i] = npanels
            k = k + 1
        }
    }
}
array curves[npanels]
array fits_drawn[npanels]
array skipped[npanels]
array has_skipped[npanels]
array panel_family[npanels]
do for [p=1:npanels] { curves[p] = ""; fits_drawn[p] = ""; skipped[p] = ""; has_skipped[p] = 0 }
do for [i=1:n] { panel_family[panel_of[i]] = family(word(names, i)) }
# each variant's place among its panel's (the markers of points not measured spread by it)
array rank_in[n]
array pcount[npanels]
do for [p=1:npanels] { pcount[p] = 0 }
do for [i=1:n] { pcount[panel_of[i]] = pcount[panel_of[i]] + 1; rank_in[i] = pcount[panel_of[i]] }
n_skipped = 0
do for [g=1:ngroups] {
    do for [i=1:n] {
        v = word(names, i)
        s = (g - 1) * n + i
        slope[s] = -1
        ci_lo[s] = -1
        if (gaux[g] ne "" && has_col(gaux[g], "fitted_exponent") && has_col(gaux[g], "prefactor_s") && \
            has_col(gaux[g], "fit_n_min") && has_col(gaux[g], "fit_n_max")) {
            stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("fitted_exponent") : -1) nooutput
            slope[s] = STATS_max
            stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("prefactor_s") : -1) nooutput
            pref[s] = STATS_max
            stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("fit_n_min") : -1) nooutput
            nmin[s] = STATS_max
            stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("fit_n_max") : -1) nooutput
            nmax[s] = STATS_max
            if (has_col(gaux[g], "exponent_ci_lo") && has_col(gaux[g], "exponent_ci_hi")) {
                stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("exponent_ci_lo") : -1) nooutput
                ci_lo[s] = STATS_max
                stats gaux[g] using (strcol("variant") eq v && in_aux(g) ? column("exponent_ci_hi") : -1) nooutput
                ci_hi[s] = STATS_max
            }
        }
        stats gfile[g] using (okg(g, v, "median_s") > 0 ? 1 : 0) nooutput
        p = panel_of[i]
        if (STATS_sum > 0) {
            curves[p] = curves[p] . sprintf('gfile[%d] using (okg(%d, word(names, %d), "n")):(okg(%d, word(names, %d), "median_s")):(okg(%d, word(names, %d), bar_lo)):(okg(%d, word(names, %d), bar_hi)) with yerrorlines lc rgb color_of(word(names, %d)) dt %d pt %d ps 1.1 title label(%d, %d), ', \
                                      g, g, i, g, i, g, i, g, i, i, g, ngroups > 1 ? g_pt(g) : i + 3, g, i)
            if (slope[s] > 0) {
                fits_drawn[p] = fits_drawn[p] . sprintf('fitline(%d, x) with lines lc rgb color_of(word(names, %d)) dt 3 lw 2 notitle, ', s, i)
            }
        }
        stats gfile[g] using (not_ok(g, v) ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            n_skipped = n_skipped + STATS_sum
            has_skipped[p] = 1
            skipped[p] = skipped[p] . sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, %d) : NaN):(ybot * 1.6) with points lc rgb color_of(word(names, %d)) pt 6 ps 1.3 notitle, ', g, g, i, rank_in[i], pcount[p], i) . \
                                sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, %d) : NaN):(ybot * 2.3):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb color_of(word(names, %d)) notitle, ', g, g, i, rank_in[i], pcount[p], i)
        }
    }
}
ci_shown = 0
do for [s=1:ngroups * n] { if (ci_lo[s] > 0) { ci_shown = 1 } }
slope_text(s) = slope[s] <= 0 ? "no fit" : ci_lo[s] > 0 ? sprintf("slope %.2f [%.2f, %.2f]", slope[s], ci_lo[s], ci_hi[s]) : \
                sprintf("slope %.2f", slope[s])
label(g, i) = g_title(g, sprintf("%s: %s", title_of(word(names, i)), slope_text((g - 1) * n + i)))
fitline(s, x) = (slope[s] > 0 && x >= nmin[s] && x <= nmax[s]) ? pref[s] * x**slope[s] : NaN
do for [p=1:npanels] {
    if (has_skipped[p]) { skipped[p] = skipped[p] . 'keyentry with points pt 6 ps 1.3 lc rgb "#555555" title not_measured_key, ' }
}

# guides through the first group's fused softmax and linear curves, offset so they do not
# hide them: N² in the quadratic kernels' panels, N in the others
guides2 = ""
guides1 = ""
stats gfile[1] using (okg(1, "softmax", "median_s") > 0 ? 1 : 0) nooutput
if (STATS_sum > 0) {
    stats gfile[1] using (okg(1, "softmax", "n")) nooutput
    n0 = STATS_min
    stats gfile[1] using (okg(1, "softmax", "median_s")) nooutput
    t0 = STATS_min
    guides2 = 'guide2(x) with lines lc rgb "black" dt 2 lw 1.5 title "∝ N^2 (guide)", '
}
guide2(x) = 0.25 * t0 * (x / n0)**2
stats gfile[1] using (okg(1, "linear", "median_s") > 0 ? 1 : 0) nooutput
if (STATS_sum > 0) {
    stats gfile[1] using (okg(1, "linear", "n")) nooutput
    n1 = STATS_max
    stats gfile[1] using (okg(1, "linear", "median_s")) nooutput
    t1 = STATS_max
    guides1 = 'guide1(x) with lines lc rgb "#555555" dt 4 lw 1.5 title "∝ N (guide)", '
}
guide1(x) = 4 * t1 * (x / n1)

panel_title(f) = f == 1 ? "softmax, its score functions and hard attention: ∝ N^2" : \
                 f == 2 ? "linear attention: ∝ N" : "approximations of softmax: ∝ N"
set xrange [xmin * 0.7 : xmax * 1.3]
set yrange [ybot : ymax * 3]
set xlabel "sequence length N (tokens, N = M)"
set ylabel "time per call (s), median of repetitions"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 4 font ",10"
set mxtics 1
set format y "10^{%L}"
set bars small
set key at graph 0, graph -0.17 left top Left reverse font ",10" spacing 1.1 box
# the same data area in every panel, the legends in the band below it
set tmargin at screen 0.87
set bmargin at screen 0.33

do for [fmt in formats] {
    eval term(fmt, out, 80 + (ngroups > 1 ? 900 : 620) * npanels, 900)
    set multiplot layout 1, npanels title heading("Attention time against sequence length N") font ",15"
    set label 1 bars_note . "; dotted: least-squares fit over the upper half of each curve" . \
                (ci_shown ? ", [95% interval of the slope]" : "") at screen 0.5, screen 0.012 center font ",10" tc rgb "#555555"
    do for [p=1:npanels] {
        set title panel_title(panel_family[p]) font ",12"
        eval "plot " . curves[p] . fits_drawn[p] . skipped[p] . (panel_family[p] == 1 ? guides2 : guides1) . " NaN notitle"
        unset label 1
    }
    unset multiplot
    set output
}
