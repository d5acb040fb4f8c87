# decode.gp — autoregressive generation: per-token latency against the position t, one
# line per variant in the CSV (today softmax attention over a growing KV cache, O(t) per
# token, and linear attention's recurrent state, O(1) per token), with the total time of
# each to generate all T tokens, and the speed-up of the linear state over the KV cache.
# Reads ../results/decode.csv; writes decode.png|svg.
# Other files: gnuplot -e 'data="x/decode.csv"; out="x/decode"' decode.gp
load "style.gpi"
if (!exists("data")) data = "../results/decode.csv"
if (!exists("out")) out = "decode"

okd(v, c) = (strcol("variant") eq v && strcol("status") eq "ok") ? column(c) : NaN
tmid(v) = okd(v, "t_first") < 0 ? NaN : sqrt(okd(v, "t_first") * okd(v, "t_last"))  # bin centre (geometric)

names = series(data, "variant")
n = words(names)
if (n == 0) { exit error sprintf("decode.gp: no variant in %s", data) }
has(v) = strstrt(" " . names . " ", " " . v . " ") > 0
short_of(v) = v eq "softmax_kv_cache" ? "softmax + KV cache" : v eq "linear_recurrent_state" ? "linear state" : esc(v)
pts = "7 5 9 11 13 15"
pt_at(i) = 0 + word(pts, 1 + (i - 1) % words(pts))

# the total time of each variant (its last cumulative time; -1: no ok row)
totals = ""
do for [v in names] {
    stats data using (strcol("variant") eq v && strcol("status") eq "ok" ? column("cumulative_s") : -1) nooutput
    totals = totals . (totals eq "" ? "" : ", ") . \
             (STATS_max < 0 ? sprintf("%s no data", short_of(v)) : sprintf("%s %.3g s", short_of(v), STATS_max))
    if (v eq "softmax_kv_cache") { total_s = STATS_max }
    if (v eq "linear_recurrent_state") { total_l = STATS_max }
}
speedup = has("softmax_kv_cache") && has("linear_recurrent_state") && total_s > 0 && total_l > 0 ? \
          sprintf(" (%.0f× faster)", total_s / total_l) : ""
stats data using (strcol("status") eq "ok" ? column("t_last") : NaN) nooutput
T = STATS_max
# the ∝ t guide goes through the last point of the KV cache (else of the first variant)
g = has("softmax_kv_cache") ? "softmax_kv_cache" : word(names, 1)
stats data using (okd(g, "t_last")):(okd(g, "median_s")) nooutput
tg = STATS_max_x; yg = STATS_max_y

set title sprintf("Autoregressive generation: time per new token against position t\ntotal for %d tokens: %s%s", T, totals, speedup) font ",14"
set xlabel "position t of the generated token (tokens already in the context)"
set ylabel "time per token (s), median over the tokens of a bin"
set logscale x 2
set logscale y 10
set format x "%.0f"
set xtics 1, 4 font ",10"
set format y "10^{%L}"
set xrange [0.8 : T * 1.25]
set key top left
set style fill transparent solid 0.2 noborder
set label 1 "bands: 10th..90th percentile over the tokens of each bin (one bin per quarter-octave of t)" at graph 0.99, graph 0.03 right font ",10" tc rgb "#555555"

eval png(out)
plot for [i=1:n] data using (tmid(word(names, i))):(okd(word(names, i), "p10_s")):(okd(word(names, i), "p90_s")) \
         with filledcurves lc rgb color_of(word(names, i)) notitle, \
     for [i=1:n] data using (tmid(word(names, i))):(okd(word(names, i), "median_s")) \
         with linespoints lc rgb color_of(word(names, i)) pt pt_at(i) ps 0.7 title title_of(word(names, i)), \
     (x > 64 ? 2 * yg * x / tg : NaN) with lines lc rgb "black" dt 2 lw 1.5 title "∝ t (guide)"
eval svg(out)
