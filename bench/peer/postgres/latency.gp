# Every request alone on one connection, PostgreSQL against feedd, from
# peer.py's latency.dat (figure, then p50 and p99 of each system):
#   gnuplot -e "datafile='latency.dat'; outfile='latency.png'; charttitle='...'" latency.gp
# Bars: p50; whiskers: from p50 up to p99. Log scale: a rename costs orders
# of magnitude more than a read.
set terminal pngcairo size 1200,620 font "DejaVu Sans,11" noenhanced
set output outfile
set title charttitle
set datafile missing "?"
set style data histogram
set style histogram errorbars gap 1.5 lw 1.2
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set format y "%g"
set ylabel "latency, ms (p50 bar, p99 whisker)"
set xlabel "request, one connection (C = command, Q = query, RENAME = a user's new name in every copy)"
set grid ytics mytics lc rgb "#dddddd"
set key below box
set xtics nomirror
set ytics nomirror
plot datafile using 2:2:3:xtic(1) title "PostgreSQL 15 (pgbench -M prepared)" lc rgb "#336791", \
     ''       using 4:4:5        title "feedd (wrk over HTTP)" lc rgb "#e07b39"
