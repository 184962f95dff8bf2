#!/usr/bin/env python3
"""waiters.py: parked long-poll waiters against alertd (bench/run.sh step e).

Python 3 standard library only. All traffic goes to --host (default 127.0.0.1).

Background waiters: N keep-alive connections, each sending
    GET /v1/clients/{bg}/alerts/current?wait=W&after={id}
where {id} is the alert displayed on client {bg} (posted first if there is
none), so the daemon parks every one of them (SPEC §4 long-poll). A waiter
answered after at least W/2 seconds (its wait ran out) is re-sent at once, so
it stays parked; one answered sooner did not park and is counted as `early`
(it is then left idle, never re-sent: no busy loop against a server that does
not park, such as the libmicrohttpd baseline).

Modes
  latency  N background waiters parked on {bg}; then, for up to --rounds rounds
           and at most --duration seconds:
             1. POST an alert to {lat} (control connection), read its id;
             2. send GET /v1/clients/{lat}/alerts/{id}?wait=W on the waiter
                connection; wait --park-delay-ms so it parks; if it is answered
                in that time, the round is invalid (`not_parked`);
             3. t0 = perf_counter_ns(); send POST .../{id}/choice
                {"button_index":0} on a third keep-alive connection; read both
                connections with epoll until both answers are complete.
           Reports the waiter's answer time after t0 (choice sent -> parked
           waiter answered; the daemon wakes the waiter only after the choice's
           durable commit) and, for reference, the choice's own response time.
           The Python client adds some tens of microseconds to every sample.
  rss      read VmRSS of --pid; park N waiters; wait until the daemon holds
           about N more fds and its RSS is stable (change < 0.5 % over 1 s,
           at most --settle-timeout s); read VmRSS again; report
           (after - before) / N in KiB per waiter; then close the waiters and
           read VmRSS once more (informative: memory given back).
  park     park N waiters and hold them for --duration seconds (the other
           instance's share of the waiters in bench/postgres.sh).

With --choose-port, latency sends its choices to another port: with several
instances on PostgreSQL, the choice is made on one instance and the waiter
parked on another is woken through the database's NOTIFY.

Output: human-readable lines on stderr, one `RESULT {json}` line on stdout,
and the same JSON in --json PATH. Exit status 0 even when the run is not
valid (see "valid" in the JSON); 2 on usage errors or an unreachable daemon.
"""
import argparse
import json
import os
import select
import socket
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchhttp import (Conn, ResponseParser, build_request, fd_count, hwm_kib,  # noqa: E402
                       percentile, raise_nofile, rss_kib, settle, write_json)

ALERT = {
    "title": "Deploy build 4711 to production?",
    "message": "All 1342 checks passed on commit 9f3c2e1.",
    "buttons": [{"title": "Deploy", "style": "default"}, {"title": "Cancel", "style": "cancel"}],
    "metadata": {"service": "checkout", "build": 4711},
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class AsyncConn:
    """A non-blocking keep-alive connection registered in an epoll set."""

    def __init__(self, host, port, ep):
        self.host, self.port, self.ep = host, port, ep
        self.sock = None
        self.connect()

    def connect(self):
        s = socket.create_connection((self.host, self.port), timeout=5.0)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        self.sock, self.parser, self.done = s, ResponseParser(), []
        self.closed = False
        self.ep.register(s.fileno(), select.EPOLLIN)

    def fileno(self):
        return self.sock.fileno()

    def send(self, data):
        if self.closed:
            self.close()
            self.connect()
        self.sock.setblocking(True)
        try:
            self.sock.sendall(data)
        finally:
            self.sock.setblocking(False)

    def on_readable(self):
        now = time.perf_counter_ns()
        try:
            data = self.sock.recv(262144)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            data = b""
        if not data:
            self.closed = True
            try:
                self.ep.unregister(self.sock.fileno())
            except (OSError, ValueError):
                pass
            return
        for status, headers, body in self.parser.feed(data):
            self.done.append((now, status, headers, body))
            if headers.get("connection", "").lower() == "close":
                self.closed = True

    def close(self):
        try:
            self.ep.unregister(self.sock.fileno())
        except (OSError, ValueError, KeyError):
            pass
        self.sock.close()


class WaiterPool:
    """N background waiters on /current?wait=&after=, kept parked."""

    def __init__(self, host, port, client, after, wait, ep):
        self.host, self.port, self.ep, self.wait = host, port, ep, wait
        path = f"/v1/clients/{client}/alerts/current?wait={wait}"
        if after:
            path += f"&after={after}"
        self.req = build_request("GET", path, f"{host}:{port}")
        self.conns = {}     # fd -> [sock, parser, sent_monotonic, state]  state: parked|early|closed
        self.early = 0
        self.rearmed = 0
        self.closed = 0
        self.connect_errors = 0
        self.statuses = {}
        self.started = time.monotonic()

    def open(self, n, deadline, service):
        """Connect and send n waiter requests; bounded by deadline (monotonic)."""
        t = self.started = time.monotonic()
        for i in range(n):
            if time.monotonic() > deadline:
                log(f"waiters: connect phase hit its time bound after {i} connections")
                break
            try:
                s = socket.create_connection((self.host, self.port), timeout=5.0)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(self.req)
                s.setblocking(False)
            except OSError as e:
                self.connect_errors += 1
                log(f"waiters: connection {i}: {e}")
                if self.connect_errors >= 20:
                    log("waiters: too many connect errors, stopping here")
                    break
                continue
            self.conns[s.fileno()] = [s, ResponseParser(), time.monotonic(), "parked"]
            self.ep.register(s.fileno(), select.EPOLLIN)
            if i % 500 == 499:
                service(0)
        log(f"waiters: opened {len(self.conns)} connections in {time.monotonic() - t:.2f}s")

    def on_readable(self, fd):
        c = self.conns[fd]
        s = c[0]
        try:
            data = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionError:
            data = b""
        if not data:
            self.ep.unregister(fd)
            if c[3] == "parked":
                self.closed += 1
            c[3] = "closed"
            return
        for status, headers, body in c[1].feed(data):
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if c[3] != "parked":
                continue
            if time.monotonic() - c[2] >= self.wait * 0.5:
                # its wait ran out: park it again
                s.setblocking(True)
                s.sendall(self.req)
                s.setblocking(False)
                c[2] = time.monotonic()
                self.rearmed += 1
            else:
                c[3] = "early"
                self.early += 1

    @property
    def parked(self):
        return sum(1 for c in self.conns.values() if c[3] == "parked")

    def close_all(self):
        for fd, c in list(self.conns.items()):
            try:
                self.ep.unregister(fd)
            except (OSError, ValueError, KeyError):
                pass
            c[0].close()
        self.conns.clear()


class Loop:
    def __init__(self):
        self.ep = select.epoll()
        self.pool = None
        self.others = {}  # fd -> AsyncConn

    def add(self, conn):
        self.others[conn.fileno()] = conn

    def service(self, timeout):
        """Handle events for up to `timeout` seconds (0: only what is ready)."""
        end = time.monotonic() + timeout
        while True:
            left = max(0.0, end - time.monotonic())
            for fd, _ev in self.ep.poll(left):
                c = self.others.get(fd)
                if c is not None and not c.closed and c.sock.fileno() == fd:
                    c.on_readable()
                elif self.pool is not None and fd in self.pool.conns:
                    self.pool.on_readable(fd)
            if time.monotonic() >= end:
                return


def displayed_id(ctl, client, create):
    st, obj, raw = ctl.json("GET", f"/v1/clients/{client}/alerts/current")
    if st == 200 and obj and obj.get("id"):
        return obj["id"]
    if not create:
        return None
    st, obj, raw = ctl.json("POST", f"/v1/clients/{client}/alerts", ALERT)
    if st not in (200, 201):
        sys.exit(f"error: POST /v1/clients/{client}/alerts -> {st} {raw[:300]!r}")
    st, obj, raw = ctl.json("GET", f"/v1/clients/{client}/alerts/current")
    if st != 200 or not obj or not obj.get("id"):
        sys.exit(f"error: GET /v1/clients/{client}/alerts/current -> {st} {raw[:300]!r}")
    return obj["id"]


def stats_ms(ns_values):
    v = sorted(x / 1e6 for x in ns_values)
    if not v:
        return {"n": 0}
    return {"n": len(v), "p50_ms": round(percentile(v, 50), 4), "p90_ms": round(percentile(v, 90), 4),
            "p99_ms": round(percentile(v, 99), 4), "p999_ms": round(percentile(v, 99.9), 4),
            "max_ms": round(v[-1], 4), "mean_ms": round(sum(v) / len(v), 4)}


def park_background(args, loop, ctl):
    after = displayed_id(ctl, args.bg_client, create=True)
    log(f"waiters: client {args.bg_client!r} displays {after}; parking {args.waiters} waiters")
    pool = WaiterPool(args.host, args.port, args.bg_client, after, args.wait, loop.ep)
    loop.pool = pool
    pool.open(args.waiters, time.monotonic() + args.connect_timeout, loop.service)
    return pool


def mode_latency(args, loop, ctl, result):
    pid = args.pid
    pool = park_background(args, loop, ctl) if args.waiters > 0 else None
    if pid:
        r = settle(pid, timeout=min(10.0, args.settle_timeout), service=loop.service)
        result["rss_kib_with_waiters"] = r[0]
        result["daemon_fds"] = r[1]
    else:
        loop.service(1.0)
    parked_before = pool.parked if pool else 0
    log(f"waiters: {parked_before} background waiters parked ({pool.early if pool else 0} answered early)")

    lat = args.lat_client
    # A displayed alert left on {lat} by an earlier run would queue ours: withdraw it.
    seen = set()
    for _ in range(20):
        st, obj, _raw = ctl.json("GET", f"/v1/clients/{lat}/alerts/current")
        if st != 200 or not obj or obj.get("id") in seen:
            break
        seen.add(obj.get("id"))
        ctl.json("DELETE", f"/v1/clients/{lat}/alerts/{obj.get('id')}")

    waiter = AsyncConn(args.host, args.port, loop.ep)
    # Another instance's port makes the choice travel between instances (several on PostgreSQL).
    chooser = AsyncConn(args.host, args.choose_port or args.port, loop.ep)
    loop.add(waiter)
    loop.add(chooser)
    hostport = f"{args.host}:{args.port}"
    choice_body = json.dumps({"button_index": 0})
    waiter_ns, choice_ns = [], []
    not_parked = bad_post = bad_waiter = bad_choice = timeouts = waiter_first = 0
    bad_examples = []
    t_end = time.monotonic() + args.duration
    if pool:
        # stop before the background waiters' own wait runs out: their re-parking
        # would be a burst of work inside the measurement
        t_end = min(t_end, pool.started + args.wait * 0.9)
    rounds = 0
    while rounds < args.rounds and time.monotonic() < t_end:
        rounds += 1
        st, obj, raw = ctl.json("POST", f"/v1/clients/{lat}/alerts", ALERT)
        if st not in (200, 201) or not obj or "id" not in obj:
            bad_post += 1
            if len(bad_examples) < 5:
                bad_examples.append(f"POST alert -> {st} {raw[:200]!r}")
            if bad_post >= 20:
                log("waiters: 20 failed posts, stopping")
                break
            continue
        aid = obj["id"]
        if obj.get("state") not in (None, "displayed") and len(bad_examples) < 5:
            bad_examples.append(f"posted alert is {obj.get('state')!r}, not displayed")
        for c in (waiter, chooser):
            if c.closed:
                loop.others.pop(c.fileno(), None)
                c.close()
                c.connect()
                loop.add(c)
            c.done.clear()
        waiter.send(build_request("GET", f"/v1/clients/{lat}/alerts/{aid}?wait={args.wait}", hostport))
        loop.service(args.park_delay_ms / 1000.0)
        parked = not waiter.done
        if not parked:
            not_parked += 1
        t0 = time.perf_counter_ns()
        chooser.send(build_request("POST", f"/v1/clients/{lat}/alerts/{aid}/choice",
                                   f"{args.host}:{args.choose_port or args.port}", choice_body))
        deadline = time.monotonic() + args.round_timeout
        while (not waiter.done or not chooser.done) and time.monotonic() < deadline:
            if waiter.closed and not waiter.done:
                break
            for fd, _ev in loop.ep.poll(max(0.0, deadline - time.monotonic())):
                c = loop.others.get(fd)
                if c is not None and not c.closed and c.fileno() == fd:
                    c.on_readable()
                elif loop.pool is not None and fd in loop.pool.conns:
                    loop.pool.on_readable(fd)
        if not waiter.done or not chooser.done:
            timeouts += 1
            if len(bad_examples) < 5:
                bad_examples.append(f"round {rounds}: no answer in {args.round_timeout}s "
                                    f"(waiter={'yes' if waiter.done else 'no'}, choice={'yes' if chooser.done else 'no'})")
            # do not reuse connections in an unknown state
            for c in (waiter, chooser):
                c.closed = True
            continue
        tw, wst, _wh, wbody = waiter.done[0]
        tc, cst, _ch, cbody = chooser.done[0]
        if cst != 200:
            bad_choice += 1
            if len(bad_examples) < 5:
                bad_examples.append(f"choice -> {cst} {cbody[:200]!r}")
        wstate = None
        try:
            wstate = json.loads(wbody).get("state")
        except (ValueError, AttributeError):
            pass
        if wst != 200 or wstate != "answered":
            bad_waiter += 1
            if len(bad_examples) < 5:
                bad_examples.append(f"waiter -> {wst} state={wstate!r}")
        if parked and cst == 200 and wst == 200 and wstate == "answered":
            waiter_ns.append(tw - t0)
            choice_ns.append(tc - t0)
            if tw < tc:
                waiter_first += 1
    parked_after = pool.parked if pool else 0
    result.update({
        "rounds": rounds,
        "valid_rounds": len(waiter_ns),
        "not_parked": not_parked,
        "bad_post": bad_post, "bad_choice": bad_choice, "bad_waiter": bad_waiter, "timeouts": timeouts,
        "waiter_answered_before_choice_response": waiter_first,
        "bg_parked_before": parked_before, "bg_parked_after": parked_after,
        "bg_early": pool.early if pool else 0, "bg_rearmed": pool.rearmed if pool else 0,
        "bg_closed_by_server": pool.closed if pool else 0,
        "stopped_by": "rounds" if rounds >= args.rounds else "time",
        "bg_connect_errors": pool.connect_errors if pool else 0,
        "bg_statuses": {str(k): v for k, v in (pool.statuses if pool else {}).items()},
        "waiter_latency": stats_ms(waiter_ns),
        "choice_latency": stats_ms(choice_ns),
        "problems": bad_examples,
    })
    result["valid"] = (len(waiter_ns) >= max(1, min(100, args.rounds // 2))
                       and parked_after >= 0.99 * args.waiters)
    w = result["waiter_latency"]
    log(f"waiters: {len(waiter_ns)}/{rounds} valid rounds, {parked_after} background waiters still parked")
    if w.get("n"):
        log(f"waiters: choice -> waiter answered: p50 {w['p50_ms']:.3f} ms  p99 {w['p99_ms']:.3f} ms  "
            f"max {w['max_ms']:.3f} ms")
    for p in bad_examples:
        log(f"waiters: problem: {p}")
    waiter.close()
    chooser.close()
    if pool:
        pool.close_all()


def mode_rss(args, loop, ctl, result):
    pid = args.pid
    after = displayed_id(ctl, args.bg_client, create=True)
    # one waiter round trip so that lazily built structures exist before "before"
    ctl.request("GET", f"/v1/clients/{args.bg_client}/alerts/current?wait=0&after={after}")
    rss0, fds0, ok0, _ = settle(pid, timeout=min(5.0, args.settle_timeout))
    log(f"waiters: before: VmRSS {rss0} KiB, {fds0} fds")
    pool = park_background(args, loop, ctl)
    opened = len(pool.conns)
    # the daemon should hold one fd per parked waiter; allow 1 % slack
    rss1, fds1, ok1, waited = settle(pid, min_fds=fds0 + int(opened * 0.99), timeout=args.settle_timeout,
                                     service=loop.service)
    parked = pool.parked
    log(f"waiters: after parking {parked} of {opened}: VmRSS {rss1} KiB, {fds1} fds "
        f"({'settled' if ok1 else 'NOT settled'} after {waited:.1f}s)")
    per = (rss1 - rss0) / parked if parked else float("nan")
    hwm = hwm_kib(pid)
    pool.close_all()
    rss2, fds2, _, _ = settle(pid, timeout=5.0)
    log(f"waiters: {per:.2f} KiB per parked waiter, {(rss1 - rss0) / max(1, opened):.2f} KiB per open "
        f"connection; after closing them: VmRSS {rss2} KiB, {fds2} fds")
    result.update({
        "opened": opened, "parked": parked, "early": pool.early, "closed_by_server": pool.closed,
        "connect_errors": pool.connect_errors, "statuses": {str(k): v for k, v in pool.statuses.items()},
        "rss_before_kib": rss0, "rss_parked_kib": rss1, "rss_after_close_kib": rss2, "vmhwm_kib": hwm,
        "fds_before": fds0, "fds_parked": fds1, "fds_after_close": fds2,
        "settled": ok1, "settle_seconds": round(waited, 2),
        "kib_per_waiter": round(per, 3) if parked else None,
        # every open connection, parked or not (for a server that does not park,
        # e.g. the baseline, this is the cost of an idle keep-alive connection)
        "kib_per_connection": round((rss1 - rss0) / opened, 3) if opened else None,
    })
    result["valid"] = bool(parked >= 0.99 * args.waiters and ok1)


def mode_park(args, loop, ctl, result):
    """Parks the background waiters and holds them for --duration seconds (or until killed)."""
    pool = park_background(args, loop, ctl)
    log(f"waiters: {pool.parked} parked; holding them for {args.duration:.0f} s")
    end = time.monotonic() + args.duration
    while time.monotonic() < end:
        loop.service(min(1.0, end - time.monotonic()))
    result.update({"parked": pool.parked, "early": pool.early, "rearmed": pool.rearmed, "closed_by_server": pool.closed})
    result["valid"] = pool.parked >= 0.99 * args.waiters
    pool.close_all()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["latency", "rss", "park"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, help="daemon PID (required for rss; latency reports RSS with it)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--choose-port", type=int, help="latency: send the choices to this port (another instance)")
    ap.add_argument("--waiters", type=int, default=10000, help="background waiters (default 10000)")
    ap.add_argument("--bg-client", default="bg")
    ap.add_argument("--lat-client", default="lat")
    ap.add_argument("--wait", type=int, default=60, help="wait= seconds on every waiter (default 60)")
    ap.add_argument("--rounds", type=int, default=2000, help="latency rounds (default 2000)")
    ap.add_argument("--duration", type=float, default=45.0,
                    help="latency: stop after this many seconds (default 45, under --wait)")
    ap.add_argument("--park-delay-ms", type=float, default=5.0,
                    help="latency: pause between sending the waiter and the choice (default 5)")
    ap.add_argument("--round-timeout", type=float, default=5.0)
    ap.add_argument("--connect-timeout", type=float, default=120.0,
                    help="time bound for opening all background connections (default 120 s)")
    ap.add_argument("--settle-timeout", type=float, default=30.0)
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args()
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        ap.error("this benchmark only targets the loopback interface")
    if args.mode == "rss" and not args.pid:
        ap.error("rss needs --pid")
    if args.waiters < 0 or args.waiters > 100000:
        ap.error("--waiters must be 0..100000")
    if args.rounds < 1 or args.rounds > 100000:
        ap.error("--rounds must be 1..100000")
    if args.pid and not os.path.exists(f"/proc/{args.pid}/status"):
        ap.error(f"no process {args.pid}")
    limit = raise_nofile(args.waiters + 64)
    log(f"waiters: RLIMIT_NOFILE soft limit {limit}")

    ctl = Conn(args.host, args.port)
    try:
        ctl.request("GET", "/readyz")
    except OSError as e:
        print(f"error: cannot reach {args.host}:{args.port}: {e}", file=sys.stderr)
        sys.exit(2)
    loop = Loop()
    result = {"mode": args.mode, "waiters": args.waiters, "port": args.port, "pid": args.pid,
              "wait": args.wait, "park_delay_ms": args.park_delay_ms}
    t = time.monotonic()
    if args.mode == "latency":
        mode_latency(args, loop, ctl, result)
    elif args.mode == "park":
        mode_park(args, loop, ctl, result)
    else:
        mode_rss(args, loop, ctl, result)
    result["seconds"] = round(time.monotonic() - t, 2)
    ctl.close()
    write_json(args.json, result)


if __name__ == "__main__":
    main()
