# train_speed.gp — training throughput of the model of `linattn train` per attention
# variant against the sequence length N at a fixed number of tokens per step: left
# tokens per second of a whole step (forward, backward, clipping, AdamW; log scales),
# right the share of the step spent in the attention kernel (forward and backward,
# timed alone on the step's shapes). Load-dependent: the run's machine and load are in
# the CSV's # lines.
# Reads ../results/train_speed.csv (`linattn train-speed`); writes train_speed.png|svg.
# By hand: gnuplot -e 'data="x/train_speed.csv"; out="x/train_speed"' train_speed.gp
load "style.gpi"
if (!exists("data")) data = "../results/train_speed.csv"
if (!exists("out")) out = "train_speed"

present = series(data, "variant")
# every variant the learning experiments know, in their order: the colours (style.gpi's
# palette, by position in names) are the same in copy_task, recall and train_speed
names = "softmax linear_elu linear_relu taylor favor local"
if (words(present) == 0) {
    print sprintf("train_speed.gp: no rows in %s (run linattn train-speed); nothing drawn", data)
    exit
}
stats data using (strcol("status") eq "ok" ? column("n") : NaN) nooutput
n_lo = STATS_min / 1.3; n_hi = STATS_max * 1.3
stats data using (strcol("status") eq "ok" ? column("n") * column("sequences") : NaN) nooutput
n_tokens = STATS_max
pts = "7 5 9 13 11 15"
# the point type of variant v: its position in names, so it too is the same in each figure
pos_in(v, s, i) = i > words(s) ? 1 : word(s, i) eq v ? i : pos_in(v, s, i + 1)
pt_of(v) = 0 + word(pts, pos_in(v, names, 1))

do for [fmt in formats] {
    eval term(fmt, out, 1500, 620)
    set multiplot layout 1, 2 title heading(sprintf("Training throughput per attention variant, %d tokens per step", n_tokens)) font ",15"
    set grid xtics ytics lc rgb "#dddddd"
    set logscale x 2
    set xrange [n_lo : n_hi]
    set xlabel "sequence length N"
    set key outside right top Left reverse font ",10" spacing 1.1

    set title "tokens per second of a training step" font ",12"
    set ylabel "tokens/s"
    set logscale y 2
    set format y "%.0f"
    set yrange [*:*]
    plot for [i=1:words(present)] data using (ok(word(present, i), "n")):(ok(word(present, i), "tokens_per_s")) \
         with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 1 \
         title title_of(word(present, i))

    set title "share of the step in the attention kernel (timed alone: noise may pass 1)" font ",12"
    set ylabel "attention kernel time / step time"
    unset logscale y
    set format y "%g"
    set yrange [0 : 1.15]
    plot for [i=1:words(present)] data using (ok(word(present, i), "n")):(ok(word(present, i), "attention_share")) \
         with linespoints lc rgb color_of(word(present, i)) pt pt_of(word(present, i)) ps 1 \
         title title_of(word(present, i))
    unset multiplot
    set output
}
