#!/usr/bin/env python3
"""latency.py: choice -> callback received, at a fixed rate of choices (target 1).

    bench/callbacks/latency.py [--alertd BIN] [--rate 200] [--duration 30] ...

Python 3 standard library only; everything on 127.0.0.1.

1. Builds and starts the C receiver (bench/callbacks/receiver.c), which answers
   204 at once and verifies every signature.
2. Starts alertd (--alertd, $ALERTD, or .build-bench/release/alertd) with a fresh
   state dir and a generated config (durability: full by default,
   callbacks.signing_secret set) — or uses a running one with --url-port (it must
   then have callbacks.signing_secret = cbcommon.CALLBACK_SECRET, or use
   --target webhook).
3. Posts, to --clients clients, enough alerts for every choice, each with
   callback_url = the receiver (--target webhook instead registers the receiver
   as a webhook of every client through the API and posts without callback_url).
4. Sends choices open-loop: choice k is due at t0 + k / rate, whatever happened to
   the earlier ones. --senders threads each own a keep-alive connection and a fixed
   subset of the clients (so one client's choices go in order, one at a time: its
   next alert is displayed once the previous choice is answered). Choice k goes to
   client k mod C, answering that client's displayed alert. The wall time
   (time.time_ns, CLOCK_REALTIME) is taken just before the request is written.
   The first --warmup seconds of choices are sent but not counted.
5. Waits until the receiver has every event (or --grace seconds), stops the
   receiver (it writes its log) and alertd, and joins by alert id:
   latency = receiver arrival (CLOCK_REALTIME, when the body was in) - choice sent.

Prints p50/p90/p99/p99.9/max of the latency in ms, events missing, duplicates,
bad signatures, how late the scheduler sent (it must stay far below the figures
it measures), and the choice round trip. One `RESULT {json}` line on stdout; the
same in OUT/latency.json with the raw logs (default OUT: bench/out/callbacks/<stamp>-latency).
Target: p50 < 2 ms and p99 < 5 ms at 200 choices/s, durability full, no event missing.
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cbcommon as cb  # noqa: E402

ALERT = {"title": "Restart the database?", "message": "db-7 has been unhealthy for 5 minutes.",
         "buttons": [{"title": "OK", "style": "default"}, {"title": "Cancel", "style": "cancel"}],
         "metadata": {"bench": "callbacks-latency"}}


def post_alerts(port, clients, per_client, callback_url, threads=4):
    """Posts per_client alerts to each client, in order; returns {client: [ids in queue order]}."""
    ids = {c: [] for c in clients}
    errors = []
    body = dict(ALERT)
    if callback_url:
        body["callback_url"] = callback_url

    def work(mine):
        conn = cb.Conn(cb.HOST, port, timeout=10)
        try:
            for c in mine:
                for _ in range(per_client):
                    st, obj, raw = conn.json("POST", f"/v1/clients/{c}/alerts", body)
                    if st != 201 or not obj or "id" not in obj:
                        errors.append(f"POST /v1/clients/{c}/alerts: {st} {raw[:200]!r}")
                        return
                    ids[c].append(obj["id"])
        finally:
            conn.close()

    ts = [threading.Thread(target=work, args=(clients[i::threads],)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        sys.exit("error: " + errors[0])
    return ids


def register_webhooks(port, clients, url, secret):
    conn = cb.Conn(cb.HOST, port, timeout=10)
    for c in clients:
        st, obj, raw = conn.json("POST", f"/v1/clients/{c}/webhooks", {"url": url, "secret": secret})
        if st != 201:
            sys.exit(f"error: POST /v1/clients/{c}/webhooks: {st} {raw[:200]!r}")
    conn.close()


def send_choices(port, plan, rate, senders, t0_mono):
    """plan: list of (k, client, alert_id), k = 0.. in due order. Returns per-k records
    [k, client, alert_id, due_offset_ns, sent_mono_ns, sent_wall_ns, answered_mono_ns, status]."""
    records = [None] * len(plan)
    stop_all = threading.Event()

    def work(j):
        conn = cb.Conn(cb.HOST, port, timeout=10)
        body = json.dumps({"button": "OK"}, separators=(",", ":"))
        try:
            for k, client, aid in plan[j::senders]:
                if stop_all.is_set():
                    return
                due = t0_mono + k / rate
                while True:
                    d = due - time.monotonic()
                    if d <= 0:
                        break
                    time.sleep(d if d < 0.002 else d - 0.001)  # coarse sleep, then a short one
                sent_mono = time.monotonic_ns()
                sent_wall = time.time_ns()
                try:
                    st, _, _ = conn.request("POST", f"/v1/clients/{client}/alerts/{aid}/choice", body)
                except (OSError, TimeoutError, ValueError) as e:
                    st = f"error: {e}"
                records[k] = [k, client, aid, int(k / rate * 1e9), sent_mono, sent_wall, time.monotonic_ns(), st]
        finally:
            conn.close()

    ts = [threading.Thread(target=work, args=(j,), daemon=True) for j in range(senders)]
    for t in ts:
        t.start()
    try:
        for t in ts:
            t.join()
    except KeyboardInterrupt:
        stop_all.set()
        raise
    return records


def join(records, recv_log, warmup_k, t0_mono_ns):
    """Latencies of the counted choices (k >= warmup_k, answered 200)."""
    first = {}
    count = {}
    for arrival, _ans, _wid, aid, typ, _n, _sig in recv_log:
        count[aid] = count.get(aid, 0) + 1
        if aid not in first or arrival < first[aid]:
            first[aid] = arrival
    lat, missing, errors, late, rtt = [], [], [], [], []
    dupes = 0
    for r in records:
        if r is None:
            continue
        k, client, aid, due_off, sent_mono, sent_wall, ans_mono, st = r
        if k < warmup_k:
            continue
        late.append(sent_mono - t0_mono_ns - due_off)
        if st != 200:
            errors.append((k, client, aid, st))
            continue
        rtt.append(ans_mono - sent_mono)
        if aid not in first:
            missing.append(aid)
            continue
        lat.append(first[aid] - sent_wall)
        dupes += count[aid] - 1
    return lat, missing, errors, late, rtt, dupes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--alertd", default=cb.default_alertd(), help="alertd binary (or a stand-in .py)")
    ap.add_argument("--url-port", type=int, help="use the alertd already on 127.0.0.1:PORT (not started here)")
    ap.add_argument("--port", type=int, default=18201, help="port for the alertd started here")
    ap.add_argument("--receiver-port", type=int, default=19201)
    ap.add_argument("--rate", type=float, default=200.0, help="choices per second")
    ap.add_argument("--duration", type=float, default=30.0, help="seconds of counted choices")
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds of choices sent first, not counted")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--senders", type=int, default=20, help="sender threads (divides --clients)")
    ap.add_argument("--durability", default="full", choices=["full", "normal"])
    ap.add_argument("--target", default="callback_url", choices=["callback_url", "webhook"])
    ap.add_argument("--grace", type=float, default=10.0, help="max seconds to wait for the last events")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--keep-state", action="store_true")
    a = ap.parse_args()
    if a.clients % a.senders:
        sys.exit("error: --senders must divide --clients")
    out = cb.out_dir("latency", a.out)
    cb.build_receiver()
    cb.raise_nofile(1024)

    n_warm = int(round(a.warmup * a.rate))
    n_total = n_warm + int(round(a.duration * a.rate))
    per_client = math.ceil(n_total / a.clients) + 1   # one left displayed at the end
    if a.rate * 1.0 / a.clients > 50:
        cb.log(f"WARNING: {a.rate / a.clients:.0f} choices/s per client: each client's next alert must be "
               "displayed within 1/rate s of its previous choice; use more clients")

    busy = cb.cpu_busy(1)
    cb.log(f"machine busy before the run: {busy}%")
    recv_secret = cb.CALLBACK_SECRET if a.target == "callback_url" else cb.FAST_SECRET
    recv = cb.Receiver("receiver", a.receiver_port, out, secret=recv_secret)
    state = None
    alertd = None
    if a.url_port:
        port = a.url_port
        if not cb.wait_http(port, "/readyz", 5):
            sys.exit(f"error: no ready alertd on 127.0.0.1:{port}")
    else:
        if not a.alertd:
            sys.exit("error: no alertd: pass --alertd, set $ALERTD, or build into .build-bench")
        port = a.port
        state = tempfile.mkdtemp(prefix="alertd-cb-latency.")
        cfg = os.path.join(out, "alertd.yaml")
        cb.write_config(cfg, port, durability=a.durability, log_level=a.log_level,
                        signing_secret=cb.CALLBACK_SECRET if a.target == "callback_url" else None,
                        max_pending=max(10000, per_client + 10))
        alertd = cb.Alertd(a.alertd, port, cfg, state, out)
        alertd.start()
        cb.log(f"alertd ready: {a.alertd} on :{port}, durability {a.durability}, state {state}")

    try:
        run_id = time.strftime("%H%M%S")
        clients = [f"cbl-{run_id}-{i}" for i in range(a.clients)]
        if a.target == "webhook":
            register_webhooks(port, clients, recv.url, cb.FAST_SECRET)
        t = time.monotonic()
        ids = post_alerts(port, clients, per_client, recv.url if a.target == "callback_url" else None)
        cb.log(f"posted {per_client * a.clients} alerts to {a.clients} clients in {time.monotonic() - t:.1f} s")
        plan = [(k, clients[k % a.clients], ids[clients[k % a.clients]][k // a.clients]) for k in range(n_total)]
        time.sleep(1.0)  # let the posts' commits settle
        before = recv.stats()["count"]
        cb.log(f"sending {n_total} choices at {a.rate:g}/s ({n_warm} warm-up) with {a.senders} senders")
        t0 = time.monotonic() + 0.1
        t0_ns = int(t0 * 1e9)
        records = send_choices(port, plan, a.rate, a.senders, t0)
        sent_span = (max(r[4] for r in records if r) - min(r[4] for r in records if r)) / 1e9
        ok = sum(1 for r in records if r and r[7] == 200)
        deadline = time.monotonic() + a.grace
        while time.monotonic() < deadline:
            s = recv.stats()
            if s and s["count"] - before >= ok:
                break
            time.sleep(0.05)
        time.sleep(0.2)  # a moment for duplicates, which count too
        recv_log, recv_result = recv.finish()
    finally:
        if alertd:
            alertd.stop()
        if state and not a.keep_state:
            shutil.rmtree(state, ignore_errors=True)

    lat, missing, errors, late, rtt, dupes = join(records, recv_log, n_warm, t0_ns)
    with open(os.path.join(out, "choices.tsv"), "w") as f:
        f.write("# k\tclient\talert_id\tdue_offset_ns\tsent_mono_ns\tsent_wall_ns\tanswered_mono_ns\tstatus\n")
        for r in records:
            if r:
                f.write("\t".join(str(x) for x in r) + "\n")
    counted = n_total - n_warm
    s = cb.summary_ms(lat)
    p50, p99 = s.get("p50_ms"), s.get("p99_ms")
    sig_bad = int(recv_result.get("sig_bad", -1))
    verdict = "PASS" if (lat and p50 < 2.0 and p99 < 5.0 and not missing and not errors and sig_bad == 0) else "FAIL"
    late_s = cb.summary_ms(late)
    if late_s.get("p99_ms", 0) > 1.0:
        cb.log(f"WARNING: the scheduler sent late (p99 {late_s['p99_ms']} ms): the rate was not held; "
               "figures are suspect")
    result = {
        "target": "choice -> callback received: p50 < 2 ms, p99 < 5 ms at 200 choices/s, durability full",
        "verdict": verdict,
        "alertd": a.alertd if not a.url_port else f"127.0.0.1:{a.url_port} (given)",
        "durability": a.durability if not a.url_port else "as configured",
        "delivery_target": a.target,
        "rate_per_s": a.rate, "duration_s": a.duration, "warmup_s": a.warmup, "clients": a.clients,
        "senders": a.senders, "choices_counted": counted, "choices_sent_span_s": round(sent_span, 3),
        "achieved_rate_per_s": round((len(records) - 1) / sent_span, 1) if sent_span > 0 else None,
        "choice_errors": len(errors), "choice_error_sample": [str(e) for e in errors[:5]],
        "latency": s, "missing": len(missing), "missing_sample": missing[:5], "duplicates": dupes,
        "receiver_count": len(recv_log), "receiver_sig_bad": sig_bad,
        "scheduler_lateness": late_s, "choice_round_trip": cb.summary_ms(rtt),
        "machine_busy_before_pct": busy, "out": out,
    }
    cb.log(f"latency choice -> callback received ({len(lat)} events): "
           f"p50 {s.get('p50_ms')} ms, p90 {s.get('p90_ms')} ms, p99 {s.get('p99_ms')} ms, "
           f"p99.9 {s.get('p999_ms')} ms, max {s.get('max_ms')} ms")
    cb.log(f"missing {len(missing)}, duplicates {dupes}, choice errors {len(errors)}, "
           f"bad signatures {result['receiver_sig_bad']}; scheduler lateness p99 {late_s.get('p99_ms')} ms "
           f"max {late_s.get('max_ms')} ms; choice round trip p50 {result['choice_round_trip'].get('p50_ms')} ms "
           f"p99 {result['choice_round_trip'].get('p99_ms')} ms")
    cb.log(f"verdict: {verdict} (p50 < 2 ms, p99 < 5 ms, nothing missing, no choice error, no bad signature)")
    cb.write_result(out, "latency.json", result)


if __name__ == "__main__":
    main()
