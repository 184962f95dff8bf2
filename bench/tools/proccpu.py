#!/usr/bin/env python3
"""proccpu.py: CPU time of whole process trees (a server and everything it forked), from /proc.

  proccpu.py snapshot [--hz TICKS] NAME=PID [NAME=PID ...] >FILE.json
      The CPU ticks, at this moment, of each PID and of all its descendants (found by
      parent pid in /proc/*/stat), one line of JSON.
  proccpu.py delta BEFORE.json AFTER.json >FILE.json
      The CPU used between two snapshots: each tree's and the total, in microseconds.

What a tree's figure is. Every process of the tree counts utime + stime (all its threads,
live and exited) plus cutime + cstime (the children it has reaped). The kernel adds a
child's utime + stime + cutime + cstime to its parent's cutime + cstime when the parent
reaps it, so the sum over a tree is the CPU its root and every descendant have used since
the root started, including descendants that are gone: a PostgreSQL backend that exits
during a phase is counted whole, its earlier part from its own stat in BEFORE (it was
live) and the rest through the postmaster's cutime + cstime in AFTER. A backend that
starts and ends between the snapshots is counted whole, through the postmaster.

Not counted: a process that left the tree without being reaped by its parent in it
(reparented, e.g. a daemonised grandchild; PostgreSQL forks none), a descendant reaped by
a process that exited unreaped in turn, and the kernel's own threads working for the
tree (kworkers writing back pages, ksoftirqd, the file system's journal thread). Also
not counted: this script, curl and the load generator.

Accuracy: the kernel reports whole ticks (1/HZ s, usually 10 ms) of each process's and
each reaped sum, so a difference is good to under a tick per process of the tree. A snapshot
reads the roots' stat before and after scanning /proc and tries again (up to 10 times)
if a root reaped a child meanwhile, which would count that child twice or not at all.

Python 3 standard library only.
"""
import json
import os
import sys
import time


def read_stat(pid):
    """(ppid, starttime, state, utime, stime, cutime, cstime) of a process; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    rest = text.rsplit(")", 1)[1].split()
    # rest[0] is field 3 (state); utime is field 14, starttime field 22.
    return {
        "ppid": int(rest[1]),
        "start": int(rest[19]),
        "state": rest[0],
        "utime": int(rest[11]),
        "stime": int(rest[12]),
        "cutime": int(rest[13]),
        "cstime": int(rest[14]),
    }


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return ""


def scan():
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = read_stat(int(name))
            if s is not None:
                stats[int(name)] = s
    return stats


def reaped(s):
    return s["cutime"] + s["cstime"]


def snapshot(roots, hz):
    """{"hz", "time", "roots": {name: {"pid", "start", "processes": [...]}}}."""
    for _ in range(10):
        first = {name: read_stat(pid) for name, pid in roots.items()}
        stats = scan()
        last = {name: read_stat(pid) for name, pid in roots.items()}
        stable = all(
            a is not None and b is not None and a["start"] == b["start"] and reaped(a) == reaped(b)
            for a, b in zip(first.values(), last.values())
        )
        if stable:
            break
    else:
        print("proccpu.py: a root kept reaping children during every try; figure may be off by one child",
              file=sys.stderr)
    children = {}
    for pid, s in stats.items():
        children.setdefault(s["ppid"], []).append(pid)
    out = {"hz": hz, "time": time.time(), "roots": {}}
    for name, pid in roots.items():
        root = last[name]
        if root is None:
            out["roots"][name] = {"pid": pid, "gone": True, "processes": []}
            continue
        procs = [dict(root, pid=pid, root=True)]
        todo = list(children.get(pid, []))
        while todo:
            child = todo.pop()
            s = stats[child]
            procs.append(dict(s, pid=child, cmd=cmdline(child)))
            todo.extend(children.get(child, []))
        out["roots"][name] = {"pid": pid, "start": root["start"], "processes": procs}
    return out


def ticks(p):
    return p["utime"] + p["stime"] + p["cutime"] + p["cstime"]


def delta(before, after):
    hz = before["hz"]
    us = 1e6 / hz
    out = {"hz": hz, "wall_s": round(after["time"] - before["time"], 3), "total_us": 0, "roots": {}}
    for name, b in before["roots"].items():
        a = after["roots"].get(name)
        if a is None or b.get("gone") or a.get("gone") or a["start"] != b["start"]:
            out["roots"][name] = {"error": "the root exited or was replaced between the snapshots"}
            out["total_us"] = None
            continue
        key = lambda p: (p["pid"], p["start"])  # noqa: E731 (pid and start time: a reused pid is another process)
        was = {key(p): p for p in b["processes"]}
        now = {key(p): p for p in a["processes"]}
        root_b = next(p for p in b["processes"] if p.get("root"))
        root_a = next(p for p in a["processes"] if p.get("root"))
        t = sum(ticks(p) for p in a["processes"]) - sum(ticks(p) for p in b["processes"])
        ended = [p for k, p in was.items() if k not in now]
        started = [p for k, p in now.items() if k not in was]
        entry = {
            "pid": b["pid"],
            "us": round(t * us),
            "ticks": t,
            "own_us": round((root_a["utime"] + root_a["stime"] - root_b["utime"] - root_b["stime"]) * us),
            "reaped_us": round((reaped(root_a) - reaped(root_b)) * us),
            "processes_before": len(b["processes"]),
            "processes_after": len(a["processes"]),
            "ended": len(ended),
            "started": len(started),
            "ended_cmds": sorted({p.get("cmd", "") for p in ended})[:10],
            "started_cmds": sorted({p.get("cmd", "") for p in started})[:10],
        }
        out["roots"][name] = entry
        if out["total_us"] is not None:
            out["total_us"] += entry["us"]
    return out


def main():
    args = sys.argv[1:]
    if args[:1] == ["snapshot"]:
        args = args[1:]
        hz = os.sysconf("SC_CLK_TCK")
        if args[:1] == ["--hz"]:
            hz, args = int(args[1]), args[2:]
        roots = {}
        for arg in args:
            name, _, pid = arg.partition("=")
            roots[name] = int(pid)
        if not roots:
            sys.exit(__doc__)
        json.dump(snapshot(roots, hz), sys.stdout)
        print()
        return 0
    if args[:1] == ["delta"] and len(args) == 3:
        with open(args[1]) as f:
            before = json.load(f)
        with open(args[2]) as f:
            after = json.load(f)
        json.dump(delta(before, after), sys.stdout, indent=1)
        print()
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
