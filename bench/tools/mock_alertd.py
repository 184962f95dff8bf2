#!/usr/bin/env python3
"""mock_alertd.py: a stand-in for alertd, only to test the bench harness itself.

    ALERTD=bench/tools/mock_alertd.py bench/run.sh --quick

Python 3 stdlib (asyncio). It implements just the parts of SPEC §4 the bench
uses, with the long-poll semantics that matter (parking on
/current?wait=&after= and on /alerts/{id}?wait=, waking on a choice or a
withdrawal, fifo queues), so that waiters.py and pending.py can be checked
against something that really parks. No validation, no auth, no callbacks,
and "durability" is a state.json written on SIGTERM and read at start.
Its figures say nothing about alertd.

Flags as alertd's: --config PATH (ignored) --listen HOST:PORT --state-dir DIR.
"""
import argparse
import asyncio
import json
import os
import signal
import sys
import time
from urllib.parse import parse_qs, urlsplit

TERMINAL = {"answered", "dismissed", "expired", "withdrawn"}


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class State:
    def __init__(self):
        self.alerts = {}    # id -> alert dict
        self.clients = {}   # name -> {"queue": [ids in order], "displayed": id or None}
        self.seq = 0
        self.current_waiters = {}  # client -> set of futures
        self.alert_waiters = {}    # id -> set of futures

    def client(self, name):
        return self.clients.setdefault(name, {"queue": [], "displayed": None})

    def create(self, name, body):
        self.seq += 1
        aid = f"{time.time_ns():020d}{self.seq:08d}"
        a = {"id": aid, "client": name, "state": "queued", "position": None, "title": body.get("title"),
             "message": body.get("message"), "style": body.get("style", "alert"),
             "buttons": body.get("buttons", []), "priority": body.get("priority", 0),
             "created_at": now_iso(), "displayed_at": None, "decided_at": None, "expires_at": None,
             "result": None, "metadata": body.get("metadata")}
        self.alerts[aid] = a
        self.client(name)["queue"].append(aid)
        self.advance(name)
        return a

    def advance(self, name):
        c = self.client(name)
        before = c["displayed"]
        if c["displayed"] is None or self.alerts[c["displayed"]]["state"] in TERMINAL:
            c["displayed"] = None
            while c["queue"]:
                nxt = c["queue"][0]
                if self.alerts[nxt]["state"] in TERMINAL:
                    c["queue"].pop(0)
                    continue
                c["displayed"] = nxt
                self.alerts[nxt]["state"] = "displayed"
                self.alerts[nxt]["displayed_at"] = now_iso()
                self.alerts[nxt]["position"] = 0
                break
        if c["displayed"] != before:
            for f in self.current_waiters.pop(name, ()):
                if not f.done():
                    f.set_result(None)

    def finish(self, aid, outcome, index=None):
        a = self.alerts[aid]
        a["state"] = outcome
        a["position"] = None
        a["decided_at"] = now_iso()
        btn = a["buttons"][index] if index is not None else None
        a["result"] = {"outcome": outcome, "button": btn["title"] if btn else None,
                       "button_index": index, "cancelled": bool(btn and btn.get("style") == "cancel"),
                       "decided_by": None}
        q = self.client(a["client"])["queue"]
        if aid in q:
            q.remove(aid)
        for f in self.alert_waiters.pop(aid, ()):
            if not f.done():
                f.set_result(None)
        self.advance(a["client"])


S = State()


def reply(status, obj=None, extra=""):
    reason = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 404: "Not Found",
              409: "Conflict", 422: "Unprocessable Content"}.get(status, "X")
    body = b"" if obj is None else json.dumps(obj, separators=(",", ":")).encode()
    head = f"HTTP/1.1 {status} {reason}\r\n"
    if status != 204:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return (head + extra + "\r\n").encode() + body


async def park(registry, key, wait):
    f = asyncio.get_running_loop().create_future()
    registry.setdefault(key, set()).add(f)
    try:
        await asyncio.wait_for(f, wait)
    except asyncio.TimeoutError:
        pass
    finally:
        s = registry.get(key)
        if s is not None:
            s.discard(f)


async def route(method, target, body):
    u = urlsplit(target)
    q = {k: v[-1] for k, v in parse_qs(u.query).items()}
    parts = [p for p in u.path.split("/") if p]
    wait = min(int(q.get("wait", "0")), 60)
    if parts in (["healthz"], ["readyz"]):
        return reply(200, {"status": "ok"})
    if parts == ["v1", "clients"]:
        return reply(200, {"clients": [{"client": n, "pending": len(c["queue"]), "displayed": c["displayed"]}
                                       for n, c in S.clients.items()]})
    if len(parts) < 4 or parts[:2] != ["v1", "clients"] or parts[3] != "alerts":
        return reply(404, {"code": "not-found"})
    name = parts[2]
    if len(parts) == 4 and method == "POST":
        return reply(201, S.create(name, json.loads(body or b"{}")))
    if len(parts) == 5 and parts[4] == "current" and method == "GET":
        after = q.get("after", "none")
        c = S.client(name)
        if wait and (c["displayed"] or "none") == after:
            await park(S.current_waiters, name, wait)
        d = S.client(name)["displayed"]
        return reply(200, S.alerts[d]) if d else reply(204)
    aid = parts[4]
    a = S.alerts.get(aid)
    if a is None or a["client"] != name:
        return reply(404, {"code": "not-found"})
    if len(parts) == 5 and method == "GET":
        if wait and a["state"] not in TERMINAL:
            await park(S.alert_waiters, aid, wait)
        return reply(200, a)
    if len(parts) == 5 and method == "DELETE":
        if a["state"] not in TERMINAL:
            S.finish(aid, "withdrawn")
        return reply(200, a)
    if len(parts) == 6 and parts[5] == "choice" and method == "POST":
        idx = json.loads(body or b"{}").get("button_index")
        if a["state"] != "displayed":
            return reply(409, {"code": "not-displayed" if a["state"] == "queued" else "already-decided"})
        if idx is None or not 0 <= idx < len(a["buttons"]):
            return reply(422, {"code": "unknown-button"})
        S.finish(aid, "answered", idx)
        return reply(200, a)
    return reply(404, {"code": "not-found"})


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            length = 0
            close = False
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v)
                elif k.strip().lower() == "connection" and v.strip().lower() == "close":
                    close = True
            body = await reader.readexactly(length) if length else b""
            writer.write(await route(method, target, body))
            await writer.drain()
            if close:
                break
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--listen", default="127.0.0.1:8080")
    ap.add_argument("--state-dir", default="./alertd-state")
    args = ap.parse_args()
    host, _, port = args.listen.rpartition(":")
    os.makedirs(args.state_dir, exist_ok=True)
    path = os.path.join(args.state_dir, "state.json")
    if os.path.exists(path):
        with open(path) as f:
            d = json.load(f)
        S.alerts, S.clients, S.seq = d["alerts"], d["clients"], d["seq"]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await asyncio.start_server(handle, host, int(port), backlog=4096)
    print(f"mock_alertd listening on {args.listen}", file=sys.stderr, flush=True)
    await stop.wait()
    server.close()
    with open(path + ".tmp", "w") as f:
        json.dump({"alerts": S.alerts, "clients": S.clients, "seq": S.seq}, f)
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    asyncio.run(main())
