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

present = series(data, "variant")
# every variant the learning experiments know, in their order: the colours (style.gpi's
# palette, by position in names) are the same in copy_task, recall and train_speed
names = "softmax linear_elu linear_relu taylor favor local"
if (words(present) == 0) {
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
stats data using (rk(word(present, 1), "pairs", "seq_len")) nooutput
n_label = STATS_min == STATS_max ? sprintf("N = %d", STATS_min) : sprintf("N = %d..%d", STATS_min, STATS_max)
stats data using (rk(word(present, 1), "pairs", "pairs")) nooutput
k_lo = STATS_min / 1.4; k_hi = STATS_max * 1.4
stats data using (rk(word(present, 1), "width", "width")) nooutput
w_lo = STATS_min / 1.4; w_hi = STATS_max * 1.4
pts = "7 5 9 13 11 15"
# the point type of variant v: its position in names, so it too is the same in each figure
pos_in(v, s, i) = i > words(s) ? 1 : word(s, i) eq v ? i : pos_in(v, s, i + 1)
pt_of(v) = 0 + word(pts, pos_in(v, names, 1))

do for [fmt in formats] {
    eval term(fmt, out, 1500, 620)
    set multiplot layout 1, 2 title heading(sprintf("Multi-query associative recall, 2 layers, vocabulary %d, %d steps", n_vocab, n_steps)) font ",15"
    set grid xtics ytics lc rgb "#dddddd"
    set logscale x 2
    set yrange [0 : 1.05]
    set ylabel "held-out accuracy on the answers"
    set key outside right top Left reverse font ",10" spacing 1.1

    set title sprintf("against the key-value pairs K, width D = %d", w_fixed) font ",12"
    set xlabel sprintf("key-value pairs K (%s)", n_label)
    set xrange [k_lo : k_hi]
    plot for [i=1:words(present)] data using (rk(word(present, i), "pairs", "pairs")):(rk(word(present, i), "pairs", "eval_accuracy")) \
         smooth unique with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 1 \
         title title_of(word(present, i))

    set title sprintf("against the width D, K = %d pairs", k_fixed) font ",12"
    set xlabel "model width D (heads of 16)"
    set xrange [w_lo : w_hi]
    plot for [i=1:words(present)] data using (rk(word(present, i), "width", "width")):(rk(word(present, i), "width", "eval_accuracy")) \
         smooth unique with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 1 \
         title title_of(word(present, i))
    unset multiplot
    set output
}
