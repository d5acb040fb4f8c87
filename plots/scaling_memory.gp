# scaling_memory.gp — the peak resident memory of each point against N (measured,
# VmHWM reset before the point; every variant in the CSV, in the order it first
# appears, per group when several runs are overlaid), with the cost model's bytes for
# the inputs and output alone (from the linear rows) and for the materializing kernel's
# score matrix on top of them (first group); points not measured are marked at the bottom.
# Reads ../results/scaling.csv; writes scaling_memory.png|svg.
# Other files: linattn plot --from x/scaling.csv, or
#   gnuplot -e 'data="x/scaling.csv"; out="x/scaling_memory"' scaling_memory.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("out")) out = "scaling_memory"
eval groups_default
eval all_variants
n = words(names)
if (n == 0) { exit error sprintf("scaling_memory.gp: no variant in %s", data) }
MiB = 1048576.0

xmin = 1e300; xmax = 0; ymin = 1e300; ymax = 0
curves = ""
skipped = ""
n_skipped = 0
do for [g=1:ngroups] {
    stats gfile[g] using (in_group(g) ? column("n") : 1e300) nooutput   # a group may have no rows
    xmin = STATS_min < xmin ? STATS_min : xmin
    stats gfile[g] using (in_group(g) ? column("n") : 0) nooutput
    xmax = STATS_max > xmax ? STATS_max : xmax
    # the axis covers the measured points and the model's lines (io_bytes is in every row)
    stats gfile[g] using (in_group(g) && column("io_bytes") > 0 ? column("io_bytes") / MiB : 1e300) nooutput
    ymin = STATS_min < ymin ? STATS_min : ymin
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" && column("peak_rss_bytes") > 0 ? column("peak_rss_bytes") / MiB : 1e300) nooutput
    ymin = STATS_min < ymin ? STATS_min : ymin
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" ? column("peak_rss_bytes") / MiB : 0) nooutput
    ymax = STATS_max > ymax ? STATS_max : ymax
    stats gfile[g] using (in_group(g) ? (column("io_bytes") + column("workspace_bytes")) / MiB : 0) nooutput
    ymax = STATS_max > ymax ? STATS_max : ymax
    do for [i=1:n] {
        v = word(names, i)
        stats gfile[g] using (okg(g, v, "peak_rss_bytes") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            curves = curves . sprintf('gfile[%d] using (okg(%d, word(names, %d), "n")):(okg(%d, word(names, %d), "peak_rss_bytes") / MiB) with linespoints lc rgb color_of(word(names, %d)) dt %d pt %d ps 0.9 title g_title(%d, title_of(word(names, %d))), ', \
                                      g, g, i, g, i, i, g, ngroups > 1 ? g_pt(g) : 7, g, i)
        }
        stats gfile[g] using (not_ok(g, v) ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            n_skipped = n_skipped + STATS_sum
            skipped = skipped . sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(ybot * 1.6) with points lc rgb color_of(word(names, %d)) pt 6 ps 1.3 notitle, ', g, g, i, i, i) . \
                                sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(ybot * 2.6):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb color_of(word(names, %d)) notitle, ', g, g, i, i, i)
        }
    }
}
if (ymax == 0) { ymin = 0.01; ymax = 1 }
ybot = ymin / 10
if (n_skipped > 0) { skipped = skipped . 'keyentry with points pt 6 ps 1.3 lc rgb "#555555" title not_measured_key, ' }
model = ""
stats gfile[1] using (in_group(1) && strcol("variant") eq "linear" ? 1 : 0) nooutput
if (STATS_sum > 0) {
    model = model . 'gfile[1] using (in_group(1) && strcol("variant") eq "linear" ? column("n") : NaN):(column("io_bytes") / MiB) with lines lc rgb "black" dt 2 lw 1.5 title "model: q, k, v and output", '
}
stats gfile[1] using (in_group(1) && strcol("variant") eq "softmax_materialized" ? 1 : 0) nooutput
if (STATS_sum > 0) {
    model = model . 'gfile[1] using (in_group(1) && strcol("variant") eq "softmax_materialized" ? column("n") : NaN):((column("io_bytes") + column("workspace_bytes")) / MiB) with lines lc rgb c_materialized dt 2 lw 1.5 title "model: materializing (with N×N scores)", '
}

set xrange [xmin * 0.8 : xmax * 1.25]
set yrange [ybot : ymax * 3]
set title heading("Peak resident memory against sequence length N") font ",15"
set xlabel "sequence length N (tokens, N = M)"
set ylabel "peak resident memory of the point (MiB)"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 2 font ",10"
set format y "10^{%L}"
# fifteen series and two models: the key beside the axes, where it hides no curve
set key outside right top Left reverse font ',9' spacing 1.1
fig_w = 1500
set bmargin 6
set label 1 "measured: VmHWM of the process during the point (inputs, output, scratch, program);\nmodel: la\\_attention\\_cost bytes" at screen 0.99, screen 0.05 right font ",10" tc rgb "#555555"

eval png(out)
plot @curves @skipped @model NaN notitle
eval svg(out)
