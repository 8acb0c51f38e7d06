#!/usr/bin/env python3
"""Charge each transport of one `braid bench transport --net` run the CPU the
host spent for it, from a system-wide perf recording of the run (run.sh).

getrusage counts a process's own time. Through the bed, the kernel's receive
processing of every packet the emulator writes into a namespace runs in the
emulator's write(2) (the TUN device hands the packet to the stack inline),
and BBR's paced sends run from timers in whatever context the CPU is in,
often idle. For kernel TCP that is most of its stack: the segments' receipt,
the ACKs it sends, the ACKs' receipt and the segments they clock out. For a
UDP transport it is the datagrams' receipt up to the socket's queue. So each
transport is charged here:

  ends   its two processes' CPU time, as the bench reports it (getrusage;
         perf's samples of them are given too, as a check);
  stack  the emulator's samples under netif_receive_skb (the kernel's
         receive path and all it does inline: for TCP, ACKs and sends);
  idle   samples in the idle task's context in the network stack's
         softirq work (pacing timers, TSQ tasklets, NET_RX) during its test.

The emulator's own work (its reads and writes of the TUN devices up to
netif_receive_skb, its queues, its sleeps) is charged to no transport, nor
is softirq work that interrupted other processes (on a shared machine it
cannot be told from theirs; it is left out, which favours TCP).

Usage: hostcpu.py PERF_DATA BENCH_JSON   (prints a JSON object)
"""
import collections
import json
import subprocess
import sys

STACK = ("netif_receive_skb", "__netif_receive_skb_one_core", "netif_receive_skb_list_internal")
NET_SOFTIRQ = ("tcp_v4_rcv", "tcp_write_xmit", "tcp_tasklet_func", "tcp_pace_kick", "tcp_tsq_handler",
               "__udp4_lib_rcv", "udp_rcv", "ip_rcv", "net_rx_action", "__netif_receive_skb_one_core",
               "tun_net_xmit", "ip_output", "__dev_queue_xmit")


def events(path):
    """Yields ('fork', child, parent, t), ('exec', pid, name) and ('sample', pid, t, period_ns, frames)."""
    out = subprocess.run(["perf", "script", "-i", path, "--show-task-events", "-F", "pid,time,period,ip,sym"],
                         capture_output=True, text=True, check=True).stdout
    for blk in out.split("\n\n"):
        lines = [l for l in blk.split("\n") if l.strip()]
        while lines and "PERF_RECORD_" in lines[0]:
            l = lines.pop(0)
            if "PERF_RECORD_FORK" in l:
                # "  pid/tid  t: PERF_RECORD_FORK(child:ctid):(parent:ptid)"
                t = float(l.split()[1].rstrip(":"))
                rec = l.split("PERF_RECORD_FORK(")[1]
                child = int(rec.split(":")[0])
                parent = int(rec.split("(")[1].split(":")[0])
                if child == int(rec.split(":")[1].split(")")[0]):  # a process, not a thread
                    yield ("fork", child, parent, t)
            elif "PERF_RECORD_COMM exec:" in l:
                # "... PERF_RECORD_COMM exec: name:pid/tid"
                name, ids = l.split("PERF_RECORD_COMM exec: ")[1].rsplit(":", 1)
                yield ("exec", int(ids.split("/")[0]), name.strip())
        if not lines:
            continue
        head = lines[0].split()
        pid, t, period = int(head[0].split("/")[0]), float(head[1].rstrip(":")), int(head[2])
        frames = [l.split()[1] for l in lines[1:] if len(l.split()) > 1]
        yield ("sample", pid, t, period, frames)


def main():
    data, bench = sys.argv[1], json.load(open(sys.argv[2]))
    evs = list(events(data))
    # The bench process (the emulator's) is the one that forks the tests'
    # sides, which run the same binary: processes it forks that exec a
    # program of its own name (its other children are `ip` commands).
    kids = collections.defaultdict(list)
    comm = {}
    for e in evs:
        if e[0] == "fork":
            kids[e[2]].append(e[1])
        elif e[0] == "exec":
            comm[e[1]] = e[2]
    def sides(p):
        return [c for c in kids[p] if comm.get(c) and comm.get(c) == comm.get(p)]
    emu = max(kids, key=lambda p: len(sides(p)))
    children = sides(emu)
    names = [r["transport"] for r in bench]
    if len(children) < 2 * len(names):
        sys.exit(f"hostcpu: {len(children)} children of {emu}, want {2 * len(names)}")
    # Children in fork order: each test's listen side, then its connect side.
    owner = {}
    for i, c in enumerate(children[: 2 * len(names)]):
        owner[c] = names[i // 2]
    span = {n: [float("inf"), 0.0] for n in names}
    for e in evs:
        if e[0] == "sample" and e[1] in owner:
            s = span[owner[e[1]]]
            s[0], s[1] = min(s[0], e[2]), max(s[1], e[2])
    acc = {n: collections.Counter() for n in names}
    for e in evs:
        if e[0] != "sample":
            continue
        _, pid, t, period, frames = e
        if pid in owner:
            acc[owner[pid]]["ends"] += period
            continue
        n = next((n for n in names if span[n][0] <= t <= span[n][1]), None)
        if n is None:
            continue
        if pid == emu:
            acc[n]["emulator"] += period
            if any(f in STACK for f in frames):
                acc[n]["stack"] += period
        elif pid == 0 and any(f in NET_SOFTIRQ for f in frames):
            acc[n]["idle"] += period
    res = {}
    for r in bench:
        n, gb = r["transport"], r["bytes"] / 1e9
        a = {k: v / 1e9 for k, v in acc[n].items()}
        outside = (a.get("stack", 0) + a.get("idle", 0)) / gb
        res[n] = {"mbit_s": r["gbps"] * 1000, "rusage_cpu_s_per_gb": r["cpu_sec_per_gb"],
                  "perf_s": {k: round(v, 3) for k, v in a.items()},
                  "ends_s_per_gb": a.get("ends", 0) / gb, "outside_s_per_gb": outside,
                  "host_s_per_gb": r["cpu_sec_per_gb"] + outside}
    if "tcp" in res and "sctp" in res:
        res["ratio_rusage"] = res["sctp"]["rusage_cpu_s_per_gb"] / res["tcp"]["rusage_cpu_s_per_gb"]
        res["ratio_host"] = res["sctp"]["host_s_per_gb"] / res["tcp"]["host_s_per_gb"]
        res["ratio_ends_perf"] = res["sctp"]["ends_s_per_gb"] / res["tcp"]["ends_s_per_gb"]
        res["ratio_host_perf"] = ((res["sctp"]["ends_s_per_gb"] + res["sctp"]["outside_s_per_gb"])
                                  / (res["tcp"]["ends_s_per_gb"] + res["tcp"]["outside_s_per_gb"]))
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
