# params.gp — exact parameters of one encoder layer against D (d_ff = 4D) with the 12D²
# line and each component (left); the relative gap of the 12D² rule (middle); where the
# parameters of the standard models are (right, stacked shares).
# Reads ../results/params.csv; writes params.png|svg.
# Other files: linattn plot --from x/params.csv, or
#   gnuplot -e 'data="x/params.csv"; out="x/params"' params.gp
load "style.gpi"
if (!exists("data")) data = "../results/params.csv"
if (!exists("out")) out = "params"

sweep(c) = (strcol("kind") eq "sweep" && strcol("status") eq "ok") ? column(c) : NaN
stats data using (strcol("kind") eq "sweep" ? 1 : NaN) nooutput
n_sweep = STATS_records      # the standard models' rows follow the sweep's
# the axes cover every point of the sweep (at least their usual ranges)
stats data using (sweep("d_model")) nooutput
x_lo = STATS_min < 48 * 1.2 ? STATS_min / 1.2 : 48
x_hi = STATS_max > 11000 / 1.2 ? STATS_max * 1.2 : 11000
stats data using (sweep("layer_norm") > 0 ? sweep("layer_norm") : 1e300) nooutput
y_lo = STATS_min < 1e2 * 2 ? STATS_min / 2 : 1e2
stats data using (sweep("encoder_layer")) nooutput
y_hi = STATS_max > 2e9 / 2 ? STATS_max * 2 : 2e9
stats data using (sweep("approx_gap") > 0 ? sweep("approx_gap") : 1e300) nooutput
g_lo = STATS_min < 1e-4 * 1.5 ? STATS_min / 1.5 : 1e-4
stats data using (sweep("approx_gap") > 0 ? sweep("approx_gap") : 0) nooutput
g_hi = STATS_max > 0.1 / 1.5 ? STATS_max * 1.5 : 0.1

do for [fmt in formats] {
    eval term(fmt, out, 1800, 700)
    set multiplot layout 1,3 title heading("Parameters of Transformer layers: the exact count against the 12·D² rule (d_{ff} = 4D)") font ",15"

    set title "one encoder layer" font ",13"
    set xlabel "model width D"
    set ylabel "parameters"
    set logscale x 2
    set logscale y 10
    set format x "%.0f"
    set xtics 1, 4
    set format y "10^{%L}"
    set xrange [x_lo : x_hi]
    set yrange [y_lo : y_hi]
    set key top left font ",10"
    plot data using (sweep("d_model")):(sweep("encoder_layer")) with points lc rgb "black" pt 7 ps 1.2 title "exact: 12D² + 13D", \
         12 * x**2 with lines lc rgb c_softmax dt 2 lw 2 title "12·D²", \
         data using (sweep("d_model")):(sweep("ffn")) with linespoints lc rgb c_linear_c pt 9 ps 0.9 title "FFN 8D² + 5D", \
         data using (sweep("d_model")):(sweep("mha")) with linespoints lc rgb c_linear pt 5 ps 0.8 title "multi-head attention 4D² + 4D", \
         data using (sweep("d_model")):(2 * sweep("layer_norm")) with linespoints lc rgb c_hard pt 13 ps 0.9 title "two LayerNorms 4D"

    set title "what 12·D² leaves out" font ",13"
    set ylabel "(exact − 12D²) / exact, one layer"
    set yrange [g_lo : g_hi]
    set format y "10^{%L}"
    set key top right font ",10"
    plot data using (sweep("d_model")):(sweep("approx_gap")) with linespoints lc rgb "black" pt 7 ps 0.9 title "biases and LayerNorms: 13D / (12D² + 13D)", \
         13.0 / (12 * x) with lines lc rgb c_softmax dt 2 title "13 / (12 D)"

    set title "standard models: share of the parameters" font ",13"
    unset logscale x
    unset logscale y
    set xrange [*:*]
    set yrange [0 : 100]
    set format y "%.0f%%"
    set ylabel "share of all parameters"
    unset xlabel
    set xtics rotate by -35 left font ",10"
    set style data histograms
    set style histogram rowstacked
    set style fill solid 0.8 noborder
    set boxwidth 0.7
    set key outside bottom center horizontal font ",10"
    plot data every ::n_sweep using (100 * column("attention_share")):xtic(strcol("model")) lc rgb c_linear title "attention", \
         data every ::n_sweep using (100 * column("ffn_share")) lc rgb c_linear_c title "FFN", \
         data every ::n_sweep using (100 * column("norm_share")) lc rgb c_hard title "LayerNorm (< 0.1%, invisible)", \
         data every ::n_sweep using (100 * column("embedding_share")) lc rgb c_materialized title "embeddings"
    unset multiplot
    set output
}
