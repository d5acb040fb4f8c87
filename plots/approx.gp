# approx.gp — error against cost: each variant's relative error against exact softmax
# attention (float64 outputs) against the FLOPs it spends, one panel per kind of input
# (random, dominant keys, local pattern), one curve per variant through its budgets
# (window r, rank k, features m; the mean over seeds, each seed a small hollow marker),
# log-log; the dashed vertical line is exact softmax's cost. Each budget point is labelled
# with its budget (r = window, k = rank, m = features), at the first seed's error.
# Variants without a budget (linear, hard) are single points. Rows with error 0 (softmax
# itself) are not drawn. The note under the panels says why FAVOR+ stays above 1 on
# random inputs.
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
all = series(data, "variant")
names = ""
do for [v in all] { if (v ne "softmax" && v ne "softmax_materialized") { names = names . (names eq "" ? "" : " ") . v } }

# an ok row of variant v on inputs kind: column c, else NaN
pt(v, kind, c) = (strcol("variant") eq v && strcol("inputs") eq kind && strcol("status") eq "ok" && \
                  column("rel_error") > 0) ? column(c) : NaN
# the budget's label of an ok row of variant v on inputs kind at the first seed
stats data using "seed" nooutput
seed0 = STATS_min
budget_letter(b) = b eq "window" ? "r" : b eq "proj_rank" ? "k" : b eq "features" ? "m" : ""
lbl_ok(v, kind) = strcol("variant") eq v && strcol("inputs") eq kind && strcol("status") eq "ok" && \
                  column("rel_error") > 0 && column("seed") == seed0 && budget_letter(strcol("budget_name")) ne ""
lbl_x(v, kind) = lbl_ok(v, kind) ? column("flops") : NaN
lbl_text(v, kind) = lbl_ok(v, kind) ? sprintf("%s=%d", budget_letter(strcol("budget_name")), column("budget")) : ""
budgeted = ""   # the variants with budgets: only they get labels
do for [v in names] {
    stats data using ((strcol("variant") eq v && strcol("budget_name") ne "none") ? 1 : 0) nooutput
    if (STATS_sum > 0) { budgeted = budgeted . (budgeted eq "" ? "" : " ") . v }
}
kind_title(k) = k eq "random" ? "random N(0, 1) inputs" : k eq "dominant" ? "each query: 2 dominant keys" : \
                k eq "local" ? "each query: its nearby keys score high" : esc(k)

stats data using ((strcol("variant") eq "softmax" && strcol("status") eq "ok") ? column("flops") : NaN) nooutput
soft_flops = STATS_max
stats data using ((strcol("status") eq "ok" && column("rel_error") > 0) ? column("rel_error") : NaN) nooutput
e_lo = STATS_min / 2; e_hi = STATS_max * 4
stats data using ((strcol("status") eq "ok") ? column("flops") : NaN) nooutput
f_lo = STATS_min / 2; f_hi = (STATS_max > soft_flops ? STATS_max : soft_flops) * 2

do for [fmt in formats] {
    eval term(fmt, out, 600 * words(kinds) + 200, 650)
    set bmargin 6
    set label 2 "Labels: the budget of each point (r: window, k: rank, m: random features). FAVOR+ stays above 1 on random inputs: " . \
        "its estimator's variance grows as exp(‖q‖²/√d + ‖k‖²/√d), large for unit-variance inputs; " . \
        "Linformer's projections are drawn at random, not learned." at screen 0.5, screen 0.025 center font ",10" tc rgb "#555555"
    set multiplot layout 1, words(kinds) title heading("Error against cost: approximating softmax attention") font ",15"
    do for [kind in kinds] {
        set title kind_title(kind) font ",12"
        set xlabel "FLOPs per call (cost model)"
        set ylabel "relative error ‖y − y_{softmax}‖ / ‖y_{softmax}‖"
        set logscale xy 10
        set format x "10^{%L}"
        set format y "10^{%L}"
        set xrange [f_lo : f_hi]
        set yrange [e_lo : e_hi]
        set arrow 1 from soft_flops, e_lo to soft_flops, e_hi nohead dt 2 lc rgb c_softmax lw 1.2
        set label 1 "exact softmax" at soft_flops, e_hi / 1.6 right offset -0.5, 0 font ",9" tc rgb c_softmax
        set key bottom left font ",9"
        plot for [v in names] data using (pt(v, kind, "flops")):(pt(v, kind, "rel_error")) smooth unique \
                 with linespoints lc rgb color_of(v) pt 7 ps 0.9 title title_of(v), \
             for [v in names] data using (pt(v, kind, "flops")):(pt(v, kind, "rel_error")) \
                 with points lc rgb color_of(v) pt 6 ps 0.5 notitle, \
             for [v in budgeted] data using (lbl_x(v, kind)):(pt(v, kind, "rel_error")):(lbl_text(v, kind)) \
                 with labels left offset 0.6, (v eq "favor" ? -0.55 : 0.45) font ",8" tc rgb color_of(v) notitle
        unset arrow 1
        unset label 1
    }
    unset multiplot
    unset label 2
    set output
}
