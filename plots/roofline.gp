# roofline.gp — every kernel on this machine's roofline: achieved GFLOP/s against
# arithmetic intensity (FLOPs of the cost model per minimum byte moved, la_cost.bytes_min),
# log-log, one panel per precision (float32 left, float64 right), each under its own
# ceiling measured in the same process: the FMA peak and the triad memory bandwidth (the
# sloped part, intensity × GB/s). Each kernel series has a colour and marker pair no
# other series shares, the same in both panels (one legend, right); every N and d of the
# run is a point (intensity grows with d and, for the quadratic kernels, with N).
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
yhi = yhi * 8
ridge32 = peak32 / bw
ridge64 = peak64 / bw
if (ridge32 == ridge32 && ridge32 < xlo) { xlo = ridge32 / 2 }
if (ridge64 == ridge64 && ridge64 < xlo) { xlo = ridge64 / 2 }
if (ridge32 == ridge32 && ridge32 > xhi) { xhi = ridge32 * 2 }

# a colour and marker pair per series, unique: 11 colours, then the next marker
palette = "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #17becf #8c564b #e377c2 #7f7f7f #bcbd22 #000080"
markers = "7 5 9 11 13 15"
np = words(palette)
col_of(i) = word(palette, 1 + (i - 1) % np)
pt_of(i) = 0 + word(markers, 1 + ((i - 1) / np) % words(markers))

pts_f32 = ""
pts_f64 = ""
do for [i=1:n] {
    pts_f32 = pts_f32 . sprintf('data using (okr(word(names, %d), "f32", "intensity_flop_per_byte")):(okr(word(names, %d), "f32", "gflops")) with points lc rgb "%s" pt %d ps 1.2 title title_of(word(names, %d)), ', i, i, col_of(i), pt_of(i), i)
    pts_f64 = pts_f64 . sprintf('data using (okr(word(names, %d), "f64", "intensity_flop_per_byte")):(okr(word(names, %d), "f64", "gflops")) with points lc rgb "%s" pt %d ps 1.2 notitle, ', i, i, col_of(i), pt_of(i))
}
ceil32 = peak32 == peak32 ? sprintf('roof(peak32, x) with lines lc rgb "black" lw 2.5 title sprintf("ceiling: min(FMA peak, intensity × %.1f GB/s triad)", bw), ') : ""
ceil64 = peak64 == peak64 ? sprintf('roof(peak64, x) with lines lc rgb "black" lw 2.5 notitle, ') : ""

set xlabel "arithmetic intensity (FLOPs of the cost model per minimum byte moved)"
set logscale xy 10
set format x "10^{%L}"
set format y "10^{%L}"
set xrange [xlo : xhi]
set yrange [ylo : yhi / 8 * 2]
set samples 400
set bmargin 5
set tmargin 5

do for [fmt in formats] {
    eval term(fmt, out, 1800, 800)
    set multiplot title heading("Roofline: achieved GFLOP/s against arithmetic intensity") font ",15"
    set label 1 "one point per N and d; ceilings measured in the same run (FMA peak, STREAM triad); the legend holds for both panels" \
        at screen 0.99, screen 0.02 right font ",10" tc rgb "#555555"
    # float32
    set lmargin at screen 0.05
    set rmargin at screen 0.37
    set title sprintf("float32: peak %.0f GFLOP/s, ridge %.1f FLOP/byte", peak32, ridge32) font ",12"
    set ylabel "achieved GFLOP/s (cost-model FLOPs / median time)"
    set key at screen 0.755, screen 0.86 left top Left reverse font ",10" spacing 1.1 width -4
    plot @ceil32 @pts_f32 NaN notitle
    unset label 1
    # float64
    set lmargin at screen 0.42
    set rmargin at screen 0.74
    set title sprintf("float64: peak %.0f GFLOP/s, ridge %.1f FLOP/byte", peak64, ridge64) font ",12"
    set ylabel ""
    plot @ceil64 @pts_f64 NaN notitle
    unset multiplot
    set output
}
