# copy_task.gp — the copy task (Katharopoulos et al. 2020) trained per attention variant:
# left the held-out cross-entropy against the optimiser step (log scale), right the
# copy accuracy (the share of copied symbols predicted right) against the step.
# Reads ../results/copy_task.csv (`linattn copy-task`); writes copy_task.png|svg.
# By hand: gnuplot -e 'data="x/copy_task.csv"; out="x/copy_task"' copy_task.gp
load "style.gpi"
if (!exists("data")) data = "../results/copy_task.csv"
if (!exists("out")) out = "copy_task"

present = series(data, "variant")
# every variant the learning experiments know, in their order: the colours (style.gpi's
# palette, by position in names) are the same in copy_task, recall and train_speed
names = "softmax linear_elu linear_relu taylor favor local"
if (words(present) == 0) {
    print sprintf("copy_task.gp: no rows in %s (run linattn copy-task); nothing drawn", data)
    exit
}
stats data using (strcol("status") eq "ok" ? column("step") : NaN) nooutput
s_hi = STATS_max
stats data using (strcol("status") eq "ok" ? column("seq_len") : NaN) nooutput
n_seq = STATS_max
stats data using (strcol("status") eq "ok" ? column("layers") : NaN) nooutput
n_layers = STATS_max
stats data using (strcol("status") eq "ok" && column("eval_loss") > 0 ? column("eval_loss") : NaN) nooutput
l_lo = STATS_min / 1.5; l_hi = STATS_max * 1.5
pts = "7 5 9 13 11 15"
# the point type of variant v: its position in names, so it too is the same in each figure
pos_in(v, s, i) = i > words(s) ? 1 : word(s, i) eq v ? i : pos_in(v, s, i + 1)
pt_of(v) = 0 + word(pts, pos_in(v, names, 1))

do for [fmt in formats] {
    eval term(fmt, out, 1500, 620)
    set multiplot layout 1, 2 title heading(sprintf("The copy task trained per attention variant: N = %d, %d layers", n_seq, n_layers)) font ",15"
    set xrange [0 : s_hi * 1.02]
    set xlabel "optimiser step"
    set grid xtics ytics lc rgb "#dddddd"
    set key outside right top Left reverse font ",10" spacing 1.1

    set title "held-out loss (cross-entropy on the copy, nats)" font ",12"
    set ylabel "loss"
    set logscale y 2
    set format y "%g"
    set yrange [l_lo : l_hi]
    plot for [i=1:words(present)] data using (ok(word(present, i), "step")):(ok(word(present, i), "eval_loss")) \
         with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 0.7 \
         title title_of(word(present, i))

    set title "held-out copy accuracy" font ",12"
    set ylabel "share of copied symbols predicted right"
    unset logscale y
    set format y "%g"
    set yrange [0 : 1.02]
    set key outside right top Left reverse font ",10" spacing 1.1
    plot for [i=1:words(present)] data using (ok(word(present, i), "step")):(ok(word(present, i), "eval_accuracy")) \
         with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 0.7 \
         title title_of(word(present, i))
    unset multiplot
    set output
}
