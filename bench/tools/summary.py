#!/usr/bin/env python3
"""summary.py OUTDIR: the table bench/run.sh prints at the end.

Reads the raw results in OUTDIR (wrk output with a RESULT line, and the JSON
written by waiters.py and pending.py), prints one row per target with
PASS / FAIL / INVALID (the run cannot judge it: errors, too few waiters, ...)
/ N/A (not run), and writes summary.txt and summary.json next to them.
Exit status is always 0: the table is the verdict.
"""
import json
import os
import sys

TARGET_WAITERS = 10000
TARGET_PENDING = 100000


def wrk_result(path):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("RESULT "):
                    out = {}
                    for kv in line.split()[1:]:
                        k, _, v = kv.partition("=")
                        out[k] = float(v)
                    return out
    except FileNotFoundError:
        pass
    return None


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def wrk_clean(r):
    return r is not None and r["non2xx"] == 0 and r["err_connect"] == 0 and r["err_read"] == 0 \
        and r["err_write"] == 0 and r["err_timeout"] == 0 and r["requests"] > 0


def main():
    out = sys.argv[1]
    rows = []  # (target, measured, limit, verdict, note)

    def row(name, measured, limit, verdict, note=""):
        rows.append({"target": name, "measured": measured, "limit": limit, "verdict": verdict, "note": note})

    bg, bp = wrk_result(f"{out}/baseline_get.txt"), wrk_result(f"{out}/baseline_post.txt")
    ag, apo = wrk_result(f"{out}/alertd_get.txt"), wrk_result(f"{out}/alertd_post.txt")

    def errs(r):
        return "" if wrk_clean(r) else (f"non2xx={int(r['non2xx'])} connect={int(r['err_connect'])} "
                                        f"read={int(r['err_read'])} write={int(r['err_write'])} "
                                        f"timeout={int(r['err_timeout'])}")

    # GET ratio
    if bg and ag:
        ratio = ag["rps"] / bg["rps"]
        v = "INVALID" if not (wrk_clean(ag) and wrk_clean(bg)) else ("PASS" if ratio >= 0.60 else "FAIL")
        row("GET /current rps vs baseline", f"{ag['rps']:.0f} / {bg['rps']:.0f} = {ratio:.0%}", ">= 60 %", v,
            errs(ag) or errs(bg))
    else:
        row("GET /current rps vs baseline", "-", ">= 60 %", "N/A")
    one = wrk_result(f"{out}/alertd_get_one.txt")
    if bg and one:
        # No target of its own: a reference for changes to the store port's read path.
        row("GET one alert rps vs baseline GET", f"{one['rps']:.0f} / {bg['rps']:.0f} = {one['rps'] / bg['rps']:.0%}", "-",
            "INFO" if wrk_clean(one) else "INVALID", errs(one))
    if bp and apo:
        ratio = apo["rps"] / bp["rps"]
        v = "INVALID" if not (wrk_clean(apo) and wrk_clean(bp)) else ("PASS" if ratio >= 0.30 else "FAIL")
        row("POST alert rps vs baseline", f"{apo['rps']:.0f} / {bp['rps']:.0f} = {ratio:.0%}", ">= 30 %", v,
            errs(apo) or errs(bp))
        v = "INVALID" if not wrk_clean(apo) else ("PASS" if apo["p99_ms"] < 10 else "FAIL")
        row("POST alert p99 (durability full)", f"{apo['p99_ms']:.2f} ms", "< 10 ms", v, errs(apo))
    else:
        row("POST alert rps vs baseline", "-", ">= 30 %", "N/A")
        row("POST alert p99 (durability full)", "-", "< 10 ms", "N/A")

    lat = load_json(f"{out}/latency.json")
    if lat:
        w = lat.get("waiter_latency", {})
        ok = lat.get("valid") and lat.get("waiters", 0) >= TARGET_WAITERS
        note = f"{lat.get('valid_rounds')} rounds, {lat.get('bg_parked_after')} parked"
        if not ok:
            note += "; fewer than 10 000 waiters or too few valid rounds" if lat.get("valid") else "; run not valid"
        if w.get("n"):
            v = "INVALID" if not ok else ("PASS" if w["p99_ms"] < 1.0 else "FAIL")
            row("choice -> parked waiter p99", f"{w['p99_ms']:.3f} ms (p50 {w['p50_ms']:.3f})", "< 1 ms", v, note)
        else:
            row("choice -> parked waiter p99", "-", "< 1 ms", "INVALID", note)
    else:
        row("choice -> parked waiter p99", "-", "< 1 ms", "N/A")

    rss = load_json(f"{out}/waiters_rss.json")
    if rss and rss.get("kib_per_waiter") is not None:
        ok = rss.get("valid") and rss.get("waiters", 0) >= TARGET_WAITERS
        v = "INVALID" if not ok else ("PASS" if rss["kib_per_waiter"] < 10 else "FAIL")
        row("RSS per parked waiter", f"{rss['kib_per_waiter']:.2f} KiB", "< 10 KiB", v,
            f"{rss.get('parked')} parked" + ("" if ok else "; fewer than 10 000 or not settled"))
    else:
        row("RSS per parked waiter", "-", "< 10 KiB", "N/A" if not rss else "INVALID")

    pl = load_json(f"{out}/pending_load.json")
    if pl and pl.get("kib_per_pending_alert") is not None:
        ok = pl.get("valid") and pl.get("created", 0) >= TARGET_PENDING
        v = "INVALID" if not ok else ("PASS" if pl["kib_per_pending_alert"] < 2 else "FAIL")
        note = f"{pl.get('created')} created, {pl.get('posts_per_second')}/s"
        if pl.get("pending_reported") is not None and pl.get("pending_reported") != pl.get("pending_expected"):
            note += f"; /v1/clients counts {pl.get('pending_reported')}, expected {pl.get('pending_expected')}"
        row("RSS per pending alert", f"{pl['kib_per_pending_alert']:.3f} KiB", "< 2 KiB", v, note)
    else:
        row("RSS per pending alert", "-", "< 2 KiB", "N/A" if not pl else "INVALID")

    rs = load_json(f"{out}/pending_restart.json")
    if rs:
        if rs.get("ready_ms") is not None:
            ok = rs.get("valid") and pl and pl.get("created", 0) >= TARGET_PENDING
            v = "INVALID" if not ok else ("PASS" if rs["ready_ms"] < 1000 else "FAIL")
            note = f"/readyz {rs.get('readyz_ms')} ms, /current {rs.get('current_ms')} ms"
            if rs.get("pending_reported") != rs.get("pending_expected"):
                note += f"; counts {rs.get('pending_reported')} pending, expected {rs.get('pending_expected')}"
            row("restart with pending -> serving", f"{rs['ready_ms']:.1f} ms", "< 1 s", v, note)
        else:
            row("restart with pending -> serving", "never", "< 1 s", "FAIL", "not ready in time")
    else:
        row("restart with pending -> serving", "-", "< 1 s", "N/A")

    lines = []
    lines.append("Raw figures")
    for name, r in (("baseline GET", bg), ("baseline POST", bp), ("alertd GET", ag), ("alertd POST", apo)):
        if r:
            lines.append(f"  {name:14} {r['rps']:>10.0f} req/s  p50 {r['p50_ms']:.3f}  p90 {r['p90_ms']:.3f}  "
                         f"p99 {r['p99_ms']:.3f}  max {r['max_ms']:.3f} ms  "
                         f"(non2xx {int(r['non2xx'])}, socket errors "
                         f"{int(r['err_connect'] + r['err_read'] + r['err_write'] + r['err_timeout'])})")
    brss = load_json(f"{out}/baseline_idle_rss.json")
    if brss and brss.get("kib_per_connection") is not None:
        lines.append(f"  baseline: {brss['kib_per_connection']:.2f} KiB RSS per idle keep-alive connection "
                     f"({brss.get('opened')} open; libmicrohttpd defaults, for reference)")
    if lat and lat.get("choice_latency", {}).get("n"):
        c = lat["choice_latency"]
        lines.append(f"  choice request itself: p50 {c['p50_ms']:.3f}  p99 {c['p99_ms']:.3f}  max {c['max_ms']:.3f} ms")
    lines.append("")
    width = max(len(r["target"]) for r in rows)
    mw = max(len(r["measured"]) for r in rows)
    lines.append(f"{'target':{width}}  {'measured':{mw}}  {'limit':9}  verdict  note")
    for r in rows:
        lines.append(f"{r['target']:{width}}  {r['measured']:{mw}}  {r['limit']:9}  {r['verdict']:7}  {r['note']}")
    before, during = {}, {}
    try:
        with open(f"{out}/cpubusy.txt") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 2:
                    continue
                kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
                if "busy_before" in kv:
                    before[parts[0]] = int(kv["busy_before"])
                elif "other" in kv:
                    during[parts[0]] = {k: int(v) for k, v in kv.items()}
    except (FileNotFoundError, ValueError):
        pass
    if during or before:
        lines.append("")
    if during:
        lines.append("CPU share during each wrk run, % of all cores (other = neither the server nor wrk):")
        for k, v in during.items():
            lines.append(f"  {k:14} server {v.get('server', 0):3}  wrk {v.get('loadgen', 0):3}  "
                         f"other {v.get('other', 0):3}  steal {v.get('steal', 0):3}  idle {v.get('idle', 0):3}")
    if before:
        lines.append("CPU busy with other work right before: " + ", ".join(f"{k} {v}%" for k, v in before.items()))
    if max([v.get("other", 0) + v.get("steal", 0) for v in during.values()] + list(before.values()) + [0]) > 10:
        lines.append("WARNING: the machine was not quiet; figures and ratios are indicative only.")
    text = "\n".join(lines)
    print(text)
    with open(f"{out}/summary.txt", "w") as f:
        f.write(text + "\n")
    with open(f"{out}/summary.json", "w") as f:
        json.dump({"rows": rows, "baseline_get": bg, "baseline_post": bp, "alertd_get": ag, "alertd_get_one": one, "alertd_post": apo},
                  f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
