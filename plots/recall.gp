# recall.gp — multi-query associative recall (Zoology) trained per attention variant: the
# final held-out accuracy on the answers, left against the number of key-value pairs K
# at a fixed width D (the rows of study pairs and both), right against the width D at a
# fixed K (study width and both). Where a fixed-size state stops being enough, its
# variant falls below softmax.
# Reads ../results/recall.csv (`linattn recall`); writes recall.png|svg.
# By hand: gnuplot -e 'data="x/recall.csv"; out="x/recall"' recall.gp
load "style.gpi"
if (!exists("data")) data = "../results/recall.csv"
if (!exists("out")) out = "recall"

names = series(data, "variant")
if (words(names) == 0) {
    print sprintf("recall.gp: no rows in %s (run linattn recall); nothing drawn", data)
    exit
}
# an ok row of variant v in study s (the shared point, study both, is in each): column c
rk(v, s, c) = (strcol("variant") eq v && strcol("status") eq "ok" && \
               (strcol("study") eq s || strcol("study") eq "both")) ? column(c) : NaN
both(c) = (strcol("study") eq "both" && strcol("status") eq "ok") ? column(c) : NaN
stats data using (both("width")) nooutput
w_fixed = STATS_max
stats data using (both("pairs")) nooutput
k_fixed = STATS_max
stats data using (both("steps")) nooutput
n_steps = STATS_max
stats data using (both("vocab")) nooutput
n_vocab = STATS_max
stats data using (rk(word(names, 1), "pairs", "pairs")) nooutput
k_lo = STATS_min / 1.4; k_hi = STATS_max * 1.4
stats data using (rk(word(names, 1), "width", "width")) nooutput
w_lo = STATS_min / 1.4; w_hi = STATS_max * 1.4
pts = "7 5 9 13 11 15"

do for [fmt in formats] {
    eval term(fmt, out, 1500, 620)
    set multiplot layout 1, 2 title heading(sprintf("Multi-query associative recall, 2 layers, vocabulary %d, %d steps", n_vocab, n_steps)) font ",15"
    set grid xtics ytics lc rgb "#dddddd"
    set logscale x 2
    set yrange [0 : 1.05]
    set ylabel "held-out accuracy on the answers"
    set key outside right top Left reverse font ",10" spacing 1.1

    set title sprintf("against the key-value pairs K, width D = %d", w_fixed) font ",12"
    set xlabel "key-value pairs K (N: see the data)"
    set xrange [k_lo : k_hi]
    plot for [i=1:words(names)] data using (rk(word(names, i), "pairs", "pairs")):(rk(word(names, i), "pairs", "eval_accuracy")) \
         smooth unique with linespoints lc rgb color_of(word(names, i)) pt 0 + word(pts, 1 + (i - 1) % 6) ps 1 \
         title title_of(word(names, i))

    set title sprintf("against the width D, K = %d pairs", k_fixed) font ",12"
    set xlabel "model width D (heads of 16)"
    set xrange [w_lo : w_hi]
    plot for [i=1:words(names)] data using (rk(word(names, i), "width", "width")):(rk(word(names, i), "width", "eval_accuracy")) \
         smooth unique with linespoints lc rgb color_of(word(names, i)) pt 0 + word(pts, 1 + (i - 1) % 6) ps 1 \
         title title_of(word(names, i))
    unset multiplot
    set output
}
