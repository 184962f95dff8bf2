#!/usr/bin/env python3
"""throughput.py: sustained delivery to a fast receiver with a slow one beside it (target 2).

    bench/callbacks/throughput.py [--alertd BIN] [--events 100000] [--backlog hold|live] ...

Python 3 standard library only; everything on 127.0.0.1. Target: >= 10 000
events/s delivered to one receiver that answers at once, while a receiver that
takes 1 s per answer is registered beside it (both webhooks on every client, so
every event goes to both).

Phases:
 0. Baselines, before alertd starts, each against a fresh fast receiver alone:
    a. wrk (bench/callbacks/wrk_webhook.lua: alertd-shaped 800-byte events with
       webhook headers, signatures checked as in the run), so the report shows
       how far the receiver is from being the limit (--skip-baseline: none);
    b. AsyncHTTPClient alone (bench/callbacks/ahc-baseline, built into
       .build-ahcbase): the same body shape and headers, each request signed,
       --ahc-concurrency (32, alertd's in-flight bound per receiver) in flight,
       the HTTP client configured and called like alertd's delivery worker: the
       ceiling of alertd's HTTP client on this machine, with its CPU seconds
       (--skip-ahc-baseline: none; skipped with a note if the binary is missing;
       --ahc-unsigned adds a run without signing, to show the signing cost).
 1. Start the fast receiver (answers 204 at once) and the slow one (answers after
    --slow-delay-ms, default 1000, without holding a thread), both verifying every
    signature; start alertd (fresh state dir, durability full by default) with
    both registered as webhooks of --clients clients in the config's `webhooks:`
    list (--webhooks api registers them through the API instead).
 2. Produce --events terminal events: each client's connection pipelines --batch
    posts, then the --batch choices of those alerts in queue order (alertd
    answers a connection's requests one after another, each after its commit, so
    each choice finds its alert displayed), --procs processes. Prints the
    production rate (events/s: post + choice each).
 3. Backlog, then restart-drain. alertd is stopped with SIGTERM (pending
    deliveries are in its store) and started again on the same state dir; the
    fast receiver's arrival rate after the restart is the measurement.
      --backlog hold (default): during production the fast receiver holds every
        request unanswered (alertd can only have its few in-flight deliveries
        open to it; everything else stays pending in the store), and the config
        sets callbacks.timeout: 600 so the held ones do not time out into
        back-off. After SIGTERM (and, if alertd waits for its in-flight
        deliveries, after 10 s) the receiver answers the held requests and from
        then on answers at once. The drain after the restart is then the whole
        backlog, whatever the production rate.
      --backlog live: both receivers answer normally during production; the
        backlog at SIGTERM is what delivery had not caught up with. If delivery
        kept pace with production the drain is too small to measure, and the
        run only shows that delivery keeps up with the production rate.
 4. The drain is watched until the fast receiver has had --events deliveries
    and nothing more comes for 1 s (or --drain-timeout). Then both receivers
    are stopped (they write their logs) and alertd is stopped.

Numbers (also in OUT/throughput.json, one `RESULT {json}` line on stdout):
  receiver_baseline     wrk against the fast receiver alone (rps, latency)
  ahc_baseline          AsyncHTTPClient alone: rps, p50/p99 ms, cpu_s, cpu_per_s,
                        cpu_us_per_req (and .unsigned with --ahc-unsigned)
  comparison            drain steady rate / AHC-alone rate, CPU microseconds per
                        delivery of alertd (all its work) and per request of AHC alone
  production_rate       events/s produced in phase 2 (post + choice, durable)
  live_fast_rate        fast receiver's arrivals/s during production (live mode)
  drain.events          fast receiver's arrivals after the restart
  drain.steady_rate     arrivals/s between the 10th and 90th percentile arrival
                        of the drain: excludes start-up and the tail  <- the target
  drain.min_1s / median_1s  per-second arrival counts inside that window
  drain.overall_rate    arrivals / (last - first arrival) of the drain
  slow.rate_in_window   slow receiver's arrivals/s inside the same window, and
  slow.max_inflight     the most requests it had open at once: it should keep
                        receiving about max_inflight / delay per second all along
  missing / duplicates  produced events never seen by the fast (slow: not
                        checked, it cannot finish) receiver / arrivals beyond one
  cpu                   CPU seconds of alertd and each receiver during the window
  deliveries_sample     state and attempt counts from alertd's deliveries API for
                        a sample of alerts (skipped if the API answers 404)
Verdict: PASS if steady_rate >= 10 000/s, the drain held at least --min-drain
events, nothing is missing, and the slow receiver received throughout the window.
"""
import argparse
import json
import multiprocessing
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cbcommon as cb  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")
ALERT = json.dumps({"title": "Bench event", "message": "Throughput run of bench/callbacks.",
                    "buttons": [{"title": "OK", "style": "default"}]}, separators=(",", ":"))
CHOICE = json.dumps({"button": "OK"}, separators=(",", ":"))


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / HZ
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return float("nan")


# ---- production ---------------------------------------------------------------------------

def _read_n(sock, parser, n, pending):
    """Reads until n responses are complete. pending: already parsed responses (list)."""
    while len(pending) < n:
        data = sock.recv(262144)
        if not data:
            raise ConnectionError("connection closed by alertd")
        pending.extend(parser.feed(data))
    got, rest = pending[:n], pending[n:]
    pending[:] = rest
    return got


def _client_loop(port, client, quota, batch, out, errors):
    host = f"{cb.HOST}:{port}"
    post = cb.build_request("POST", f"/v1/clients/{client}/alerts", host, ALERT)
    done, fails = [], 0
    try:
        sock = socket.create_connection((cb.HOST, port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        parser, pending = cb.ResponseParser(), []
        left = quota
        while left > 0:
            b = min(batch, left)
            sock.sendall(post * b)
            ids = []
            for st, _h, body in _read_n(sock, parser, b, pending):
                if st != 201:
                    raise RuntimeError(f"POST alerts: {st} {body[:200]!r}")
                ids.append(json.loads(body)["id"])
            sock.sendall(b"".join(cb.build_request("POST", f"/v1/clients/{client}/alerts/{i}/choice", host, CHOICE)
                                  for i in ids))
            retry = []
            for i, (st, _h, body) in zip(ids, _read_n(sock, parser, b, pending)):
                if st == 200:
                    done.append(i)
                else:
                    retry.append((i, st, body))
            for i, st, body in retry:  # not expected; sequential, in queue order
                fails += 1
                for _ in range(100):
                    sock.sendall(cb.build_request("POST", f"/v1/clients/{client}/alerts/{i}/choice", host, CHOICE))
                    (st, _h, body), = _read_n(sock, parser, 1, pending)
                    if st == 200:
                        done.append(i)
                        break
                    time.sleep(0.005)
                else:
                    raise RuntimeError(f"choice {client}/{i}: {st} {body[:200]!r}")
            left -= b
        sock.close()
    except Exception as e:  # noqa: BLE001 - reported to the parent
        errors.append(f"{client}: {type(e).__name__}: {e}")
    out.append((client, done, fails))


def _produce_proc(port, clients, quota, batch, q):
    out, errors = [], []
    ts = [threading.Thread(target=_client_loop, args=(port, c, quota, batch, out, errors)) for c in clients]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put((out, errors))


def produce(port, clients, per_client, batch, procs):
    q = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=_produce_proc, args=(port, clients[i::procs], per_client, batch, q))
          for i in range(procs)]
    t0 = time.time_ns()
    for p in ps:
        p.start()
    results = [q.get() for _ in ps]
    t1 = time.time_ns()
    for p in ps:
        p.join()
    produced, errors, retried = {}, [], 0
    for out, errs in results:
        errors += errs
        for client, done, fails in out:
            produced[client] = done
            retried += fails
    return produced, errors, retried, t0, t1


# ---- analysis -------------------------------------------------------------------------------

def window_stats(times, lo_frac=0.1, hi_frac=0.9):
    """times sorted (ns). Rate between the lo and hi quantile arrivals, per-second counts inside."""
    n = len(times)
    if n < 10:
        return None
    lo, hi = int(n * lo_frac), min(n - 1, int(n * hi_frac))
    t_lo, t_hi = times[lo], times[hi]
    span = (t_hi - t_lo) / 1e9
    buckets = []
    t = t_lo
    j = lo
    while t + 1e9 <= t_hi:
        c = 0
        while j < n and times[j] < t + 1e9:
            c += 1
            j += 1
        buckets.append(c)
        t += 1e9
    return {"events": n, "window_events": hi - lo, "window_s": round(span, 3),
            "steady_rate": round((hi - lo) / span, 1) if span > 0 else None,
            "overall_rate": round((n - 1) / ((times[-1] - times[0]) / 1e9), 1) if times[-1] > times[0] else None,
            "min_1s": min(buckets) if buckets else None,
            "median_1s": sorted(buckets)[len(buckets) // 2] if buckets else None,
            "per_second": buckets, "t_lo_ns": t_lo, "t_hi_ns": t_hi,
            "first_ns": times[0], "last_ns": times[-1]}


def max_concurrency(records):
    """Most requests open at once, from (arrival, answered) pairs."""
    ev = []
    for a, b, *_ in records:
        if b:
            ev.append((a, 1))
            ev.append((b, -1))
    ev.sort()
    cur = best = 0
    for _, d in ev:
        cur += d
        best = max(best, cur)
    return best


def sample_deliveries(port, produced, fast_url, slow_url, n=100):
    pairs = [(c, i) for c, ids in produced.items() for i in ids]
    if not pairs:
        return None
    conn = cb.Conn(cb.HOST, port, timeout=10)
    summary = {"fast": {}, "slow": {}, "other": {}}
    attempts = {"fast": [], "slow": []}
    try:
        for c, i in random.Random(1).sample(pairs, min(n, len(pairs))):
            st, obj, _ = conn.json("GET", f"/v1/clients/{c}/alerts/{i}/deliveries")
            if st != 200 or not obj:
                return {"unavailable": f"status {st}"}
            for d in obj.get("deliveries", []):
                url = d.get("target", "")
                k = "fast" if url == fast_url else "slow" if url == slow_url else "other"
                summary[k][d.get("state")] = summary[k].get(d.get("state"), 0) + 1
                if k in attempts:
                    attempts[k].append(len(d.get("attempts") or []))
    except (OSError, TimeoutError, ValueError) as e:
        return {"unavailable": str(e)}
    finally:
        conn.close()
    for k, v in attempts.items():
        if v:
            summary[k]["attempts_max"] = max(v)
            summary[k]["attempts_mean"] = round(sum(v) / len(v), 2)
    summary["alerts_sampled"] = min(n, len(pairs))
    return summary


# ---- main ----------------------------------------------------------------------------------

def default_ahc_baseline():
    """$AHC_BASELINE, else the bench/callbacks/ahc-baseline build in .build-ahcbase."""
    return os.environ.get("AHC_BASELINE") or os.path.join(cb.ROOT, ".build-ahcbase", "release", "ahc-baseline")


def run_ahc_baseline(out, binary, port, duration, warmup, concurrency, threads, sign=True):
    """ahc-baseline against a fresh fast receiver (signatures checked). Its JSON line, plus
    what the receiver saw; {"skipped": why} if it could not run."""
    tag = "ahc" if sign else "ahc-unsigned"
    r = cb.Receiver(f"{tag}-receiver", port, out, secret=cb.FAST_SECRET, threads=threads)
    cmd = [binary, "--url", r.url, "-c", str(concurrency), "-d", str(duration), "--warmup", str(warmup)]
    cmd += ["--secret", cb.FAST_SECRET] if sign else ["--no-sign"]
    res = {}
    try:
        rcpu0 = cpu_seconds(r.proc.pid)
        p = subprocess.run(["timeout", str(int(duration + warmup) + 60)] + cmd, capture_output=True, text=True)
        rcpu1 = cpu_seconds(r.proc.pid)
        with open(os.path.join(out, f"{tag}-baseline.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                res = json.loads(line)
        if not res:
            res = {"skipped": f"exit {p.returncode}, no result: {(p.stderr or p.stdout).strip()[-300:]}"}
    finally:
        _, rres = r.finish()
    res["receiver_count"] = int(rres.get("count", -1))
    res["receiver_sig_bad"] = int(rres.get("sig_bad", -1))
    res["receiver_cpu_s"] = round(rcpu1 - rcpu0, 2)  # warm-up included
    return res


def run_baseline(out, port, duration, conns, threads):
    r = cb.Receiver("baseline-receiver", port, out, secret=cb.FAST_SECRET, threads=threads)
    lua = os.path.join(cb.HERE, "wrk_webhook.lua")
    res = {}
    try:
        p = subprocess.run(["timeout", str(int(duration) + 30), "wrk", f"-t{min(2, conns)}", f"-c{conns}",
                            f"-d{max(1, int(round(duration)))}s", "--latency", "-s", lua, f"{r.url}"],
                           capture_output=True, text=True)
        with open(os.path.join(out, "baseline-wrk.txt"), "w") as f:
            f.write(p.stdout + p.stderr)
        for line in p.stdout.splitlines():
            if line.startswith("RESULT "):
                res = {k: float(v) for k, v in (kv.split("=", 1) for kv in line.split()[1:])}
    finally:
        r.finish()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--alertd", default=cb.default_alertd(), help="alertd binary (or a stand-in .py)")
    ap.add_argument("--port", type=int, default=18202)
    ap.add_argument("--fast-port", type=int, default=19202)
    ap.add_argument("--slow-port", type=int, default=19203)
    ap.add_argument("--events", type=int, default=100000)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16, help="requests pipelined per client connection")
    ap.add_argument("--procs", type=int, default=2, help="producer processes")
    ap.add_argument("--backlog", choices=["hold", "live"], default="hold")
    ap.add_argument("--slow-delay-ms", type=float, default=1000.0)
    ap.add_argument("--receiver-threads", type=int, default=2)
    ap.add_argument("--durability", default="full", choices=["full", "normal"])
    ap.add_argument("--webhooks", choices=["config", "api"], default="config")
    ap.add_argument("--min-drain", type=int, default=None, help="fewest drained events for a verdict "
                    "(default: half of --events)")
    ap.add_argument("--drain-timeout", type=float, default=300.0)
    ap.add_argument("--stop-grace", type=float, default=10.0,
                    help="hold mode: seconds alertd may take to stop before the held requests are answered")
    ap.add_argument("--baseline-duration", type=int, default=5, help="seconds")
    ap.add_argument("--baseline-conns", type=int, default=16)
    ap.add_argument("--skip-baseline", action="store_true", help="no wrk baseline")
    ap.add_argument("--ahc-baseline", default=default_ahc_baseline(),
                    help="ahc-baseline binary (default $AHC_BASELINE or .build-ahcbase/release/ahc-baseline)")
    ap.add_argument("--skip-ahc-baseline", action="store_true", help="no AsyncHTTPClient-alone baseline")
    ap.add_argument("--ahc-concurrency", type=int, default=32,
                    help="requests in flight for the AHC baseline (alertd's per-receiver bound)")
    ap.add_argument("--ahc-duration", type=float, default=5.0, help="counted seconds of the AHC baseline")
    ap.add_argument("--ahc-warmup", type=float, default=1.0, help="uncounted seconds before them")
    ap.add_argument("--ahc-unsigned", action="store_true",
                    help="also run the AHC baseline without signing (--no-sign): the signing cost")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--keep-state", action="store_true")
    a = ap.parse_args()
    if not a.alertd:
        sys.exit("error: no alertd: pass --alertd, set $ALERTD, or build into .build-bench")
    min_drain = a.min_drain if a.min_drain is not None else a.events // 2
    per_client = -(-a.events // a.clients)
    n_events = per_client * a.clients
    out = cb.out_dir("throughput", a.out)
    cb.build_receiver()
    cb.raise_nofile(4096)
    result = {"target": ">= 10 000 events/s to a fast receiver, a 1 s receiver beside it",
              "alertd": a.alertd, "durability": a.durability, "backlog_method": a.backlog,
              "webhooks_via": a.webhooks, "clients": a.clients, "events": n_events,
              "slow_delay_ms": a.slow_delay_ms, "out": out}
    result["machine_busy_before_pct"] = cb.cpu_busy(1)
    cb.log(f"machine busy before the run: {result['machine_busy_before_pct']}%")

    # 0. baseline
    if not a.skip_baseline:
        cb.log(f"baseline: wrk -c{a.baseline_conns} {a.baseline_duration:g}s against the fast receiver alone")
        result["receiver_baseline"] = run_baseline(out, a.fast_port, a.baseline_duration, a.baseline_conns,
                                                   a.receiver_threads)
        cb.log(f"baseline: {result['receiver_baseline'].get('rps', 0):.0f} req/s, "
               f"p99 {result['receiver_baseline'].get('p99_ms')} ms")
    if not a.skip_ahc_baseline:
        if not (a.ahc_baseline and os.access(a.ahc_baseline, os.X_OK)):
            result["ahc_baseline"] = {"skipped": f"no binary at {a.ahc_baseline}"}
            cb.log(f"AHC baseline skipped: no binary at {a.ahc_baseline} (build: swift build -c release "
                   "--package-path bench/callbacks/ahc-baseline --scratch-path .build-ahcbase)")
        else:
            variants = [True, False] if a.ahc_unsigned else [True]
            for sign in variants:
                cb.log(f"AHC baseline{'' if sign else ' (not signed)'}: {a.ahc_concurrency} in flight, "
                       f"{a.ahc_warmup:g} s warm-up + {a.ahc_duration:g} s against the fast receiver alone")
                r = run_ahc_baseline(out, a.ahc_baseline, a.fast_port, a.ahc_duration, a.ahc_warmup,
                                     a.ahc_concurrency, a.receiver_threads, sign=sign)
                if sign:
                    result["ahc_baseline"] = r
                else:
                    result["ahc_baseline"]["unsigned"] = r
                if "skipped" in r:
                    cb.log(f"AHC baseline failed: {r['skipped']}")
                else:
                    cb.log(f"AHC baseline{'' if sign else ' (not signed)'}: {r['rps']:.0f} req/s, p50 {r['p50_ms']} "
                           f"p99 {r['p99_ms']} ms, CPU {r['cpu_per_s']} s/s ({r['cpu_us_per_req']} us/request), "
                           f"{r['errors']} errors, {r['non2xx']} non-2xx, receiver bad signatures {r['receiver_sig_bad']}"
                           + ("" if sign else " (expected: not signed)"))

    # 1. receivers and alertd
    fast = cb.Receiver("fast", a.fast_port, out, hold=(a.backlog == "hold"), secret=cb.FAST_SECRET,
                       threads=a.receiver_threads)
    slow = cb.Receiver("slow", a.slow_port, out, delay_ms=a.slow_delay_ms, secret=cb.SLOW_SECRET,
                       threads=a.receiver_threads)
    run_id = time.strftime("%H%M%S")
    clients = [f"cbt-{run_id}-{i}" for i in range(a.clients)]
    hooks = [(c, r.url, s) for c in clients for r, s in ((fast, cb.FAST_SECRET), (slow, cb.SLOW_SECRET))]
    state = tempfile.mkdtemp(prefix="alertd-cb-throughput.")
    cfg = os.path.join(out, "alertd.yaml")
    cb.write_config(cfg, a.port, durability=a.durability, log_level=a.log_level,
                    webhooks=hooks if a.webhooks == "config" else (),
                    timeout=600 if a.backlog == "hold" else None, max_pending=max(10000, per_client + 10))
    alertd = cb.Alertd(a.alertd, a.port, cfg, state, out)
    try:
        alertd.start()
        cb.log(f"alertd ready on :{a.port} (state {state}); {a.clients} clients, webhooks via {a.webhooks}")
        if a.webhooks == "api":
            conn = cb.Conn(cb.HOST, a.port, timeout=10)
            for c, url, secret in hooks:
                st, _, raw = conn.json("POST", f"/v1/clients/{c}/webhooks", {"url": url, "secret": secret})
                if st != 201:
                    sys.exit(f"error: POST /v1/clients/{c}/webhooks: {st} {raw[:200]!r}")
            conn.close()

        # 2. production
        cb.log(f"producing {n_events} events: {a.clients} clients x {per_client}, batches of {a.batch}, "
               f"{a.procs} processes; fast receiver {'holding' if a.backlog == 'hold' else 'answering'}")
        ru0, acpu0 = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_seconds(alertd.proc.pid)
        produced, errors, retried, p0, p1 = produce(a.port, clients, per_client, a.batch, a.procs)
        ru1, acpu1 = resource.getrusage(resource.RUSAGE_CHILDREN), cpu_seconds(alertd.proc.pid)
        n_prod = sum(len(v) for v in produced.values())
        prod_s = (p1 - p0) / 1e9
        result["production"] = {"events": n_prod, "seconds": round(prod_s, 3),
                                "rate": round(n_prod / prod_s, 1), "choice_retries": retried,
                                "errors": len(errors), "error_sample": errors[:5],
                                "cpu_s": {"alertd": round(acpu1 - acpu0, 2),
                                          "producer": round(ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime, 2)}}
        cb.log(f"production: {n_prod} events in {prod_s:.2f} s = {n_prod / prod_s:.0f} events/s "
               f"({retried} choices retried, {len(errors)} client errors; CPU s {result['production']['cpu_s']})")
        if errors:
            cb.log("production errors: " + "; ".join(errors[:3]))
        fs, ss = fast.stats(), slow.stats()
        cb.log(f"at the end of production: fast received {fs['count']} (held {fs['held']}), slow {ss['count']}")

        # 3. stop, restart
        t_sigterm = time.time_ns()
        alertd.proc.send_signal(15)
        released_early = False
        try:
            alertd.proc.wait(timeout=a.stop_grace)
        except subprocess.TimeoutExpired:
            if a.backlog == "hold":
                cb.log(f"alertd still running {a.stop_grace:g} s after SIGTERM: answering the held requests")
                fast.release()
                released_early = True
            alertd.stop(timeout=120)
        t_stopped = time.time_ns()
        if a.backlog == "hold" and not released_early:
            fast.release()
        result["stop"] = {"seconds": round((t_stopped - t_sigterm) / 1e9, 3), "exit_code": alertd.proc.returncode,
                          "held_released_before_exit": released_early}
        cb.log(f"alertd stopped in {(t_stopped - t_sigterm) / 1e9:.2f} s (exit {alertd.proc.returncode})")
        time.sleep(1.0)
        before = fast.stats()["count"]
        t_restart = alertd.start()
        t_ready = time.time_ns()
        pid = alertd.proc.pid
        cpu0 = {"alertd": cpu_seconds(pid), "fast": cpu_seconds(fast.proc.pid), "slow": cpu_seconds(slow.proc.pid)}
        cb.log(f"alertd restarted, ready in {(t_ready - t_restart) / 1e6:.0f} ms; draining "
               f"(fast had {before} before the restart)")

        # 4. watch the drain
        series = []
        deadline = time.monotonic() + a.drain_timeout
        last_change, last = time.monotonic(), before
        while time.monotonic() < deadline:
            s = fast.stats()
            now = time.monotonic()
            series.append((time.time_ns(), s["count"], slow.stats()["count"], cpu_seconds(pid), cpu_seconds(fast.proc.pid)))
            if s["count"] != last:
                last, last_change = s["count"], now
            if (s["count"] >= n_prod and now - last_change > 1.0) or now - last_change > 10.0:
                break
            time.sleep(0.2)
        else:
            cb.log(f"WARNING: drain not finished after {a.drain_timeout:g} s")
        cpu1 = {"alertd": cpu_seconds(pid), "fast": cpu_seconds(fast.proc.pid), "slow": cpu_seconds(slow.proc.pid)}
        t_end = time.time_ns()
        result["deliveries_sample"] = sample_deliveries(a.port, produced, fast.url, slow.url)
        fast_log, fast_res = fast.finish()
        slow_log, slow_res = slow.finish()
    finally:
        if alertd.proc and alertd.proc.poll() is None:
            alertd.stop()
        if not a.keep_state:
            shutil.rmtree(state, ignore_errors=True)
    with open(os.path.join(out, "drain-series.tsv"), "w") as f:
        f.write("# wall_ns\tfast_count\tslow_count\talertd_cpu_s\tfast_cpu_s\n")
        for row in series:
            f.write("\t".join(map(str, row)) + "\n")

    # analysis
    fast_log.sort()
    slow_log.sort()
    drain_times = [r[0] for r in fast_log if r[0] >= t_restart]
    drain = window_stats(drain_times)
    live = [r[0] for r in fast_log if p0 <= r[0] <= p1]
    result["live_fast_rate"] = round(len(live) / prod_s, 1) if a.backlog == "live" else None
    result["fast_received_before_restart"] = before
    produced_ids = {i for v in produced.values() for i in v}
    seen = {}
    for r in fast_log:
        seen[r[3]] = seen.get(r[3], 0) + 1
    missing = [i for i in produced_ids if i not in seen]
    result["missing"] = len(missing)
    result["missing_sample"] = missing[:5]
    result["duplicates"] = sum(c - 1 for i, c in seen.items() if i in produced_ids)
    result["unexpected"] = sum(1 for i in seen if i not in produced_ids)
    result["sig_bad"] = {"fast": int(fast_res.get("sig_bad", -1)), "slow": int(slow_res.get("sig_bad", -1))}
    result["restart"] = {"ready_ms": round((t_ready - t_restart) / 1e6, 1),
                         "first_delivery_ms": round((drain_times[0] - t_restart) / 1e6, 1) if drain_times else None}
    slow_info = {"received_total": len(slow_log), "max_inflight": int(slow_res.get("max_inflight", 0)),
                 "max_concurrency_from_log": max_concurrency(slow_log)}
    answer_delays = sorted(r[1] - r[0] for r in slow_log if r[1])
    if answer_delays:
        slow_info["answer_delay_p50_ms"] = round(cb.percentile(answer_delays, 50) / 1e6, 1)
    verdict, why = "INCONCLUSIVE", ""
    steady_cpu = None
    if drain:
        lo, hi = drain.pop("t_lo_ns"), drain.pop("t_hi_ns")
        in_win = [r[0] for r in slow_log if lo <= r[0] <= hi]
        win_s = (hi - lo) / 1e9
        slow_info["received_in_window"] = len(in_win)
        slow_info["rate_in_window"] = round(len(in_win) / win_s, 1) if win_s > 0 else None
        # did it keep receiving throughout? the longest stretch of the window without a slow arrival
        edges = [lo] + in_win + [hi]
        slow_info["max_gap_in_window_ms"] = round(max(b - a for a, b in zip(edges, edges[1:])) / 1e6, 1)
        slow_info["bound_per_s"] = round(slow_info["max_inflight"] / (a.slow_delay_ms / 1000.0), 1)
        # CPU inside the window, from the drain samples (every ~0.2 s) nearest inside its ends: without
        # alertd's start-up (restoring the backlog) and the tail
        inside = [row for row in series if lo <= row[0] <= hi]
        if len(inside) >= 2:
            (w0, f0, s0, a0, r0), (w1, f1, s1, a1, r1) = inside[0], inside[-1]
            secs, n = (w1 - w0) / 1e9, (f1 - f0) + (s1 - s0)
            steady_cpu = {"wall_s": round(secs, 2), "deliveries": n, "alertd_cpu_s": round(a1 - a0, 2),
                          "alertd_cpu_per_s": round((a1 - a0) / secs, 3), "fast_cpu_per_s": round((r1 - r0) / secs, 3),
                          "alertd_cpu_us_per_delivery": round((a1 - a0) / n * 1e6, 1) if n else None}
        slow_ok = slow_info["max_gap_in_window_ms"] <= 2 * a.slow_delay_ms
        ok_rate = drain["steady_rate"] is not None and drain["steady_rate"] >= 10000
        if drain["events"] >= min_drain:
            verdict = "PASS" if ok_rate and not missing and slow_ok else "FAIL"
            why = "; ".join(x for x in (
                "" if ok_rate else f"steady rate {drain['steady_rate']}/s < 10 000/s",
                "" if not missing else f"{len(missing)} events missing",
                "" if slow_ok else f"the slow receiver got nothing for {slow_info['max_gap_in_window_ms']} ms")
                if x)
    if verdict == "INCONCLUSIVE":
        if not fast_log:
            verdict, why = "FAIL", "the fast receiver received nothing at all"
        elif missing:
            verdict, why = "FAIL", f"{len(missing)} events missing"
        else:
            why = (f"only {drain['events'] if drain else 0} events drained after the restart (< {min_drain}): "
                   "delivery kept up with production, so this run cannot show a rate above the production rate")
    if sum(v for v in result["sig_bad"].values() if v > 0):
        verdict = "FAIL"
        why = (why + "; " if why else "") + f"bad signatures {result['sig_bad']}"
    result["drain"] = drain
    result["slow"] = slow_info
    cpu = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu0}
    cpu["wall_s"] = round((t_end - t_restart) / 1e9, 2)
    result["cpu_during_drain_s"] = cpu
    result["cpu_in_window"] = steady_cpu if drain else None
    ahc = result.get("ahc_baseline") or {}
    slow_after = sum(1 for r in slow_log if r[0] >= t_restart)
    delivered = (drain["events"] if drain else 0) + slow_after
    comparison = {"alertd_cpu_us_per_delivery_whole_drain": round(cpu["alertd"] / delivered * 1e6, 1) if delivered else None,
                  "deliveries_whole_drain": delivered,
                  "alertd_cpu_us_per_delivery": (steady_cpu or {}).get("alertd_cpu_us_per_delivery"),
                  "alertd_cpu_per_s": (steady_cpu or {}).get("alertd_cpu_per_s")}
    if ahc.get("rps"):
        comparison["ahc_rps"] = ahc["rps"]
        comparison["ahc_cpu_us_per_req"] = ahc["cpu_us_per_req"]
        if drain and drain["steady_rate"]:
            comparison["drain_vs_ahc"] = round(drain["steady_rate"] / ahc["rps"], 3)
    result["comparison"] = comparison
    result["verdict"] = verdict
    result["verdict_reason"] = why
    base = result.get("receiver_baseline", {}).get("rps")
    cb.log(f"production {result['production']['rate']:.0f} events/s; fast receiver had {before} before the restart"
           + (f"; live fast rate during production {result['live_fast_rate']}/s" if a.backlog == "live" else ""))
    if drain:
        cb.log(f"drain after restart: {drain['events']} events, steady {drain['steady_rate']}/s "
               f"(10-90 % window {drain['window_s']} s, per-second min {drain['min_1s']} median {drain['median_1s']}), "
               f"overall {drain['overall_rate']}/s; first delivery {result['restart']['first_delivery_ms']} ms after spawn")
        cb.log(f"slow receiver in that window: {slow_info.get('rate_in_window')}/s (longest gap "
               f"{slow_info.get('max_gap_in_window_ms')} ms), max in flight {slow_info['max_inflight']} -> bound ~{slow_info.get('bound_per_s')}/s; "
               f"answer delay p50 {slow_info.get('answer_delay_p50_ms')} ms")
    else:
        cb.log("no drain after the restart")
    cb.log(f"missing {len(missing)}, duplicates {result['duplicates']}, bad signatures {result['sig_bad']}; "
           f"receiver baseline {base and round(base)} req/s; CPU s during the drain {cpu}")
    cb.log(f"deliveries sample: {result['deliveries_sample']}")
    if ahc.get("rps"):
        cb.log(f"AHC alone: {ahc['rps']:.0f} req/s at {ahc['concurrency']} in flight, CPU {ahc['cpu_per_s']} s/s "
               f"({ahc['cpu_us_per_req']} us/request)"
               + (f"; not signed {ahc['unsigned']['rps']:.0f} req/s, {ahc['unsigned']['cpu_us_per_req']} us/request"
                  if ahc.get("unsigned", {}).get("rps") else "")
               + (f"; alertd's steady drain is {comparison['drain_vs_ahc'] * 100:.0f} % of it" if "drain_vs_ahc" in comparison else "")
               + f"; alertd in the window: CPU {comparison['alertd_cpu_per_s']} s/s, "
               f"{comparison['alertd_cpu_us_per_delivery']} us per delivery "
               f"({comparison['alertd_cpu_us_per_delivery_whole_drain']} over the whole drain, start-up included)")
    elif "ahc_baseline" in result:
        cb.log(f"AHC alone: skipped ({ahc.get('skipped')})")
    cb.log(f"verdict: {verdict}" + (f" ({why})" if why else ""))
    cb.write_result(out, "throughput.json", result)


if __name__ == "__main__":
    main()
