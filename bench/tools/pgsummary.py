#!/usr/bin/env python3
"""pgsummary.py: the summary of a bench/postgres.sh run, from the raw files in its directory.

  pgsummary.py OUT ROUNDS_POST     the summary (postgres.sh writes it to OUT/summary.txt)
  pgsummary.py OUT --phase NAME    one line for one measured phase (postgres.sh prints it as it goes)

A POST phase NAME-rN (N = 1..ROUNDS_POST) has NAME-rN-a.txt and NAME-rN-b.txt (the two wrk
reports; in the alone-* phases both loads went to instance A), NAME-rN-flushes-{before,after}.txt
(the store's counters from /metrics) and NAME-rN-cpu.json (proccpu.py delta: the CPU of the
alertd instance(s) and of the PostgreSQL postmaster's process tree over the measured run).

Committed posts are wrk's completed requests less its non-2xx count (alertd answers a POST
201 after the commit). Figures over rounds are medians; "paired" is the median of the
per-round ratios (one-instance and two-instance runs alternate, ABBA, so drift falls on both).
Python 3 standard library only.
"""
import json
import math
import os
import re
import statistics
import sys

NAN = float("nan")


def result(out, name):
    try:
        with open(f"{out}/{name}.txt") as f:
            m = re.search(r"RESULT (.*)", f.read())
    except OSError:
        return None
    return dict(kv.split("=", 1) for kv in m.group(1).split()) if m else None


def counters(out, phase, when):
    totals = {}
    try:
        with open(f"{out}/{phase}-flushes-{when}.txt") as f:
            for line in f:
                name, value = line.split()
                totals[name] = totals.get(name, 0) + float(value)
    except OSError:
        return None
    return totals


def phase(out, name):
    """The figures of one measured phase (both wrk reports, its counters, its CPU); None if not run."""
    a, b = result(out, f"{name}-a"), result(out, f"{name}-b")
    if a is None or b is None:
        return None
    f = lambda r, k: float(r.get(k, 0))  # noqa: E731
    p = {
        "rps": f(a, "rps") + f(b, "rps"),
        "p99": max(f(a, "p99_ms"), f(b, "p99_ms")),
        "bad": int(f(a, "non2xx") + f(b, "non2xx")),
        "posts": f(a, "requests") + f(b, "requests") - f(a, "non2xx") - f(b, "non2xx"),
    }
    before, after = counters(out, name, "before"), counters(out, name, "after")
    if before is not None and after is not None:
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        p["commits"] = delta.get("alertd_store_commit_duration_seconds_count", 0)
        p["changes"] = delta.get("alertd_store_changes_total", 0)
        p["trips"] = delta.get("alertd_store_round_trips_total", 0)
    try:
        with open(f"{out}/{name}-cpu.json") as fh:
            cpu = json.load(fh)
    except (OSError, ValueError):
        cpu = None
    if cpu and cpu.get("total_us") is not None:
        posts = p["posts"] if p["posts"] > 0 else NAN
        alertd = sum(v["us"] for k, v in cpu["roots"].items() if k.startswith("alertd"))
        pg = cpu["roots"].get("postgres", {})
        p["cpu"] = cpu["total_us"] / posts
        p["cpu_alertd"] = alertd / posts
        p["cpu_pg"] = pg.get("us", NAN) / posts
        p["pg_ended"] = pg.get("ended", 0)
        p["pg_started"] = pg.get("started", 0)
        p["pg_reaped_us"] = pg.get("reaped_us", 0)
        p["pg_processes"] = pg.get("processes_after", 0)
    return p


def med(values):
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else NAN


def runs(values, fmt="{:.0f}"):
    return ", ".join("-" if v is None or math.isnan(v) else fmt.format(v) for v in values)


def verdict(ok):
    return "MET" if ok else "NOT MET"


def phase_line(out, name):
    p = phase(out, name)
    if p is None:
        return f"{name}: no result"
    unit = "request" if "current" in name else "post"
    text = f"{name}: {p['rps']:.0f} {unit}s/s, p99 {p['p99']:.2f} ms, non-2xx {p['bad']}"
    if "cpu" in p:
        text += f", CPU {p['cpu']:.0f} us/{unit} (alertd {p['cpu_alertd']:.0f}, PostgreSQL {p['cpu_pg']:.0f})"
    if p.get("changes"):
        text += f", round trips/{unit} {p['trips'] / p['changes']:.3f}"
    return text


def post_section(out, rounds):
    lines = []
    verdicts = []
    for kind, label, target in (("one", "one client", 5000), ("spread", "100 clients", 5000)):
        alone = [phase(out, f"alone-{kind}-r{n}") for n in range(1, rounds + 1)]
        two = [phase(out, f"{kind}-r{n}") for n in range(1, rounds + 1)]
        if not any(alone) and not any(two):
            lines.append(f"posts, {label}: not run")
            continue
        get = lambda ps, k: [p.get(k) if p else None for p in ps]  # noqa: E731
        m = {}
        for who, ps in (("alone", alone), ("two", two)):
            m[who] = {k: med(get(ps, k)) for k in ("rps", "p99", "cpu", "cpu_alertd", "cpu_pg")}
            m[who]["bad"] = sum(p["bad"] for p in ps if p)
            m[who]["n"] = sum(1 for p in ps if p)

        def cpu_text(x):
            if math.isnan(x["cpu"]):
                return "CPU: not measured"
            return f"CPU {x['cpu']:.0f} us/post (alertd {x['cpu_alertd']:.0f} + PostgreSQL {x['cpu_pg']:.0f})"

        a, t = m["alone"], m["two"]
        lines.append(f"{'posts/s, ' + label + ', 1 instance alone':<42} {a['rps']:>9.0f}  POST p99 {a['p99']:.2f} ms   "
                     f"non-2xx {a['bad']}   {cpu_text(a)}   [{a['n']} runs]")
        ok_abs = t["rps"] >= target and t["p99"] < 20 and t["bad"] == 0
        lines.append(f"{'posts/s, ' + label + ', 2 instances':<42} {t['rps']:>9.0f}  (target >= {target})   "
                     f"POST p99 {t['p99']:.2f} ms (target < 20)   non-2xx {t['bad']}   {cpu_text(t)}   [{t['n']} runs]   "
                     f"{verdict(ok_abs)}")
        paired = lambda k: med([(y[k] / x[k]) if x and y and x.get(k) and k in y else None  # noqa: E731
                                for x, y in zip(alone, two)])
        ratio = t["rps"] / a["rps"] if a["rps"] else NAN
        cpu_ratio = t["cpu"] / a["cpu"] if a["cpu"] else NAN
        ok_ratio = ratio >= 0.8 and t["p99"] < 20
        ok_cpu = cpu_ratio <= 1.25
        lines.append(f"{'  2 instances / 1 alone, posts/s':<42} {ratio:>9.2f}  (target >= 0.80, p99 < 20 ms)   "
                     f"paired {paired('rps'):.2f}   {verdict(ok_ratio)}")
        lines.append(f"{'  2 instances / 1 alone, CPU per post':<42} {cpu_ratio:>9.2f}  (target <= 1.25)   "
                     f"paired {paired('cpu'):.2f}   {verdict(ok_cpu)}")
        for key, what, fmt in (("rps", "posts/s", "{:.0f}"), ("p99", "p99 ms", "{:.1f}"), ("cpu", "CPU us/post", "{:.0f}")):
            lines.append(f"    runs, {what}: 1 alone {runs(get(alone, key), fmt)}; 2 instances {runs(get(two, key), fmt)}")
        ended = sum(p.get("pg_ended", 0) for p in alone + two if p)
        started = sum(p.get("pg_started", 0) for p in alone + two if p)
        lines.append(f"    PostgreSQL processes that ended / started during these runs: {ended} / {started} "
                     "(counted: see proccpu.py)")
        verdicts.append(f"issue 46, {label}: posts/s 2/1 {ratio:.2f} (>= 0.80), p99 {t['p99']:.2f} ms (< 20), "
                        f"CPU per post 2/1 {cpu_ratio:.2f} (<= 1.25): {verdict(ok_ratio and ok_cpu)}")
    for name in ("alone-one", "one", "alone-spread", "spread"):
        total = {"commits": 0, "changes": 0, "trips": 0}
        for n in range(1, rounds + 1):
            p = phase(out, f"{name}-r{n}")
            if p and "commits" in p:
                for k in total:
                    total[k] += p[k]
        if total["commits"] <= 0:
            lines.append(f"{name}: no flush counted")
            continue
        c = total["commits"]
        lines.append(f"{name + ' flushes (all rounds)':<42} {c:>9.0f}  changes/flush {total['changes'] / c:.1f}   "
                     f"round trips/flush {total['trips'] / c:.2f}   round trips/post {total['trips'] / max(total['changes'], 1):.3f}")
    return lines + verdicts


def main():
    out = sys.argv[1]
    if sys.argv[2:3] == ["--phase"]:
        print(phase_line(out, sys.argv[3]))
        return 0
    rounds = int(sys.argv[2])
    lines = post_section(out, rounds)
    alone, two = phase(out, "alone-current"), phase(out, "current")
    if alone and two:
        lines.append(f"{'GET current, 1 instance alone':<42} {alone['rps']:>9.0f}")
        lines.append(f"{'GET current, 2 instances (reads current)':<42} {two['rps']:>9.0f}  (target >= 50000)   "
                     f"p99 {two['p99']:.2f} ms   non-2xx {two['bad']}   {verdict(two['rps'] >= 50000 and two['bad'] == 0)}")
    else:
        lines.append("GET current: not run")
    for rows in (1, 32):
        path = f"{out}/pgbench-{rows}.txt"
        if not os.path.exists(path):
            lines.append(f"pgbench floor, {rows} row(s): not run")
            continue
        try:
            with open(path) as f:
                tps = float(re.search(r"tps = ([0-9.]+)", f.read()).group(1))
            lines.append(f"{f'pgbench floor, {rows} row(s) per transaction':<42} {tps * rows:>9.0f} rows/s ({tps:.0f} transactions/s)")
        except (OSError, AttributeError):
            lines.append(f"pgbench floor, {rows} row(s): no result (see pgbench-{rows}.txt)")
    try:
        with open(f"{out}/latency.json") as f:
            lat = json.load(f)
        w = lat.get("waiter_latency", {})
        p99 = w.get("p99_ms", NAN)
        lines.append(f"{'choice on B -> waiter on A, p99':<42} {p99:>9.2f} ms (target < 5)   p50 {w.get('p50_ms', NAN):.2f} ms   "
                     f"rounds {lat.get('valid_rounds')}   waiters parked on A {lat.get('bg_parked_after')}   "
                     f"{'MET' if lat.get('valid') and p99 < 5 else 'NOT MET' if lat.get('valid') else 'INVALID'}")
    except (OSError, ValueError):
        lines.append("choice on B -> waiter on A: " + ("no result (see latency.log)" if os.path.exists(f"{out}/latency.log") else "not run"))
    s = result(out, "sqlite")
    if s is not None:
        lines.append(f"{'reference: SQLite, one client, 1 instance':<42} {float(s.get('rps', 0)):>9.0f}  "
                     f"POST p99 {float(s.get('p99_ms', 0)):.2f} ms")
    else:
        lines.append("reference: SQLite: not run")
    try:
        with open(f"{out}/loadavg.txt") as f:
            lines.append("load average (1, 5, 15 min): " + "; ".join(line.strip() for line in f))
    except OSError:
        pass
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
