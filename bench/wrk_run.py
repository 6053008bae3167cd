#!/usr/bin/env python3
"""One measured wrk run, for http_read_bench.sh.

usage: wrk_run.py OUT_FILE LABEL ROOT_PID WAIT_IDLE -- wrk ARGS...

Waits up to WAIT_IDLE seconds for the box to be quiet (processes outside
ROOT_PID's tree using < 1/4 core for 2 s in a row), runs wrk, keeps its output in
OUT_FILE followed by a line "BenchCPU: <cores> Background: <cores>", and
prints one line: req/s, wrk's p50/p99, the CPU used by the benchmark (ROOT_PID's
process tree -- feedd, nginx -- plus wrk: "cpu") and by everything else ("bg"),
in cores (this box has 2). Exits non-zero when wrk fails.
"""
import os
import re
import resource
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """Busy CPU seconds of the whole box."""
    with open("/proc/stat") as f:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return (user + nice + system + irq + softirq) / TICK


def tree_cpu(root):
    """CPU seconds of `root` and its live descendants."""
    parent, cpu = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(entry)] = int(fields[1])
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / TICK
    total = 0.0
    for pid, seconds in cpu.items():
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += seconds
    return total


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main():
    out_file, label, root, wait_idle = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    cmd = sys.argv[sys.argv.index("--") + 1:]

    deadline = time.monotonic() + wait_idle
    quiet = 0
    while wait_idle > 0:
        m0, t0 = machine_cpu(), tree_cpu(root)
        time.sleep(0.5)
        m1, t1 = machine_cpu(), tree_cpu(root)
        others = ((m1 - m0) - (t1 - t0)) / 0.5
        quiet = quiet + 1 if others < 0.25 else 0
        if quiet >= 4:  # 2 s in a row
            break
        if time.monotonic() >= deadline:
            print(f"  (the box stayed busy for {wait_idle:g} s: other processes use "
                  f"{others:.2f} cores; measuring anyway)", flush=True)
            break

    m0, t0, c0, w0 = machine_cpu(), tree_cpu(root), children_cpu(), time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    m1, t1, c1, w1 = machine_cpu(), tree_cpu(root), children_cpu(), time.monotonic()
    wall = w1 - w0
    mine = ((t1 - t0) + (c1 - c0)) / wall
    bg = max(0.0, (m1 - m0) / wall - mine)
    text = out.stdout + f"\nBenchCPU: {mine:.2f} Background: {bg:.2f}\n"
    with open(out_file, "w") as f:
        f.write(text)
    if out.returncode != 0:
        sys.exit(f"wrk failed:\n{out.stdout}")

    rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
    p50 = re.search(r"^\s*50%\s+(\S+)", text, re.M)
    p99 = re.search(r"^\s*99%\s+(\S+)", text, re.M)
    bad = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", text)
    err = re.search(r"Socket errors:.*", text)
    line = (f"  {label:<12} {float(rps.group(1)) if rps else 0:9.0f} req/s  "
            f"p50 {p50.group(1) if p50 else '?':>8}  p99 {p99.group(1) if p99 else '?':>8}  "
            f"cpu {mine:.2f} bg {bg:.2f}")
    if bad:
        line += f"  NON-2xx {bad.group(1)}"
    if err:
        line += f"  {err.group(0)}"
    print(line, flush=True)


if __name__ == "__main__":
    main()
