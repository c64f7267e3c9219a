
set terminal pngcairo size 1100,560 font ",10" noenhanced

set output 'rate_vs_conns.png'
set title "TCP request/response, 64 B: transactions/s vs connections\nkernel: veth, dpsock: memif; client CPU 0, server CPU 1 (median, min-max)"
set logscale x 2
set xlabel "connections"
set ylabel "transactions/s"
set grid
set key top left
set yrange [0:*]
plot 'rate_vs_conns.dat' using 1:2:3:4 with yerrorlines lw 2 title "Linux kernel", \
     '' using 1:5:6:7 with yerrorlines lw 2 title "dpsock"

set output 'latency.png'
set title "Latency percentiles p50 and p99 (µs, log scale; medians over rounds)"
unset logscale x
set logscale y
set yrange [*:*]
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set ylabel "µs"
set xlabel ""
set key outside right top vertical
plot 'latency.dat' using 2:xtic(1) title "kernel p50", 'latency.dat' using 3 title "kernel p99", 'latency.dat' using 4 title "dpsock (memif) p50", 'latency.dat' using 5 title "dpsock (memif) p99", 'latency.dat' using 6 title "dpsock on AF_XDP p50", 'latency.dat' using 7 title "dpsock on AF_XDP p99", 'latency.dat' using 8 title "dpsock on af_packet p50", 'latency.dat' using 9 title "dpsock on af_packet p99", 'latency.dat' using 10 title "dpsock on AF_XDP, shared p50", 'latency.dat' using 11 title "dpsock on AF_XDP, shared p99"
