#!/usr/bin/env python3
"""pending.py: many pending alerts, and restarting with them (bench/run.sh step e).

Python 3 standard library only. All traffic goes to 127.0.0.1.

  load     POST --count alerts (default 100 000, each with two buttons, so they
           stay pending) spread over --clients clients named PREFIX-0..PREFIX-(k-1),
           through --conns keep-alive connections with up to --depth requests
           pipelined on each (default 64 x 4), bounded by --timeout. One alert per
           client is posted first, then VmRSS of --pid is read ("before"); after
           the load and once RSS is stable, VmRSS is read again. Reports
           (after - before) / count in KiB per pending alert, and the load rate.

  restart  Stops the running daemon (--old-pid: SIGTERM, wait for it to exit,
           bounded; SIGKILL only if it does not), then starts the command given
           after `--` (stdout/stderr to --log, its PID written to --pid-file; it is
           left running for the caller to stop) and measures the time from just
           before the process is spawned to the moment both
               GET /readyz                              -> 200 and
               GET /v1/clients/{client}/alerts/current  -> 200
           have been seen. Each probe is a fresh connection; probes repeat every
           --poll-ms (default 2 ms). Polling this often is acceptable here because
           it measures a one-off startup time, and one connection attempt every
           2 ms costs the starting daemon next to nothing; the figure is accurate
           to about the poll interval. Then GET /v1/clients is summed to check
           that every pending alert is still there (--expect-pending).

Output: progress on stderr, one `RESULT {json}` line on stdout, the same JSON
in --json PATH.
"""
import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchhttp import (Conn, ResponseParser, alive, build_request, fd_count,  # noqa: E402
                       hwm_kib, raise_nofile, rss_kib, settle, write_json)

HOST = "127.0.0.1"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def alert_body(i):
    return json.dumps({
        "title": f"Pending alert {i}",
        "message": "Disk usage on db-7 is above 90 %. Expand the volume now?",
        "buttons": [{"title": "Expand", "style": "default"}, {"title": "Later", "style": "cancel"}],
        "metadata": {"host": "db-7", "n": i},
    }, separators=(",", ":"))


def client_name(prefix, k):
    return f"{prefix}-{k}"


def count_pending(ctl):
    """Sum of `pending` over GET /v1/clients, or None if the answer has no such list."""
    st, obj, raw = ctl.json("GET", "/v1/clients")
    if st != 200 or not isinstance(obj, dict) or not isinstance(obj.get("clients"), list):
        return None
    try:
        return sum(int(c.get("pending", 0)) for c in obj["clients"])
    except (TypeError, ValueError, AttributeError):
        return None


def cmd_load(args):
    raise_nofile(args.conns + 64)
    hostport = f"{HOST}:{args.port}"
    ctl = Conn(HOST, args.port)
    for k in range(args.clients):
        st, obj, raw = ctl.json("POST", f"/v1/clients/{client_name(args.prefix, k)}/alerts",
                                json.loads(alert_body(-1 - k)))
        if st not in (200, 201):
            sys.exit(f"error: warm-up POST -> {st} {raw[:300]!r}")
    rss0, fds0, _, _ = settle(args.pid, timeout=5.0)
    log(f"pending: before: VmRSS {rss0} KiB ({args.clients} clients, one alert each)")

    ep = select.epoll()
    conns = {}
    for c in range(args.conns):
        s = socket.create_connection((HOST, args.port), timeout=5.0)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        conns[s.fileno()] = {"sock": s, "parser": ResponseParser(), "inflight": 0,
                             "path": f"/v1/clients/{client_name(args.prefix, c % args.clients)}/alerts"}
        ep.register(s.fileno(), select.EPOLLIN)

    sent = done = ok = 0
    statuses = {}
    examples = []
    closed = 0

    def send_more(c):
        nonlocal sent
        chunks = []
        while c["inflight"] < args.depth and sent < args.count:
            chunks.append(build_request("POST", c["path"], hostport, alert_body(sent)))
            c["inflight"] += 1
            sent += 1
        if chunks:
            s = c["sock"]
            s.setblocking(True)
            s.sendall(b"".join(chunks))
            s.setblocking(False)

    t0 = time.monotonic()
    deadline = t0 + args.timeout
    for c in conns.values():
        send_more(c)
    last_report = t0
    stop_reason = None
    while done < sent and time.monotonic() < deadline:
        for fd, _ev in ep.poll(1.0):
            c = conns[fd]
            try:
                data = c["sock"].recv(262144)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionError:
                data = b""
            if not data:
                ep.unregister(fd)
                closed += 1
                done += c["inflight"]  # lost
                statuses["lost"] = statuses.get("lost", 0) + c["inflight"]
                c["inflight"] = 0
                continue
            for st, _h, body in c["parser"].feed(data):
                c["inflight"] -= 1
                done += 1
                statuses[st] = statuses.get(st, 0) + 1
                if st == 201:
                    ok += 1
                elif len(examples) < 5:
                    examples.append(f"{st} {body[:200]!r}")
            if stop_reason is None:
                send_more(c)
        failed = done - ok
        if failed >= 1000 and stop_reason is None:
            stop_reason = f"{failed} failed posts; stopping"
            log("pending: " + stop_reason)
            args.count = sent  # send nothing more
        if closed == len(conns):
            stop_reason = stop_reason or "server closed every connection"
            break
        now = time.monotonic()
        if now - last_report >= 5:
            log(f"pending: {done}/{args.count} answered ({done / (now - t0):.0f}/s)")
            last_report = now
    elapsed = time.monotonic() - t0
    if done < sent:
        stop_reason = stop_reason or f"time bound of {args.timeout}s reached"
    log(f"pending: {ok} alerts created of {sent} sent in {elapsed:.2f}s ({ok / elapsed:.0f}/s)"
        + (f"; {stop_reason}" if stop_reason else ""))
    for fd, c in conns.items():
        c["sock"].close()
    ep.close()

    rss1, fds1, settled, waited = settle(args.pid, timeout=args.settle_timeout)
    total = count_pending(ctl)
    per = (rss1 - rss0) / ok if ok else None
    log(f"pending: after: VmRSS {rss1} KiB ({'settled' if settled else 'NOT settled'} after {waited:.1f}s); "
        f"{per:.3f} KiB per pending alert; GET /v1/clients counts {total} pending" if per is not None
        else "pending: no alert created")
    ctl.close()
    result = {
        "mode": "load", "count": args.count, "created": ok, "sent": sent, "answered": done,
        "statuses": {str(k): v for k, v in statuses.items()}, "problems": examples,
        "stop_reason": stop_reason, "clients": args.clients, "conns": args.conns, "depth": args.depth,
        "seconds": round(elapsed, 3), "posts_per_second": round(ok / elapsed, 1) if elapsed else None,
        "rss_before_kib": rss0, "rss_after_kib": rss1, "vmhwm_kib": hwm_kib(args.pid),
        "settled": settled, "kib_per_pending_alert": round(per, 4) if per is not None else None,
        "pending_reported": total, "pending_expected": ok + args.clients,
        "valid": ok == args.count and settled,
    }
    write_json(args.json, result)


def probe(path, timeout=2.0):
    """One GET on a fresh connection: status, or None when not reachable yet."""
    try:
        with socket.create_connection((HOST, PORT), timeout=timeout) as s:
            s.sendall(build_request("GET", path, f"{HOST}:{PORT}", extra={"Connection": "close"}))
            p = ResponseParser()
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                data = s.recv(65536)
                if not data:
                    return None
                got = p.feed(data)
                if got:
                    return got[0][0]
    except OSError:
        return None
    return None


def cmd_restart(args):
    global PORT
    PORT = args.port
    if not args.cmd:
        sys.exit("error: give the daemon's command after --")
    stop_s = None
    killed = False
    if args.old_pid:
        t = time.monotonic()
        try:
            os.kill(args.old_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        while alive(args.old_pid) and time.monotonic() - t < args.stop_timeout:
            time.sleep(0.01)
        if alive(args.old_pid):
            log(f"pending: PID {args.old_pid} still running {args.stop_timeout}s after SIGTERM: SIGKILL")
            os.kill(args.old_pid, signal.SIGKILL)
            killed = True
            while alive(args.old_pid) and time.monotonic() - t < args.stop_timeout + 10:
                time.sleep(0.01)
        stop_s = time.monotonic() - t
        log(f"pending: old daemon stopped in {stop_s:.3f}s")
    # the port must be free, or the probes would talk to something else
    t = time.monotonic()
    while probe("/readyz", timeout=0.5) is not None:
        if time.monotonic() - t > 10:
            sys.exit(f"error: something still answers on port {PORT}")
        time.sleep(0.05)

    logf = open(args.log, "ab") if args.log else subprocess.DEVNULL
    interval = args.poll_ms / 1000.0
    t0 = time.perf_counter_ns()
    proc = subprocess.Popen(args.cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                            start_new_session=True)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(f"{proc.pid}\n")
    t_ready = t_current = None
    probes = 0
    deadline = time.monotonic() + args.timeout
    while (t_ready is None or t_current is None) and time.monotonic() < deadline:
        if proc.poll() is not None:
            log(f"pending: the daemon exited with status {proc.returncode} while starting")
            break
        if t_ready is None:
            probes += 1
            if probe("/readyz") == 200:
                t_ready = time.perf_counter_ns()
        if t_current is None:
            probes += 1
            if probe(f"/v1/clients/{args.client}/alerts/current") == 200:
                t_current = time.perf_counter_ns()
        if t_ready is None or t_current is None:
            time.sleep(interval)
    ms = lambda t: round((t - t0) / 1e6, 3) if t is not None else None  # noqa: E731
    ready_ms = ms(max(t_ready, t_current)) if t_ready is not None and t_current is not None else None
    result = {"mode": "restart", "old_pid": args.old_pid, "pid": proc.pid, "stop_seconds":
              round(stop_s, 3) if stop_s is not None else None, "sigkill": killed,
              "readyz_ms": ms(t_ready), "current_ms": ms(t_current), "ready_ms": ready_ms,
              "probes": probes, "poll_ms": args.poll_ms, "client": args.client}
    if ready_ms is not None:
        log(f"pending: restart: /readyz 200 after {ms(t_ready)} ms, /current 200 after {ms(t_current)} ms")
        ctl = Conn(HOST, PORT)
        total = count_pending(ctl)
        ctl.close()
        rss, fds, _, _ = settle(proc.pid, timeout=5.0)
        result.update({"pending_reported": total, "pending_expected": args.expect_pending,
                       "rss_after_restart_kib": rss, "fds": fds})
        log(f"pending: after restart GET /v1/clients counts {total} pending (expected {args.expect_pending}); "
            f"VmRSS {rss} KiB")
        result["valid"] = args.expect_pending is None or total == args.expect_pending
    else:
        log(f"pending: restart: not ready within {args.timeout}s")
        result["valid"] = False
    write_json(args.json, result)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    lo = sub.add_parser("load", help="post many pending alerts, report RSS per alert")
    lo.add_argument("--port", type=int, required=True)
    lo.add_argument("--pid", type=int, required=True)
    lo.add_argument("--count", type=int, default=100000)
    lo.add_argument("--clients", type=int, default=4)
    lo.add_argument("--prefix", default="pend")
    lo.add_argument("--conns", type=int, default=64)
    lo.add_argument("--depth", type=int, default=4, help="requests pipelined per connection (default 4)")
    lo.add_argument("--timeout", type=float, default=300.0, help="time bound for the load (default 300 s)")
    lo.add_argument("--settle-timeout", type=float, default=30.0)
    lo.add_argument("--json")
    rs = sub.add_parser("restart", help="restart the daemon, time until it serves")
    rs.add_argument("--port", type=int, required=True)
    rs.add_argument("--old-pid", type=int)
    rs.add_argument("--pid-file")
    rs.add_argument("--log")
    rs.add_argument("--client", default="pend-0", help="client whose /current must be 200")
    rs.add_argument("--expect-pending", type=int)
    rs.add_argument("--poll-ms", type=float, default=2.0)
    rs.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    rs.add_argument("--stop-timeout", type=float, default=60.0)
    rs.add_argument("--json")
    rs.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the daemon's command line")
    args = ap.parse_args()
    if args.command == "load":
        if not 1 <= args.count <= 1_000_000:
            ap.error("--count must be 1..1000000")
        if not 1 <= args.clients <= 10000 or not 1 <= args.conns <= 1024 or not 1 <= args.depth <= 64:
            ap.error("--clients 1..10000, --conns 1..1024, --depth 1..64")
        if not os.path.exists(f"/proc/{args.pid}/status"):
            ap.error(f"no process {args.pid}")
        cmd_load(args)
    else:
        if args.cmd and args.cmd[0] == "--":
            args.cmd = args.cmd[1:]
        cmd_restart(args)


if __name__ == "__main__":
    main()
