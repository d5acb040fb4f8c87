# roofline.gp — every kernel on this machine's roofline: achieved GFLOP/s against
# arithmetic intensity (FLOPs of the cost model per minimum byte moved, la_cost.bytes_min),
# log-log, under the two ceilings measured in the same process: the FMA peak (float32
# solid, float64 dashed) and the triad memory bandwidth (the sloped part, intensity ×
# GB/s). One point style per kernel series (colour and shape), filled for float32 and
# hollow for float64; every N and d of the run is a point (intensity grows with d and,
# for the quadratic kernels, with N).
# Reads ../results/roofline.csv (`linattn roofline`); writes roofline.png|svg.
# By hand: gnuplot -e 'data="x/roofline.csv"; out="x/roofline"' roofline.gp
load "style.gpi"
if (!exists("data")) data = "../results/roofline.csv"
if (!exists("out")) out = "roofline"

names = series(data, "variant")
n = words(names)
if (n == 0) { exit error sprintf("roofline.gp: no series in %s", data) }

# an ok row of variant v in dtype t: column c, else NaN
okr(v, t, c) = (strcol("variant") eq v && strcol("dtype") eq t && strcol("status") eq "ok") ? column(c) : NaN

# the ceilings, from the rows (every row carries its run's peak and bandwidth)
# (0 for the other rows: a column of no value, where the AVX-512 probe does not run, leaves
# that ceiling undrawn)
stats data using ((strcol("dtype") eq "f32" && column("peak_gflops") > 0) ? column("peak_gflops") : 0) nooutput
peak32 = STATS_max > 0 ? STATS_max : NaN
stats data using ((strcol("dtype") eq "f64" && column("peak_gflops") > 0) ? column("peak_gflops") : 0) nooutput
peak64 = STATS_max > 0 ? STATS_max : NaN
stats data using (column("bandwidth_gbs") > 0 ? column("bandwidth_gbs") : NaN) nooutput
bw = STATS_max
roof(p, x) = (p == p) ? (x * bw < p ? x * bw : p) : NaN

# the axes: every ok point, and room for the ridge points
stats data using ((strcol("status") eq "ok") ? column("intensity_flop_per_byte") : NaN) nooutput
xlo = STATS_min / 2
xhi = STATS_max * 2
stats data using ((strcol("status") eq "ok") ? column("gflops") : NaN) nooutput
ylo = STATS_min / 3
yhi = STATS_max
if (peak32 == peak32 && peak32 > yhi) { yhi = peak32 }
yhi = yhi * 8   # headroom for the key
ridge32 = peak32 / bw
ridge64 = peak64 / bw
if (ridge32 == ridge32 && ridge32 < xlo) { xlo = ridge32 / 2 }
if (ridge64 == ridge64 && ridge64 < xlo) { xlo = ridge64 / 2 }
if (ridge32 == ridge32 && ridge32 > xhi) { xhi = ridge32 * 2 }

# shapes: filled (float32) and hollow (float64) pairs: square, circle, triangle,
# inverted triangle, diamond, pentagon
filled = "5 7 9 11 13 15"
hollow = "4 6 8 10 12 14"
pt_of(i, f64) = 0 + word(f64 ? hollow : filled, 1 + (i - 1) % 6)

ceil = ""
if (peak32 == peak32) {
    ceil = ceil . sprintf('roof(peak32, x) with lines lc rgb "black" lw 2.5 title "ceiling, float32: min(%.0f GFLOP/s, intensity × %.1f GB/s)", ', peak32, bw)
}
if (peak64 == peak64) {
    ceil = ceil . sprintf('roof(peak64, x) with lines lc rgb "#555555" dt 2 lw 2 title "ceiling, float64: min(%.0f GFLOP/s, intensity × %.1f GB/s)", ', peak64, bw)
}
pts = ""
do for [i=1:n] {
    v = word(names, i)
    pts = pts . sprintf('data using (okr(word(names, %d), "f32", "intensity_flop_per_byte")):(okr(word(names, %d), "f32", "gflops")) with points lc rgb color_of(word(names, %d)) pt %d ps 1.2 title title_of(word(names, %d)), ', i, i, i, pt_of(i, 0), i)
    pts = pts . sprintf('data using (okr(word(names, %d), "f64", "intensity_flop_per_byte")):(okr(word(names, %d), "f64", "gflops")) with points lc rgb color_of(word(names, %d)) pt %d ps 1.2 notitle, ', i, i, i, pt_of(i, 1))
}

set title heading("Roofline: achieved GFLOP/s against arithmetic intensity") font ",15"
set xlabel "arithmetic intensity (FLOPs of the cost model per minimum byte moved)"
set ylabel "achieved GFLOP/s (cost-model FLOPs / median time)"
set logscale xy 10
set format x "10^{%L}"
set format y "10^{%L}"
set xrange [xlo : xhi]
set yrange [ylo : yhi]
set samples 400
fig_w = 1300
fig_h = 850
set key outside right top Left reverse font ",10" spacing 1.1
set bmargin 5
set label 1 "filled: float32, hollow: float64; one point per N and d; ceilings measured in the same run (FMA peak, STREAM triad)" \
    at screen 0.99, screen 0.02 right font ",10" tc rgb "#555555"

eval png(out)
plot @ceil @pts NaN notitle
eval svg(out)
