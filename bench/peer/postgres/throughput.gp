# Each mix and connection count, PostgreSQL against feedd, from peer.py's
# throughput.dat (figure, then req/s and drain seconds of each system):
#   gnuplot -e "datafile='throughput.dat'; outfile='throughput.png'; charttitle='...'" throughput.gp
# Left: requests per second, closed loop. Right: after a write run, the
# seconds until the change feed's consumer had everything (PostgreSQL: the
# wal2json slot's consumer; feedd: every view current). A read run has no
# such bar ("?" in the data).
set terminal pngcairo size 1200,560 font "DejaVu Sans,11" noenhanced
set output outfile
set datafile missing "?"
set style data histogram
set style histogram clustered gap 1.5
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set xtics nomirror
set ytics nomirror
set yrange [0:*]
set multiplot layout 1,2 title charttitle
set title "throughput"
set ylabel "requests/s"
set key below box
plot datafile using 2:xtic(1) title "PostgreSQL 15" lc rgb "#336791", \
     ''       using 4        title "feedd" lc rgb "#e07b39"
set title "change feed consumed, seconds after a write run"
set ylabel "seconds (lower is better)"
set key below box
plot datafile using 3:xtic(1) title "PostgreSQL 15: wal2json slot" lc rgb "#336791", \
     ''       using 5        title "feedd: views current" lc rgb "#e07b39"
unset multiplot
