# decode.gp — autoregressive generation: per-token latency against the position t, one
# line per variant in the CSV (today softmax attention over a growing KV cache, O(t) per
# token, and linear attention's recurrent state, O(1) per token), with the total time of
# each to generate all T tokens, and the speed-up of the linear state over the KV cache;
# per group when several runs are overlaid (linattn plot; totals of the first group).
# Reads ../results/decode.csv; writes decode.png|svg.
# Other files: linattn plot --from x/decode.csv, or
#   gnuplot -e 'data="x/decode.csv"; out="x/decode"' decode.gp
load "style.gpi"
if (!exists("data")) data = "../results/decode.csv"
if (!exists("out")) out = "decode"
eval groups_default
eval all_variants
n = words(names)
if (n == 0) { exit error sprintf("decode.gp: no variant in %s", data) }

tmid(g, v) = okg(g, v, "t_first") < 0 ? NaN : sqrt(okg(g, v, "t_first") * okg(g, v, "t_last"))  # bin centre (geometric)
has(v) = strstrt(" " . names . " ", " " . v . " ") > 0
short_of(v) = v eq "softmax_kv_cache" ? "softmax + KV cache" : v eq "linear_recurrent_state" ? "linear state" : esc(v)
pts = "7 5 9 11 13 15"
pt_at(i) = 0 + word(pts, 1 + (i - 1) % words(pts))

# the total time of each variant in the first group (its last cumulative time; -1: no ok row)
totals = ""
total_s = -1; total_l = -1
do for [v in names] {
    stats gfile[1] using (strcol("variant") eq v && strcol("status") eq "ok" && in_group(1) ? column("cumulative_s") : -1) nooutput
    totals = totals . (totals eq "" ? "" : ", ") . \
             (STATS_max < 0 ? sprintf("%s no data", short_of(v)) : sprintf("%s %.3g s", short_of(v), STATS_max))
    if (v eq "softmax_kv_cache") { total_s = STATS_max }
    if (v eq "linear_recurrent_state") { total_l = STATS_max }
}
speedup = total_s > 0 && total_l > 0 ? sprintf(" (%.0f× faster)", total_s / total_l) : ""
T = 1
do for [g=1:ngroups] {
    stats gfile[g] using (strcol("status") eq "ok" && in_group(g) ? column("t_last") : 0) nooutput
    T = STATS_max > T ? STATS_max : T
}
# the ∝ t guide goes through the last point of the KV cache (else of the first variant)
gv = has("softmax_kv_cache") ? "softmax_kv_cache" : word(names, 1)
stats gfile[1] using (okg(1, gv, "t_last") > 0 ? okg(1, gv, "t_last") : 0) nooutput
tg = STATS_max
stats gfile[1] using (okg(1, gv, "t_last") == tg ? okg(1, gv, "median_s") : 0) nooutput
yg = STATS_max

# bands and lines of each group and variant with points; the points not measured
bands = ""
lines = ""
skipped = ""
n_skipped = 0
do for [g=1:ngroups] {
    do for [i=1:n] {
        v = word(names, i)
        stats gfile[g] using (okg(g, v, "median_s") > 0 ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            bands = bands . sprintf('gfile[%d] using (tmid(%d, word(names, %d))):(okg(%d, word(names, %d), "p10_s")):(okg(%d, word(names, %d), "p90_s")) with filledcurves lc rgb color_of(word(names, %d)) notitle, ', g, g, i, g, i, g, i, i)
            lines = lines . sprintf('gfile[%d] using (tmid(%d, word(names, %d))):(okg(%d, word(names, %d), "median_s")) with linespoints lc rgb color_of(word(names, %d)) dt %d pt %d ps 0.7 title g_title(%d, title_of(word(names, %d))), ', g, g, i, g, i, i, g, ngroups > 1 ? g_pt(g) : pt_at(i), g, i)
        }
        stats gfile[g] using (not_ok(g, v) ? 1 : 0) nooutput
        if (STATS_sum > 0) {
            n_skipped = n_skipped + STATS_sum
            skipped = skipped . sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? sqrt(column("t_first") * column("t_last")) : NaN):(ybot * 1.6) with points lc rgb color_of(word(names, %d)) pt 6 ps 1.3 notitle, ', g, g, i, i) . \
                                sprintf('gfile[%d] using (not_ok(%d, word(names, %d)) ? sqrt(column("t_first") * column("t_last")) : NaN):(ybot * 2.6):(short_status(strcol("status"))) with labels rotate by 90 left font ",8" tc rgb color_of(word(names, %d)) notitle, ', g, g, i, i)
        }
    }
}
if (n_skipped > 0) { skipped = skipped . 'keyentry with points pt 6 ps 1.3 lc rgb "#555555" title not_measured_key, ' }
ymin = 1e300; ymax = 0
do for [g=1:ngroups] {
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" && column("p10_s") > 0 ? column("p10_s") : 1e300) nooutput
    ymin = STATS_min < ymin ? STATS_min : ymin
    stats gfile[g] using (in_group(g) && strcol("status") eq "ok" ? column("p90_s") : 0) nooutput
    ymax = STATS_max > ymax ? STATS_max : ymax
}
if (ymax == 0) { ymin = 1e-6; ymax = 1 }
ybot = ymin / (n_skipped > 0 ? 10 : 2)
guide = yg > 0 ? '(x > 64 ? 2 * yg * x / tg : NaN) with lines lc rgb "black" dt 2 lw 1.5 title "∝ t (guide)", ' : ""

set title heading(sprintf("Autoregressive generation: time per new token against position t\ntotal for %d tokens: %s%s", T, totals, speedup)) font ",14"
set xlabel "position t of the generated token (tokens already in the context)"
set ylabel "time per token (s), median over the tokens of a bin"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 4 font ",10"
set format y "10^{%L}"
set xrange [0.8 : T * 1.25]
set yrange [ybot : ymax * 30]   # headroom for the key
set key top left
eval overlay_key
set style fill transparent solid 0.2 noborder
set bmargin 5
set label 1 "bands: 10th..90th percentile over the tokens of each bin (one bin per quarter-octave of t)" at screen 0.99, screen 0.02 right font ",10" tc rgb "#555555"

eval png(out)
plot @bands @lines @skipped @guide NaN notitle
eval svg(out)
