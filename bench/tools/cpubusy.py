#!/usr/bin/env python3
"""cpubusy.py: how much of the machine other work uses, from /proc (Linux).

  cpubusy.py [SECONDS]
      Percent of all CPUs busy over SECONDS (default 1, at most 10).

  cpubusy.py --pid SERVER [--label NAME] [--out FILE] -- COMMAND...
      Runs COMMAND (the load generator; its output passes through), and reports
      for the time it ran: the share of the machine used by SERVER, by COMMAND
      and its children, and by everything else ("other"), each in percent of
      nproc x elapsed. Appends "NAME other=.. server=.. loadgen=.. idle=.." to
      FILE (and prints it on stderr). steal: time the hypervisor took. Exit status: COMMAND's.

bench/run.sh wraps every measured wrk run in the second form: "other" (or
"steal") above ~10 % means something else (a compiler, say) took CPU from the
run, whose figures are then indicative only. "other" also holds kernel threads
such as ksoftirqd, so a few percent there can be the run's own network work.
"""
import os
import resource
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
NPROC = os.cpu_count() or 1


def stat_total():
    """Ticks of the whole machine: (all, idle+iowait, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]] + [0] * 8
    return sum(v[:8]), v[3] + v[4], v[7]


def pid_ticks(pid):
    """utime + stime of a process (all its threads), in ticks; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0


def main():
    args = sys.argv[1:]
    if not args or args[0] != "--pid":
        secs = float(args[0]) if args else 1.0
        t1, i1, _ = stat_total()
        time.sleep(max(0.1, min(secs, 10.0)))
        t2, i2, _ = stat_total()
        print(f"{100.0 * (1 - (i2 - i1) / max(1, t2 - t1)):.0f}")
        return 0
    pid, label, out = None, "run", None
    while args and args[0] != "--":
        if args[0] == "--pid":
            pid, args = int(args[1]), args[2:]
        elif args[0] == "--label":
            label, args = args[1], args[2:]
        elif args[0] == "--out":
            out, args = args[1], args[2:]
        else:
            sys.exit(f"cpubusy.py: unknown argument {args[0]}")
    cmd = args[1:]
    if not cmd:
        sys.exit("cpubusy.py: give the command after --")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t1, i1, st1 = stat_total()
    s1 = pid_ticks(pid)
    w1 = time.monotonic()
    rc = subprocess.call(cmd)
    w2 = time.monotonic()
    t2, i2, st2 = stat_total()
    s2 = pid_ticks(pid)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cap = NPROC * (w2 - w1)  # CPU-seconds available
    steal = (st2 - st1) / HZ
    busy = ((t2 - t1) - (i2 - i1)) / HZ          # includes steal
    server = (s2 - s1) / HZ
    loadgen = (ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)
    # With tick-based accounting (Debian's default; no IRQ_TIME_ACCOUNTING) the
    # interrupt and softirq time of the loopback traffic is charged to the task
    # it interrupted, so it is inside server/loadgen already; softirq work
    # deferred to ksoftirqd lands in "other".
    other = max(0.0, busy - steal - server - loadgen)
    pct = lambda x: 100.0 * x / cap if cap > 0 else 0.0  # noqa: E731
    line = (f"{label} other={pct(other):.0f} server={pct(server):.0f} loadgen={pct(loadgen):.0f} "
            f"steal={pct(steal):.0f} idle={pct(max(0.0, cap - busy)):.0f}")
    print(f"cpu share during {line}", file=sys.stderr)
    if out:
        with open(out, "a") as f:
            f.write(line + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())
