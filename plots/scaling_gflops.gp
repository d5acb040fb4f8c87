# scaling_gflops.gp — arithmetic rate of each kernel (every variant in the CSV, in the
# order it first appears, per group when several runs are overlaid) against N: the FLOP
# model (la_attention_cost) divided by the median time; points not measured are marked
# at the bottom. Reads ../results/scaling.csv; writes scaling_gflops.png|svg.
# Other files: linattn plot --from x/scaling.csv, or
#   gnuplot -e 'data="x/scaling.csv"; out="x/scaling_gflops"' scaling_gflops.gp
load "style.gpi"
if (!exists("data")) data = "../results/scaling.csv"
if (!exists("out")) out = "scaling_gflops"
eval groups_default
eval all_variants
n = words(names)
if (n == 0) { exit error sprintf("scaling_gflops.gp: no variant in %s", data) }

xmin = 1e300; xmax = 0; ymax = 0
curves = ""
skipped = ""
n_skipped = 0
do for [g=1:ngroups] {
    stats gfile[g] using (in_group(g) ? column("n") : 1e300) nooutput   # a group may have no rows
    xmin = STATS_min < xmin ? STATS_min : xmin
    stats gfile[g] using (in_group(g) ? column("n") : 0) nooutput
    xmax = STATS_max > xmax ? STATS_max : xmax
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" && column("gflops") > 0 ? column("gflops") : 0) nooutput
    ymax = STATS_max > ymax ? STATS_max : ymax
    do for [i=1:n] {
        v = word(names, i)
        stats gfile[g] using (okg(g, v, "gflops") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            curves = curves . sprintf('gfile[%d] using (okg(%d, word(names, %d), "n")):(okg(%d, word(names, %d), "gflops")) with linespoints lc rgb color_of(word(names, %d)) dt %d pt %d ps 0.9 title g_title(%d, title_of(word(names, %d))), ', \
                                      g, g, i, g, i, i, g, ngroups > 1 ? g_pt(g) : 7, g, i)
        }
        stats gfile[g] using (not_ok(g, v) ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            n_skipped = n_skipped + STATS_sum
            skipped = skipped . sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(0.03 * ytop) with points lc rgb color_of(word(names, %d)) pt 6 ps 1.3 notitle, ', g, g, i, i, i) . \
                                sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? spread_x(column("n"), %d, n) : NaN):(0.07 * ytop):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb color_of(word(names, %d)) notitle, ', g, g, i, i, i)
        }
    }
}
if (n_skipped > 0) { skipped = skipped . 'keyentry with points pt 6 ps 1.3 lc rgb "#555555" title not_measured_key, ' }
ytop = ymax > 0 ? ymax * 1.15 : 1

set xrange [xmin * 0.8 : xmax * 1.25]
set yrange [0 : ytop]
set title heading("Arithmetic rate against sequence length N (FLOPs from the cost model)") font ",15"
set xlabel "sequence length N (tokens, N = M)"
set ylabel "GFLOP/s (model FLOPs / median time)"
set logscale x 2
set format x "%.0f"
set xtics 1, 2 font ",10"
# fifteen series: the key beside the axes, where it hides no curve
set key outside right top Left reverse font ',9' spacing 1.1
fig_w = 1500

eval png(out)
plot @curves @skipped NaN notitle
eval svg(out)
