#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""perf_report.py — turn run-all's results into docs/performance.md and plots.

Input: results.tsv (metric, side, round, value, extra "k=v ..."), meta.tsv
(key, value), the ring benchmark's markdown table. Output: the markdown
report and, when gnuplot is there, perf/rate_vs_conns.png and
perf/latency.png next to it (their data files too).
"""
import argparse
import os
import statistics
import subprocess
import sys
from collections import OrderedDict, defaultdict


def load(path):
    res = defaultdict(list)  # (metric, side) -> [(value, extra dict)]
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            metric, side, _round, value = parts[:4]
            extra = {}
            for kv in (parts[4] if len(parts) > 4 else "").split():
                if "=" in kv:
                    k, v = kv.split("=", 1)
                    extra[k] = v
            try:
                res[(metric, side)].append((float(value), extra))
            except ValueError:
                pass
    return res


def load_meta(path):
    meta = OrderedDict()
    failures = []
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            if k == "failure":
                failures.append(v)
            else:
                meta[k] = v
    return meta, failures


def fmt(v, unit):
    if unit == "Gbit/s":
        return "%.2f" % v
    if unit == "%":
        return "%.2f" % v
    if v >= 100:
        return "{:,.0f}".format(v).replace(",", " ")
    return "%.1f" % v


def summary(res, metric, side, unit):
    vals = [v for v, _ in res.get((metric, side), [])]
    if not vals:
        return None, "not measured"
    med = statistics.median(vals)
    if len(vals) == 1:
        return med, "%s %s" % (fmt(med, unit), unit)
    return med, "%s %s (%s–%s, n=%d)" % (fmt(med, unit), unit, fmt(min(vals), unit),
                                        fmt(max(vals), unit), len(vals))


def pct_median(res, metric, side, key):
    vals = []
    for _, ex in res.get((metric, side), []):
        try:
            vals.append(float(ex[key]))
        except (KeyError, ValueError):
            pass
    return statistics.median(vals) if vals else None


ADD_PROGRAMS_NOTE = (" Each request crosses the port (AF_XDP or af_packet, see *What each path costs per packet*) into dpsockd, a worker, the shim's FIFO and an eventfd or spin hand-off to the program, and the same way back, on top of the veth the kernel run also uses; with the server program on CPU 0 the kernel run has client, veth and server on one CPU with no cross-CPU wake-up at all, while the dpsock run crosses to dpsockd's CPU and back twice per round trip. A NIC PMD (mlx5) removes the kernel crossings; the hand-off itself is the ring measured in section 1.")

PATHS = ("af_xdp", "af_packet")
PATH_NAME = {"af_xdp": "AF_XDP", "af_packet": "af_packet"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--meta", required=True)
    ap.add_argument("--ring", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--plots", required=True)
    ap.add_argument("--gnuplot", default="1")
    a = ap.parse_args()

    res = load(a.results)
    meta, failures = load_meta(a.meta)
    ring = open(a.ring).read().strip() if os.path.exists(a.ring) else ""
    quick = meta.get("mode") == "quick"
    secs = meta.get("secs", "?")
    warm = meta.get("warmup", "?")
    rounds = meta.get("rounds", "?")

    memif = ("dpsock: dpsock-echo --raw on net_memif (role=server), `taskset -c 1`, EAL `-l 1` "
             "⇄ dpsock-loadgen on net_memif (role=client), `taskset -c 0`, EAL `-l 0`")
    veth = ("kernel: kernel_echo in netns A `taskset -c 1` ⇄ veth (MTU 1500, default offloads) "
            "⇄ kernel_load in netns B `taskset -c 0`")
    afp = ("client: kernel_load -m udp in netns B `taskset -c 0`; server on CPU 1 in netns A: "
           "dpsock-echo --raw (EAL `-l 1`) on net_af_xdp (one queue) or net_af_packet "
           "(qpairs=1), or kernel_echo; same veth")
    spn = ("client: sockperf in netns B `taskset -c 0`; server on CPU 1 in netns A: "
           "dpsock-echo (sockperf framing, EAL `-l 1`) on net_af_xdp (one queue) or "
           "net_af_packet (qpairs=1), or `sockperf sr` on the kernel; same veth")

    rows = []  # (metric, kernel, dpsock, ratio, how)
    rows3 = []  # (metric, kernel, af_xdp, af_packet, ratio af_xdp, ratio af_packet, how)

    def add(metric_key, label, unit, how, lower_better=False):
        km, ks = summary(res, metric_key, "kernel", unit)
        dm, ds = summary(res, metric_key, "dpsock", unit)
        ratio = "—"
        if km and dm:
            ratio = "%.2f×" % (dm / km)
            if lower_better:
                ratio += " (lower is better)"
        rows.append((label, ks, ds, ratio, how))

    def add3(metric_key, label, unit, how, lower_better=False):
        km, ks = summary(res, metric_key, "kernel", unit)
        cells, ratios = [], []
        for side in PATHS:
            m, txt = summary(res, metric_key, side, unit)
            cells.append(txt)
            r = "—"
            if km and m:
                r = "%.2f×" % (m / km)
            ratios.append(r)
        if lower_better:
            label += " (lower is better)"
        rows3.append((label, ks, cells[0], cells[1], ratios[0], ratios[1], how))

    rows.append(("hand-off ring, ns per item (dpsock_spsc vs rte_ring SP/SC)", "— (no kernel counterpart)",
                 "see [Hand-off ring](#hand-off-ring)", "see there",
                 "`test/perf/run_ring_bench.sh` (lcores 0-1: producer CPU 1, consumer CPU 0)"))
    rr_conns = sorted({int(m[4:]) for (m, _s) in res if m.startswith("rr_c")})
    for c in rr_conns:
        add("rr_c%d" % c, "TCP request/response, 64 B, %d connection%s, transactions/s"
            % (c, "" if c == 1 else "s"), "/s",
            "`-m rr -c %d -s 64 -t %s`; %s; %s" % (c, secs, memif, veth))
    add("churn", "TCP connections/s (connect, 64 B request/reply, close; 16 at a time)", "/s",
        "`-m churn -c 16 -s 64 -t %s`; same pinning as above" % secs)
    add("bulk", "TCP single-stream bulk, Gbit/s sent (echoed back by the server)", "Gbit/s",
        "`-m bulk -c 1 -t %s`; same pinning as above" % secs)
    for c in (1, 16):
        add("udp_rr_c%d" % c, "UDP request/response, 64 B, %d socket%s, transactions/s"
            % (c, "" if c == 1 else "s"), "/s",
            "`-m udp -c %d -s 64 -t %s` (one datagram outstanding per socket); same pinning as above"
            % (c, secs))
    mem_pmd = next((e.get("pmd") for _, e in res.get(("mem_per_conn", "dpsock"), []) if e.get("pmd")),
                   "net_af_packet")
    add("mem_per_conn", "memory per idle established connection, bytes (server side)", "B",
        "kernel_load -m idle -c N from netns B (CPU 0) to the server on CPU 1 (dpsock-echo on %s / "
        "veth); dpsock: Δ lwip_mem_bytes / N (+ Δ mbufs_held); kernel: Δ Slab / 2N" % mem_pmd,
        lower_better=True)

    add3("udp_c1", "UDP echo, 64 B, 1 socket, datagrams/s (kernel client)", "/s",
         "`kernel_load -m udp -c 1 -s 64 -t %s`; %s" % (secs, afp))
    add3("udp_c16", "UDP echo, 64 B, 16 sockets, datagrams/s (kernel client)", "/s",
         "`kernel_load -m udp -c 16 -s 64 -t %s`; same" % secs)
    add3("sp_udp_lat", "sockperf ping-pong UDP 64 B against the native dpsock-echo, p50 µs", "µs",
         "`sockperf pp -m 64 -t %s`; %s" % (secs, spn), lower_better=True)
    add3("sp_tcp_lat", "sockperf ping-pong TCP 64 B, native dpsock-echo, p50 µs", "µs",
         "`sockperf pp --tcp -m 64 -t %s`; same" % secs, lower_better=True)
    add3("sp_udp_tp", "sockperf throughput UDP 64 B, native dpsock-echo, messages/s sent", "/s",
         "`sockperf tp -m 64 -t %s`; same" % secs)
    add3("sp_tcp_tp", "sockperf throughput TCP 64 B, native dpsock-echo, messages/s sent", "/s",
         "`sockperf tp --tcp -m 64 -t %s`; same" % secs)
    add3("idle_cpu", "CPU use while idle, % of one CPU", "%",
         "dpsockd (default idle settings, 1 worker, `taskset -c 1`) on each port vs kernel_echo; "
         "utime+stime from /proc/PID/stat", lower_better=True)
    prog = ("server in netns A `taskset -c 1`: preloaded (`LD_PRELOAD=libdpsock_preload.so`) with "
            "dpsockd on net_af_xdp (one queue) or net_af_packet (qpairs=1), EAL `-l 1`, "
            "`taskset -c 1`: both on CPU 1; or on the kernel; client in netns B `taskset -c 0`")
    prog_rows = [
        ("pl_sockperf_udp_lat", "sockperf ping-pong UDP 64 B, p50 latency µs (unmodified sockperf sr under the preload)", "µs",
         "`sockperf pp -m 64 -t %s`; %s" % (secs, prog), True),
        ("pl_sockperf_tcp_lat", "sockperf ping-pong TCP 64 B, p50 latency µs", "µs",
         "`sockperf pp --tcp -m 64 -t %s`; same" % secs, True),
        ("pl_sockperf_udp_lat_split", "sockperf ping-pong UDP 64 B, p50 µs, server program on CPU 0 "
         "(with the client), dpsockd alone on CPU 1", "µs",
         "as above, server program `taskset -c 0` on both sides", True),
        ("pl_sockperf_tcp_lat_split", "sockperf ping-pong TCP 64 B, p50 µs, server program on CPU 0, "
         "dpsockd alone on CPU 1", "µs", "same", True),
        ("pl_sockperf_udp_tp", "sockperf throughput UDP 64 B, messages/s sent", "/s",
         "`sockperf tp -m 64 -t %s`; same" % secs, False),
        ("pl_sockperf_tcp_tp", "sockperf throughput TCP 64 B, messages/s sent", "/s",
         "`sockperf tp --tcp -m 64 -t %s`; same" % secs, False),
        ("pl_nginx", "nginx (1 worker) + wrk, requests/s", "/s",
         "`wrk -t 1 -c 64 -d %ss` against `return 200`; same" % secs, False),
        ("pl_redis_set", "redis-server + redis-benchmark SET, requests/s", "/s",
         "`redis-benchmark -c 50 -t set,get -n %d`; same" % (int(secs) * 40000 if str(secs).isdigit() else 0), False),
        ("pl_redis_get", "redis-server + redis-benchmark GET, requests/s", "/s", "same run", False),
        ("pl_postgres", "PostgreSQL 15 + pgbench -S (8 clients), transactions/s", "/s",
         "`pgbench -S -c 8 -j 1 -T %s`, a backend process per client; same" % secs, False),
    ]
    skip_why = meta.get("programs_skip")
    for key, label, unit, how, lower in prog_rows:
        if skip_why:
            rows3.append((label, "—", "not measured: %s" % skip_why, "not measured", "—", "—", how))
        else:
            add3(key, label, unit, how, lower_better=lower)
    # section 7: bulk through random loss (test/perf/run-loss.sh)
    kcc = meta.get("loss_kernel_cc", "?")
    loss_how = ("iperf3 -c in netns A, `-n %s` MiB, to iperf3 -s on B's kernel; nftables in B drops "
                "that share of all TCP packets in both directions (`numgen random`); dpsock: "
                "preloaded, dpsockd workers on lcores %s on net_af_packet (one queue pair each); "
                "Linux: a second veth between the same namespaces; TSO/GSO/GRO off on both veths"
                % (meta.get("loss_mb", "?"), meta.get("loss_lcores", "?")))
    loss_pcts = sorted({m[4:].split("_")[0] for (m, _s) in res if m.startswith("loss")}, key=float)
    for p in loss_pcts:
        pct = p
        for key, label in (("loss%s_tx" % p, "dpsock sends through %s%% loss each way, MiB/s "
                            "(Linux: its default congestion control, %s)" % (pct, kcc)),
                           ("loss%s_tx_cubic" % p, "dpsock sends through %s%% loss each way, MiB/s "
                            "(Linux: cubic, `iperf3 -C cubic`)" % pct),
                           ("loss%s_rx" % p, "the Linux peer sends (%s), dpsock receives, %s%% loss "
                            "each way, MiB/s (`iperf3 -R`)" % (kcc, pct))):
            if meta.get("loss_skip"):
                rows.append((label, "—", "not measured: %s" % meta["loss_skip"], "—", loss_how))
            else:
                add(key, label, "MiB/s", loss_how)

    L = []
    P = L.append
    P("# dpsock performance against the Linux kernel")
    P("")
    if quick:
        P("> **Smoke run (`test/perf/run-all --quick`)**: %s rounds of %s s on a shared, busy "
          "machine. The numbers are real but noisy; they show that the benchmark works, not what "
          "dpsock can do. The full report comes from `test/perf/run-all` on a quiet machine." % (rounds, secs))
        P("")
    P("Generated by `test/perf/run-all` (%s, %s). dpsock and the Linux kernel run on the same "
      "machine in the same run; every figure is the **median of %s rounds (min–max)**, the ratio is "
      "dpsock's median over the kernel's. Speeds are reported, never asserted. The first table "
      "compares the stacks (dpsock over memif against the kernel over a veth); the second puts "
      "dpsock's two kernel ports, AF_XDP and af_packet, side by side with the kernel on one "
      "veth." % (meta.get("mode", "?"), meta.get("date", "?"), rounds))
    P("")
    P("- Machine: %s" % meta.get("host", "?"))
    P("- dpsock: %s; EAL memory: %s" % (meta.get("dpsock_version", "?"), meta.get("eal_mem", "?")))
    P("- Load average at start / end: %s / %s" % (meta.get("load_start", "?"), meta.get("load_end", "?")))
    P("- Kernel veth offloads (kernel side of section 2): %s" % meta.get("kernel_offloads", "?"))
    P("- Pinning, always: **CPU 0 runs the client, CPU 1 the server** (taskset for every "
      "process; each dpsock process has one EAL lcore, its main lcore, which runs the worker, and "
      "EAL's control threads inherit the taskset CPU).")
    P("- Each load run lasts %s s; rates count over a window starting %s s in (see *How each "
      "metric is measured*)." % (secs, warm))
    if failures:
        P("")
        P("**Measurements that failed in this run:**")
        for f in failures:
            P("- %s" % f)
    P("")
    P("| metric | kernel | dpsock | ratio | command, vdev and pinning |")
    P("|---|---|---|---|---|")
    for r in rows:
        P("| %s |" % " | ".join(r))
    P("")
    P("## AF_XDP, af_packet and the kernel, side by side")
    P("")
    P("The same veth, the same client in netns B on CPU 0, the server on CPU 1: dpsock on "
      "DPDK's AF_XDP PMD (net_af_xdp, the default where the machine has it), on its af_packet "
      "PMD (net_af_packet, the fallback), and the Linux kernel. Ports measured in this run: %s."
      % (", ".join(PATH_NAME.get(x, x) for x in meta.get("pmds", "af_packet").split()) or "none"))
    P("")
    P("| metric | kernel | dpsock on AF_XDP | dpsock on af_packet | AF_XDP ÷ kernel | af_packet ÷ kernel | command, vdev and pinning |")
    P("|---|---|---|---|---|---|---|")
    for r in rows3:
        P("| %s |" % " | ".join(r))
    P("")

    P("## Sharing the NIC with the kernel (AF_XDP)")
    P("")
    P("The same programs on the same AF_XDP port, owned by dpsock (dpsockd has the address and "
      "its XDP program, the PMD's, redirects every frame of the queue) and shared with the kernel "
      "(A's kernel has the address; dpsockd's interface has none, and dpsock's XDP program looks "
      "each frame's protocol, address and port up in its maps and passes the kernel whatever "
      "dpsock does not serve; docs/running.md). In each round dpsockd runs owned, then shared, "
      "restarted for each. The ratio is shared ÷ owned: above 1 a latency got longer, below 1 a "
      "rate got lower; the difference is sharing's cost (the look-ups, the kernel's neighbour "
      "table through the net view), within the rounds' spread when the ranges overlap.")
    P("")
    P("| metric | owned | shared | shared ÷ owned |")
    P("|---|---|---|---|")
    for key, label, unit in (
            ("pl_sockperf_udp_lat", "sockperf ping-pong UDP 64 B, p50 µs", "µs"),
            ("pl_sockperf_tcp_lat", "sockperf ping-pong TCP 64 B, p50 µs", "µs"),
            ("pl_sockperf_udp_tp", "sockperf throughput UDP 64 B, messages/s", "/s"),
            ("pl_sockperf_tcp_tp", "sockperf throughput TCP 64 B, messages/s", "/s"),
            ("pl_nginx", "nginx (1 worker) + wrk -c 64, requests/s", "/s")):
        om, ot = summary(res, key, "af_xdp", unit)
        sm, st = summary(res, key, "af_xdp_shared", unit)
        P("| %s | %s | %s | %s |" % (label, ot, st, "%.3f×" % (sm / om) if om and sm else "—"))
    xdp = (("udp_served", "UDP to a served port"), ("tcp_served", "TCP to a served port"),
           ("tcp_ephemeral", "TCP to dpsock's ephemeral range (an active open's reply)"),
           ("udp_group", "UDP to a joined group"), ("tcp_kernel", "TCP to a kernel port (passed)"),
           ("arp_kernel", "ARP (passed)"))
    for name, what in xdp:
        om, ot = summary(res, "xdp_%s_ns" % name, "af_xdp", "ns")
        sm, st = summary(res, "xdp_%s_ns" % name, "af_xdp_shared", "ns")
        P("| XDP program per frame, %s, ns | %s | %s | %s |" % (
            what, ot, st, "+%.0f ns" % (sm - om) if om is not None and sm is not None else "—"))
    P("")
    om = summary(res, "xdp_udp_served_ns", "af_xdp", "ns")[0]
    sm = summary(res, "xdp_udp_served_ns", "af_xdp_shared", "ns")[0]
    lat = summary(res, "pl_sockperf_udp_lat", "af_xdp_shared", "µs")[0]
    if om is not None and sm is not None and lat:
        P("The look-ups' own cost: a UDP ping-pong round trip takes one frame through the "
          "program on dpsock's side, %.0f ns more than the PMD's program, **%.2f %% of the "
          "shared round trip's p50** (%.1f µs). The XDP rows come from "
          "`build/test/unit/xdp_filter_test --bench` (BPF_PROG_TEST_RUN, 2^20 runs per frame, "
          "median of 5; dpsock's program with 64 served ports, the ephemeral range and a group, "
          "against a program with the PMD's one call, `bpf_redirect_map` on the queue's "
          "xsks_map slot)." % (sm - om, 100.0 * (sm - om) / (lat * 1000.0), lat))
        P("")

    # latency
    P("## Latency percentiles (µs, medians over the rounds)")
    P("")
    P("From the load generators' histograms (8 sub-buckets per power of two, about 6 %). "
      "dpsock-loadgen's cover its whole run; kernel_load's the measurement window.")
    P("")
    P("| metric | side | p50 | p99 | p99.9 |")
    P("|---|---|---:|---:|---:|")
    lat_rows = []
    lat_sides = set()
    LAT_METRICS = ["rr_c%d" % c for c in rr_conns] + [
        "udp_rr_c1", "udp_rr_c16", "churn", "udp_c1", "udp_c16", "sp_udp_lat", "sp_tcp_lat",
        "pl_sockperf_udp_lat", "pl_sockperf_tcp_lat",
        "pl_sockperf_udp_lat_split", "pl_sockperf_tcp_lat_split"]
    SIDES = ("kernel", "dpsock") + PATHS + ("af_xdp_shared",)
    for m in LAT_METRICS:
        for side in SIDES:
            p = [pct_median(res, m, side, k) for k in ("p50", "p99", "p999")]
            if p[0] is None:
                continue
            lat_rows.append((m, side, p))
            lat_sides.add(side)
            P("| %s | %s | %.1f | %.1f | %.1f |" % (m, side, p[0], p[1], p[2]))
    P("")

    # plots
    have_plots = False
    if a.gnuplot == "1":
        os.makedirs(a.plots, exist_ok=True)
        with open(os.path.join(a.plots, "rate_vs_conns.dat"), "w") as f:
            f.write("# conns kernel_median kernel_min kernel_max dpsock_median dpsock_min dpsock_max\n")
            for c in rr_conns:
                out = [str(c)]
                for side in ("kernel", "dpsock"):
                    v = [x for x, _ in res.get(("rr_c%d" % c, side), [])]
                    out += ["%.1f %.1f %.1f" % (statistics.median(v), min(v), max(v))] if v else ["NaN NaN NaN"]
                f.write(" ".join(out) + "\n")
        with open(os.path.join(a.plots, "latency.dat"), "w") as f:
            f.write("# label %s\n" % " ".join("%s_%s" % (sd, k) for sd in SIDES for k in ("p50", "p99")))
            for m in LAT_METRICS:
                vals = []
                for side in SIDES:
                    for k in ("p50", "p99"):
                        v = pct_median(res, m, side, k)
                        vals.append("NaN" if v is None else "%.2f" % v)
                if any(v != "NaN" for v in vals):
                    f.write("%s %s\n" % (m, " ".join(vals)))
        gp_rate = """
set output 'rate_vs_conns.png'
set title "TCP request/response, 64 B: transactions/s vs connections\\nkernel: veth, dpsock: memif; client CPU 0, server CPU 1 (median, min-max)"
set logscale x 2
set xlabel "connections"
set ylabel "transactions/s"
set grid
set key top left
set yrange [0:*]
plot 'rate_vs_conns.dat' using 1:2:3:4 with yerrorlines lw 2 title "Linux kernel", \\
     '' using 1:5:6:7 with yerrorlines lw 2 title "dpsock"
"""
        gp = """
set terminal pngcairo size 1100,560 font ",10" noenhanced
"""
        if rr_conns:
            gp += gp_rate
        gp += """
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
"""
        # one pair of bars per side that has figures (an all-NaN column
        # stops gnuplot's histogram)
        titles = {"kernel": "kernel", "dpsock": "dpsock (memif)", "af_xdp": "dpsock on AF_XDP",
                  "af_packet": "dpsock on af_packet", "af_xdp_shared": "dpsock on AF_XDP, shared"}
        plots = []
        for i, side in enumerate(SIDES):
            if side not in lat_sides:
                continue
            for j, k in enumerate(("p50", "p99")):
                col = 2 + 2 * i + j
                plots.append("'latency.dat' using %d%s title \"%s %s\"" % (
                    col, "" if plots else ":xtic(1)", titles[side], k))
        gp += "plot " + ", ".join(plots) + "\n"
        with open(os.path.join(a.plots, "plots.gp"), "w") as f:
            f.write(gp)
        r = subprocess.run(["gnuplot", "plots.gp"], cwd=a.plots, capture_output=True, text=True)
        if r.returncode == 0:
            have_plots = True
        else:
            sys.stderr.write("gnuplot failed: %s\n" % r.stderr)
    rel = os.path.relpath(a.plots, os.path.dirname(os.path.abspath(a.out)))
    if have_plots:
        P("![TCP rr rate vs connections](%s/rate_vs_conns.png)" % rel)
        P("")
        P("![latency percentiles](%s/latency.png)" % rel)
        P("")
    else:
        P("(No plots: gnuplot was not installed — `apt-get install -y gnuplot-nox`.)")
        P("")

    P("## Hand-off ring")
    P("")
    P("`test/perf/ring_bench` (`run_ring_bench.sh`): dpsock's SPSC ring (the preload library's "
      "hand-off between application threads and workers) against rte_ring SP/SC, between "
      "lcores 0 and 1; ns per element (one enqueue + one dequeue), ratio > 1 means dpsock is faster.")
    P("")
    P(ring if ring else "not measured (ring_bench failed)")
    P("")

    # details per metric
    def extras(metric, side):
        return [ex for _, ex in res.get((metric, side), [])]
    P("## How each metric is measured")
    P("")
    P("- **TCP rr, churn, bulk.** Same workload shape on both sides: dpsock-loadgen (dpsock) and "
      "`test/perf/kernel_load` (kernel; the same options and output lines, one epoll thread that "
      "blocks in epoll_wait) against dpsock-echo --raw and `test/perf/kernel_echo` (epoll raw echo, "
      "one thread). rr: one 64 B request outstanding per connection, a transaction is a full echo; "
      "churn: connect, 64 B request/reply, close (the client closes first), 16 connections at a time; "
      "bulk: one connection sending 64 KiB writes as fast as the window allows; both servers echo "
      "the bytes back (dpsock-echo has no sink mode), so the stream runs both ways on both sides. "
      "Every run lasts %s s. **Window:** the rate counts from %s s after the start to the end: "
      "kernel_load `--warmup %s`; for dpsock two reads of the client's `dpsock-stat` counters "
      "(rr: Δ`tcp_rx_bytes`/64, churn: Δ`tcp_connected`, bulk: Δ`tcp_tx_bytes`) divided by the time "
      "between the reads. dpsock-loadgen's own `rate` (transactions / whole run) is kept in "
      "`perf/results.tsv` as `whole_run_rate`; it is lower because of the first-second stall "
      "described below." % (secs, warm, warm))
    P("- **UDP request/response (memif).** dpsock-loadgen -m udp against dpsock-echo --raw "
      "over memif, and kernel_load -m udp against kernel_echo over the veth: N connected UDP "
      "sockets, one 64 B datagram outstanding each; dpsock's rate is Δ`udp_rx` of the client "
      "over the window.")
    P("- **UDP echo (veth).** A kernel client against each server: "
      "kernel_load -m udp (N connected UDP sockets, one 64 B datagram outstanding each, 200 ms "
      "loss timeout counted as err_lost) in netns B on CPU 0, against dpsock-echo --raw on "
      "net_af_xdp or net_af_packet, or kernel_echo, on CPU 1 in netns A, over the same veth "
      "(scripts/topo.sh: the client's tx checksum offload is off on that veth, on every run). "
      "The dpsock side still crosses the kernel (the veth, then XDP and an AF_XDP ring, or an "
      "AF_PACKET ring).")
    P("- **sockperf against the native echo.** The same veth and pinning; dpsock-echo without "
      "--raw speaks sockperf's framing and answers ping-pong and throughput, UDP and TCP; the "
      "kernel side is `sockperf sr` (one for UDP, one for TCP). p50 is sockperf's own "
      "percentile of the ½ round trip; throughput is the rate sockperf sent at (64 B).")
    mem_d = extras("mem_per_conn", "dpsock")
    mem_k = extras("mem_per_conn", "kernel")
    P("- **Memory per idle connection.** kernel_load -m idle opens N connections, holds them "
      "without traffic, and the server's memory is read before and after. dpsock: Δ`lwip_mem_bytes` "
      "(lwIP's allocator: pcb and dpsock socket) / N; mbufs held by idle connections should stay 0 "
      "(%s). Not counted: dpsock-echo's own per-connection struct (malloc) and the preallocated "
      "socket-table slot in the stats segment (256 B each, `stats.socket_slots`). Kernel: Δ Slab "
      "(/proc/meminfo, machine-wide) / 2N, because both ends are kernel sockets (struct tcp_sock, "
      "socket inode, file, dentry, epoll item); idle sockets hold no buffer pages. (%s)" % (
          "; ".join("N=%s, %s" % (e.get("n"), e.get("mbufs_held")) for e in mem_d) or "not measured",
          "; ".join("N=%s, Slab kB %s, TCP slab object %s B" % (e.get("n"), e.get("slab_kb"),
                                                                e.get("tcp_slab_objsize")) for e in mem_k)
          or "not measured"))
    P("- **Idle CPU.** dpsockd with the default worker settings (idle_poll_us = 200, sleeps up to "
      "1 ms) and one worker on CPU 1, no traffic, on each port: utime + stime over the window, "
      "as % of one CPU. The kernel has no process to run: kernel_echo, blocked in epoll_wait, is "
      "measured the same way for reference.")
    P("- **Unmodified programs (section 5).** The same Debian binaries run as servers in netns A, "
      "first under `LD_PRELOAD=libdpsock_preload.so` with dpsockd serving the address on "
      "net_af_xdp, then on net_af_packet (all rounds of one port, then the other), then on the "
      "kernel with the address on A's veth (all kernel rounds; AF_XDP's program takes every "
      "frame of its queue and af_packet sees every frame of its veth, so neither runs while the "
      "kernel has the address). dpsockd and the preloaded program share CPU 1, as a 1-core server would (the "
      "*server program on CPU 0* rows move the program, on both sides, to the client's CPU and "
      "leave CPU 1 to dpsockd alone: a polling stack wants a core of its own); the "
      "program's blocking calls spin for DPSOCK_RX_POLL / DPSOCK_SELECT_POLL (shim defaults) and "
      "then sleep. sockperf's figures are its own percentiles; wrk's Requests/sec; "
      "redis-benchmark's requests per second.%s%s" % (ADD_PROGRAMS_NOTE,
          (" Not measured in this run: %s." % meta["programs_skip"]) if meta.get("programs_skip") else ""))
    P("- **Bulk through random loss (section 7).** `test/perf/run-loss.sh`: the same iperf3 "
      "client in netns A sends to the same `iperf3 -s` on B's kernel, preloaded over dpsockd's "
      "veth or on the kernel over a second veth between the same namespaces; nftables in B "
      "drops the stated share of every TCP packet in both directions, on both paths. TSO, GSO "
      "and GRO are off on both veths so that the loss hits MSS-sized frames, as on a real "
      "link. dpsock's sender recovers with SACK/RACK/PRR and CUBIC (lwip/README.md); the "
      "Linux rows name the congestion control the kernel used: the namespace default (on this "
      "machine BBR, which does not reduce its rate on random loss) and CUBIC, the same kind as "
      "dpsock's. Rates are iperf3's received bits per second; the extra columns of results.tsv "
      "carry dpsock's recovery counters per run.")
    P("- **Servers poll while loaded.** The dpsock servers in sections 2 and 3 run with "
      "`worker.idle_poll_us = 100000` (poll for 100 ms after the last packet before sleeping), so "
      "they do not sleep between requests; dpsock-loadgen never sleeps while it runs. The kernel "
      "programs sleep in epoll_wait, as kernel programs do. The dpsock server is started after "
      "the kernel runs of each round and stopped before the next, so it never competes with them.")
    P("")

    P("## What each path costs per packet")
    P("")
    P("All three cross the same veth: the client's send in netns B runs B's stack and the "
      "veth's transmit on CPU 0, and hands the frame to A's side of the veth. From there:")
    P("")
    P("- **The kernel** allocates an skb (A's GRO off), runs IP, UDP or TCP and the socket "
      "lookup, queues the data on the socket and wakes the server thread, which is asleep in "
      "epoll_wait on CPU 1 (a cross-CPU wake-up: an IPI, and in a VM a halt exit), then pays a "
      "recvmsg and a sendmsg system call per message, the reply running the whole stack back "
      "down to the veth. Per message: two system calls, one wake-up, the full stack twice.")
    P("- **af_packet** (net_af_packet, TPACKET_V2 rings): the kernel still allocates the skb "
      "and runs its receive path far enough to hand the frame to the packet socket, which "
      "copies it into a slot of the mmapped RX ring; the fanout hash picks the socket (queue). "
      "The kernel's IP layer then sees the frame too and drops it (no address in A). dpsock "
      "reads the ring without a system call; each TX burst is copied into the TX ring and "
      "needs a sendto() to make the kernel build an skb per frame and transmit it. Per "
      "packet: an skb, one copy each way, the kernel's RX path up to the packet tap, and a "
      "system call per TX burst.")
    P("- **AF_XDP** (net_af_xdp): the frame meets the XDP program in the veth's NAPI poll, "
      "before any skb exists; it is redirected to the AF_XDP socket of that queue. A veth has "
      "no zero-copy mode, so the kernel copies the frame into a UMEM buffer (an mbuf of "
      "dpsock's pool) and posts it on the RX ring: no skb, no IP layer, no socket lookup. "
      "dpsock reads the ring without a system call while there is traffic (on an empty poll "
      "the PMD makes one recvfrom() for preferred busy polling); TX puts the mbuf itself on "
      "the TX ring and one sendto() per burst makes the kernel copy each frame into an skb "
      "for the veth. Per packet: one copy each way and no skb on receive. On a NIC with "
      "zero-copy AF_XDP (i40e, ice, mlx5...) the copies go as well: the NIC writes into "
      "the UMEM and reads from it.")
    P("")
    sat = []
    for key, what in (("sp_udp_tp", "UDP"), ("sp_tcp_tp", "TCP")):
        cells = []
        for side in ("kernel",) + PATHS:
            m, _ = summary(res, key, side, "/s")
            cells.append("%s %s" % ("kernel" if side == "kernel" else PATH_NAME[side],
                                    "%.2f µs" % (1e6 / m) if m else "not measured"))
        sat.append("%s: %s" % (what, ", ".join(cells)))
    P("Measured here, time per 64 B message at the rate sockperf throughput sustained (1 / "
      "rate; the sender, not only the server, may be the limit): %s. The ping-pong rows give "
      "the latency side: the ½ round trip of each path over the same veth." % "; ".join(sat))
    P("")
    P("## Where this machine limits the result")
    P("")
    P("- **2 vCPUs, shared.** Client and server each own one vCPU; there is no spare core for "
      "interrupts, EAL control threads, the kernel's softirq work or other tenants. On the kernel "
      "side veth delivers a packet in the sender's softirq, so part of the server's receive work "
      "runs on the client's CPU (and the other way round): the kernel is not confined to one core "
      "per side the way dpsock is. Noise from a shared host shows as the min–max spread.")
    P("- **No NIC.** memif between two processes is a copy through shared memory on each side "
      "(the PMD copies mbufs into its rings; no zero-copy mode is used); net_af_xdp and "
      "net_af_packet cross the kernel (veth transmit, a copy into the AF_XDP or AF_PACKET ring "
      "in both directions), so the rows of the second table compare the kernel with dpsock "
      "*plus* a kernel path. AF_XDP on a veth runs in copy mode (no zero-copy driver), with "
      "the XDP program in the veth's native mode.")
    P("- **No hardware offloads.** memif, AF_XDP and af_packet offer no checksum offload, no TSO and "
      "no LRO: dpsock computes every checksum in software (lwIP's, by 64-bit adds: lwip/chksum.c) and "
      "lwIP segments every 1448-byte MSS itself (`tcp.segmentation = auto`; the netif's software "
      "GSO, `gso`, is no faster: 0.90× (IPv4) and 0.95× (IPv6) of that over af_packet in a 256 MiB "
      "echo, where DPDK's GSO library, which it replaced, was 3× slower); the segments "
      "of a receive burst are merged before lwIP (`tcp.gro`). The kernel's veth side keeps its "
      "software offloads (GSO/GRO, checksums skipped on veth), which moves 64 KiB super-frames: "
      "the bulk row favours the kernel by design.")
    P("- **Kernel wake-ups in a VM.** The kernel programs block in epoll_wait, as kernel "
      "programs normally do, and every request then costs a cross-vCPU wake-up, which is slow in "
      "a VM (halt exits): this dominates the 1-connection kernel rows (a 64 B echo round trip of "
      "tens of µs). The dpsock processes never sleep while loaded. `kernel_load --busy-poll` (a "
      "spinning client) is there for a closer look; the report does not use it.")
    P("- **MTU 1500 on both sides**, one queue pair, one worker; RSS and rte_flow steering are "
      "not exercised here (one queue). The integration tests run two workers on two AF_XDP "
      "queues of the veth.")
    P("- **What a real mlx5 host would change.** One NIC port (or a VF per side, or two hosts): "
      "mlx5's zero-copy RX/TX instead of memif's copies, hardware IP/TCP/UDP checksums (dpsock "
      "sets them when the port offers them), RSS across several workers, rte_flow steering, "
      "dedicated isolated cores with no other tenant, no veth softirq sharing on the kernel side "
      "but the kernel paying for real interrupts and its driver. Published single-core figures "
      "on ConnectX-5 (published in the bench-iip README, github.com/yasukata/bench-iip, \"performance numbers of other TCP/IP stacks\"): Linux about "
      "256 k 1-byte req/s per core, lwIP on DPDK about 2.3 M; this VM cannot show those absolute "
      "numbers, only the ratio on the same hardware. A NIC with TSO gets lwIP's 64 KiB "
      "super-segments to cut (`tcp.segmentation`, tested on net_tap's TSO), as the kernel's veth "
      "path does in software here.")
    P("")
    P("## Known gaps (apps and stack)")
    P("")
    stall = [e.get("max_us") for e in extras("churn", "dpsock")]
    P("- Every dpsock-loadgen run **loses about its first second** over memif: its first ARP "
      "request goes out before the memif link is up (counted as `tx_drops`), lwIP re-sends it "
      "after 1 s, and the first connection (then the others, which wait for it) starts only then. "
      "`elapsed_s` and `rate` include that second (churn's max connect time, %s µs, is it). "
      "run-all measures a window instead. Either loadgen waiting for link-up / ARP before the first "
      "connect, or the stack re-sending pending ARP requests when a port's link comes up, would "
      "remove it." % (", ".join(x for x in stall if x) or "n/a"))
    P("- dpsock-loadgen has **no warm-up / measurement window option** and dpsock-echo **no sink "
      "mode** for bulk (both sides echo here).")
    P("")
    P("## Reproduce")
    P("")
    P("```sh")
    P("ninja -C build && test/perf/run-all          # ~20 min, root, a quiet 2-CPU machine")
    P("test/perf/run-all --quick                    # ~5 min smoke run, report in build/perf-quick/")
    P("test/perf/run-all --only udp,programs --pmds af_xdp,af_packet   # the second table only")
    P("meson test -C build --suite perf run-all --verbose")
    P("```")
    P("")
    P("Raw per-round results: `%s/results.tsv` (metric, side, round, value, percentiles)." % rel)
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
