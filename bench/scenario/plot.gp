# Latency per request and mode, from report.py's latency.dat:
#   gnuplot -e "datafile='latency.dat'; outfile='latency.png'; charttitle='...'" plot.gp
# Bars: p50; whiskers: from p50 up to p99. Log scale (V1's Q3/Q6 are orders of
# magnitude above the rest).
if (!exists("datafile")) datafile = 'latency.dat'
if (!exists("outfile")) outfile = 'latency.png'
if (!exists("charttitle")) charttitle = 'feedd scenario latency'

set terminal pngcairo size 1200,620 font "DejaVu Sans,11" noenhanced
set output outfile
set title charttitle
set datafile missing "?"
set style data histogram
set style histogram errorbars gap 1.5 lw 1.2
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set yrange [0.03:*]
set format y "%g"
set ylabel "latency, ms (p50 bar, p99 whisker)"
set xlabel "request (C = command, Q = query)"
set grid ytics mytics lc rgb "#dddddd"
set key top left box opaque
set xtics nomirror
set ytics nomirror
plot datafile using 2:2:3:xtic(1) title "V1 normalized (Python client)" lc rgb "#c0504d", \
     ''       using 4:4:5        title "V3 views (Python client)" lc rgb "#4f81bd", \
     ''       using 6:6:7        title "V3 views (wrk, 1 connection)" lc rgb "#9bbb59"
