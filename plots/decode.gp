# decode.gp — autoregressive generation: per-token latency against the position t,
# softmax attention over a growing KV cache (O(t) per token) against linear attention's
# recurrent state (O(1) per token), with the total time to generate all T tokens.
# Reads ../results/decode.csv; writes decode.png|svg.
load "style.gpi"
data = "../results/decode.csv"

okd(v, c) = (strcol("variant") eq v && strcol("status") eq "ok") ? column(c) : NaN
tmid(v) = okd(v, "t_first") < 0 ? NaN : sqrt(okd(v, "t_first") * okd(v, "t_last"))  # bin centre (geometric)

stats data using (okd("softmax_kv_cache", "cumulative_s")) nooutput
total_s = STATS_max
stats data using (okd("linear_recurrent_state", "cumulative_s")) nooutput
total_l = STATS_max
stats data using (okd("linear_recurrent_state", "t_last")) nooutput
T = STATS_max
stats data using (okd("softmax_kv_cache", "t_last")):(okd("softmax_kv_cache", "median_s")) nooutput
tg = STATS_max_x; yg = STATS_max_y

set title sprintf("Autoregressive generation: time per new token against position t\ntotal for %d tokens: softmax + KV cache %.3g s, linear state %.3g s (%.0f× faster)", T, total_s, total_l, total_s / total_l) font ",14"
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

eval png("decode")
plot data using (tmid("softmax_kv_cache")):(okd("softmax_kv_cache", "p10_s")):(okd("softmax_kv_cache", "p90_s")) with filledcurves lc rgb c_softmax notitle, \
     data using (tmid("linear_recurrent_state")):(okd("linear_recurrent_state", "p10_s")):(okd("linear_recurrent_state", "p90_s")) with filledcurves lc rgb c_linear notitle, \
     data using (tmid("softmax_kv_cache")):(okd("softmax_kv_cache", "median_s")) with linespoints lc rgb c_softmax pt 7 ps 0.7 title "softmax attention with a KV cache (attend over t keys)", \
     data using (tmid("linear_recurrent_state")):(okd("linear_recurrent_state", "median_s")) with linespoints lc rgb c_linear pt 5 ps 0.7 title "linear attention, recurrent state (S, z)", \
     (x > 64 ? 2 * yg * x / tg : NaN) with lines lc rgb "black" dt 2 lw 1.5 title "∝ t (guide)"
eval svg("decode")
