# approx.gp — error against cost: each approximating variant's error against exact softmax
# attention (float64 outputs) against the FLOPs it spends, one panel per kind of input
# (random, dominant keys, local pattern, or the user's arrays), one curve per variant
# through its budgets (the mean over seeds, each seed a small hollow marker), log-log; the
# dashed vertical line is exact softmax's cost. The error is RMS(y − y_softmax) / RMS(v)
# (the file's error column and # error line): a scale that does not shrink as softmax's
# output does when its weights spread. Each point of a variant with a budget is labelled
# with it (r = window, k = rank, m = features), at the first seed's error; variants
# without one (linear, hard, taylor) are single points named in the legend. Rows with
# error 0 (softmax itself) are not drawn. The note under the panels says why FAVOR+ stays
# above linear attention and local windows of its cost on random inputs, and barely falls
# with more features: its positive random features estimate exp(q·k/√d)
# with a relative variance of (exp(‖q + k‖²/√d) − 1)/m (Choromanski et al. 2021, lemma 2),
# exp(2√d)/m for N(0, 1) queries and keys. Measured with linattn approx --q/--k/--v at
# N = 1024, d = 64, q and k N(0, s²) (docs/experiments.md): FAVOR+ at m = 256 has error
# 0.014 at s = 0.5, 0.22 at s = 1 and 0.36 at s = 1.25, and falls as m^(−1/2) only at the
# small s.
# Reads ../results/approx.csv (`linattn approx`); writes approx.png|svg.
# By hand: gnuplot -e 'data="x/approx.csv"; out="x/approx"' approx.gp
load "style.gpi"
if (!exists("data")) data = "../results/approx.csv"
if (!exists("out")) out = "approx"

kinds = series(data, "inputs")
if (words(kinds) == 0) {
    print sprintf("approx.gp: no rows in %s (run linattn approx); nothing drawn", data)
    exit
}
if (words(series(data, "error")) == 0) {
    exit error sprintf("approx.gp: %s has no error column (RMS(y − y_softmax) / RMS(v)): run linattn approx again", data)
}
all = series(data, "variant")
names = ""
do for [v in all] { if (v ne "softmax" && v ne "softmax_materialized") { names = names . (names eq "" ? "" : " ") . v } }

# an ok row of variant v on inputs kind: column c, else NaN
pt(v, kind, c) = (strcol("variant") eq v && strcol("inputs") eq kind && strcol("status") eq "ok" && \
                  column("error") > 0) ? column(c) : NaN
# the budget's label of an ok row of variant v on inputs kind at the first seed: a fixed
# letter and the number (the CSV's text is compared, never drawn or evaluated)
stats data using "seed" nooutput
seed0 = STATS_min
budget_letter(b) = b eq "window" ? "r" : b eq "proj_rank" ? "k" : b eq "features" ? "m" : ""
lbl_ok(v, kind) = strcol("variant") eq v && strcol("inputs") eq kind && strcol("status") eq "ok" && \
                  column("error") > 0 && column("seed") == seed0 && budget_letter(strcol("budget_name")) ne ""
lbl_x(v, kind) = lbl_ok(v, kind) ? column("flops") : NaN
lbl_text(v, kind) = lbl_ok(v, kind) ? sprintf("%s=%d", budget_letter(strcol("budget_name")), column("budget")) : ""
budgeted = ""   # the variants with budgets: only they get labels
do for [v in names] {
    stats data using ((strcol("variant") eq v && strcol("budget_name") ne "none") ? 1 : 0) nooutput
    if (STATS_sum > 0) { budgeted = budgeted . (budgeted eq "" ? "" : " ") . v }
}
# label offsets: the variants with budgets alternate above and below their points
lbl_dy(v) = (int(pos_in(v, budgeted, 1)) % 2) ? 0.55 : -0.55
pos_in(v, s, i) = i > words(s) ? 0 : word(s, i) eq v ? i : pos_in(v, s, i + 1)
kind_title(k) = k eq "random" ? "random N(0, 1) inputs" : k eq "dominant" ? "each query: 2 dominant keys" : \
                k eq "local" ? "each query: its nearby keys score high" : \
                k eq "user" ? "your arrays (--q, --k, --v)" : esc(k)

stats data using ((strcol("variant") eq "softmax" && strcol("status") eq "ok") ? column("flops") : NaN) nooutput
soft_flops = STATS_max
stats data using ((strcol("status") eq "ok" && column("error") > 0) ? column("error") : NaN) nooutput
e_lo = STATS_min / 2; e_hi = STATS_max * 4
stats data using ((strcol("status") eq "ok") ? column("flops") : NaN) nooutput
f_lo = STATS_min / 2; f_hi = (STATS_max > soft_flops ? STATS_max : soft_flops) * 4   # room for the last label

# the notes under the panels, one line each (short enough for a one-panel figure)
notes = "Error: RMS(y − y_{softmax}) / RMS(v), both in float64; softmax's output rows are weighted averages of v's rows,|" . \
        "so 1 is an error as large as a typical value. Labels: each point's budget (r: window, k: Linformer rank, m: FAVOR+ features).|" . \
        "On random inputs FAVOR+ stays above linear attention and the local windows of its cost, and more features barely lower its error:|" . \
        "its positive random features estimate exp(q·k/√d) with relative variance (exp(‖q + k‖^2/√d) − 1)/m, about exp(2√d)/m|" . \
        "for N(0, 1) q and k, far more than m ≤ 4096 features average away; with q and k scaled down (‖q + k‖^2/√d small)|" . \
        "the variance is small and the error falls as m^{−1/2}. Linformer's projections are random, not learned."
n_notes = 6
fig_w = 600 * words(kinds) + 300 < 1100 ? 1100 : 600 * words(kinds) + 300

do for [fmt in formats] {
    eval term(fmt, out, fig_w, 820)
    set bmargin 11
    rest = notes
    do for [i = 1:n_notes] {
        line = i < n_notes ? rest[1:strstrt(rest, "|") - 1] : rest
        rest = i < n_notes ? rest[strstrt(rest, "|") + 1:] : ""
        set label (10 + i) line at screen 0.5, screen 0.018 + (n_notes - i) * 0.022 center font ",10" tc rgb "#555555"
    }
    set multiplot layout 1, words(kinds) title heading("Error against cost: approximating softmax attention") font ",15"
    do for [kind in kinds] {
        set title kind_title(kind) font ",12"
        set xlabel "FLOPs per call (cost model)"
        set ylabel "error  RMS(y − y_{softmax}) / RMS(v)"
        set logscale xy 10
        set format x "10^{%L}"
        set format y "10^{%L}"
        set xrange [f_lo : f_hi]
        set yrange [e_lo : e_hi]
        set arrow 1 from soft_flops, e_lo to soft_flops, e_hi nohead dt 2 lc rgb c_softmax lw 1.2
        set label 1 "exact softmax" at soft_flops, e_hi / 1.6 right offset -0.5, 0 font ",9" tc rgb c_softmax
        set key bottom left font ",9"
        plot for [v in names] data using (pt(v, kind, "flops")):(pt(v, kind, "error")) smooth unique \
                 with linespoints lc rgb color_of(v) pt 7 ps 0.9 title title_of(v), \
             for [v in names] data using (pt(v, kind, "flops")):(pt(v, kind, "error")) \
                 with points lc rgb color_of(v) pt 6 ps 0.5 notitle, \
             for [v in budgeted] data using (lbl_x(v, kind)):(pt(v, kind, "error")):(lbl_text(v, kind)) \
                 with labels left offset 0.6, lbl_dy(v) font ",8" tc rgb color_of(v) notitle
        unset arrow 1
        unset label 1
    }
    unset multiplot
    do for [i = 1:n_notes] { unset label (10 + i) }
    set output
}
