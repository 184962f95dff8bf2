#!/usr/bin/env python3
"""standin_alertd.py: a stand-in for alertd with callback delivery, only to test
the bench/callbacks tools themselves. Its figures say nothing about alertd.

    ALERTD=bench/callbacks/standin_alertd.py bench/callbacks/latency.py ...

Python 3 stdlib. Flags as alertd's: --config PATH --listen HOST:PORT --state-dir DIR.
From the config it reads only `callbacks.signing_secret` and the `webhooks:` list,
in the exact layout the bench tools write (one key per line).

Implements: POST /v1/clients/{c}/alerts (fifo queue per client, first one
displayed), POST /v1/clients/{c}/alerts/{id}/choice ({"button": ...}; 409 unless
displayed), POST /v1/clients/{c}/webhooks, GET /healthz, GET /readyz. A choice
makes an alert.answered event, POSTed to the alert's callback_url and each webhook
of its client, signed the Standard Webhooks way, by --workers threads per target
over keep-alive connections (so a slow target does not hold up a fast one). A
non-2xx answer or an error is retried after 1 s. On SIGTERM the undelivered
deliveries (in-flight ones included: at least once) go to state_dir/pending.json
and are delivered again after the next start; nothing else survives a restart.
"""
import argparse
import base64
import hashlib
import hmac
import http.client
import json
import os
import queue
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id():
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(CROCKFORD[(n >> (5 * i)) & 31] for i in reversed(range(26)))


def now_iso():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def secret_key(secret):
    return base64.b64decode(secret[6:]) if secret.startswith("whsec_") else secret.encode()


def parse_config(path):
    """signing_secret and the webhooks list, from the layout the bench writes."""
    signing, hooks, cur, timeout = None, [], None, 10.0
    if not path or not os.path.exists(path):
        return signing, hooks, timeout
    with open(path) as f:
        for line in f:
            s = line.rstrip()
            m = re.match(r'^\s*signing_secret:\s*"?([^"]*)"?\s*$', s)
            if m:
                signing = m.group(1)
                continue
            m = re.match(r'^\s*timeout:\s*([0-9.]+)\s*$', s)
            if m:
                timeout = float(m.group(1))
                continue
            m = re.match(r'^\s*-\s*client:\s*"?([^"\s]+)"?\s*$', s)
            if m:
                cur = {"client": m.group(1)}
                hooks.append(cur)
                continue
            m = re.match(r'^\s*(url|secret):\s*"([^"]*)"\s*$', s)
            if m and cur is not None:
                cur[m.group(1)] = m.group(2)
    return signing, hooks, timeout


class Target:
    """A queue and worker threads for one URL."""

    def __init__(self, app, url, workers):
        self.app, self.url = app, url
        self.q = queue.Queue()
        u = urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.path = (u.path or "/") + (("?" + u.query) if u.query else "")
        for _ in range(workers):
            threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        conn = None
        while True:
            key = self.q.get()
            d = self.app.pending.get(key)
            if d is None:
                continue
            ts = str(int(time.time()))
            msg = f"{d['event_id']}.{ts}.".encode() + d["body"].encode()
            sig = "v1," + base64.b64encode(hmac.new(secret_key(d["secret"]), msg, hashlib.sha256).digest()).decode()
            headers = {"Content-Type": "application/json", "webhook-id": d["event_id"],
                       "webhook-timestamp": ts, "webhook-signature": sig}
            ok = False
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(self.host, self.port, timeout=self.app.timeout)
                conn.request("POST", self.path, body=d["body"].encode(), headers=headers)
                resp = conn.getresponse()
                resp.read()
                ok = 200 <= resp.status < 300
                if resp.getheader("connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
            if ok:
                self.app.pending.pop(key, None)
                self.app.delivered += 1
            else:
                threading.Timer(1.0, self.q.put, (key,)).start()


class App:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.signing, cfg_hooks, self.timeout = parse_config(args.config)
        self.webhooks = {}  # client -> [ {id,url,secret} ]
        for h in cfg_hooks:
            self.webhooks.setdefault(h["client"], []).append(
                {"id": "cfg-" + hashlib.sha256((h["client"] + h["url"]).encode()).hexdigest()[:16],
                 "url": h["url"], "secret": h.get("secret", "")})
        self.queues = {}    # client -> [alert dicts], [0] displayed
        self.alerts = {}    # id -> alert
        self.pending = {}   # key -> delivery dict (thread-safe enough: single dict ops under the GIL)
        self.targets = {}
        self.delivered = 0
        self.events = 0
        self.seq = 0
        self.stopping = False
        self.state_file = os.path.join(args.state_dir, "pending.json")
        os.makedirs(args.state_dir, exist_ok=True)
        if os.path.exists(self.state_file):
            with open(self.state_file) as f:
                saved = json.load(f)
            os.unlink(self.state_file)
            for key, d in saved.items():
                self.pending[key] = d
            for key, d in saved.items():
                self.target(d["url"]).q.put(key)
            print(f"standin: resumed {len(saved)} pending deliveries", file=sys.stderr, flush=True)

    def target(self, url):
        with self.lock:
            t = self.targets.get(url)
            if t is None:
                t = self.targets[url] = Target(self, url, self.args.workers)
            return t

    def deliver(self, alert):
        event_id = "msg_" + new_id()
        body = json.dumps({"type": "alert.answered", "timestamp": now_iso(), "data": {"alert": alert}},
                          separators=(",", ":"))
        targets = []
        if alert.get("callback_url"):
            targets.append((alert["callback_url"], self.signing))
        for h in self.webhooks.get(alert["client"], []):
            targets.append((h["url"], h["secret"]))
        with self.lock:
            self.events += 1
            n = self.events
        a = self.args
        if a.drop_every and n % a.drop_every == 0:
            return
        copies = 2 if a.dup_every and n % a.dup_every == 0 else 1
        for url, secret in targets * copies:
            with self.lock:
                self.seq += 1
                key = f"d{self.seq}-{os.getpid()}"
            self.pending[key] = {"url": url, "secret": secret, "event_id": event_id, "body": body}
            if a.delay_ms:
                threading.Timer(a.delay_ms / 1000, self.target(url).q.put, (key,)).start()
            else:
                self.target(url).q.put(key)

    def shutdown(self, *_):
        self.stopping = True
        with open(self.state_file + ".tmp", "w") as f:
            json.dump(dict(self.pending), f)
        os.replace(self.state_file + ".tmp", self.state_file)
        print(f"standin: stopping, {len(self.pending)} deliveries pending, {self.delivered} delivered",
              file=sys.stderr, flush=True)
        os._exit(0)


APP = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def send(self, status, obj=None):
        body = b"" if obj is None else json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path in ("/healthz", "/readyz"):
            return self.send(503 if APP.stopping else 200, {"status": "ok"})
        self.send(404, {"code": "not-found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            return self.send(400, {"code": "bad-request"})
        parts = self.path.split("?")[0].strip("/").split("/")
        if len(parts) == 4 and parts[:2] == ["v1", "clients"] and parts[3] == "alerts":
            client = parts[2]
            if body.get("callback_url") and not APP.signing:
                return self.send(400, {"code": "invalid-alert"})
            with APP.lock:
                q = APP.queues.setdefault(client, [])
                alert = {"id": new_id(), "client": client, "state": "displayed" if not q else "queued",
                         "position": len(q), "title": body.get("title", ""), "buttons": body.get("buttons", []),
                         "callback_url": body.get("callback_url"), "metadata": body.get("metadata"),
                         "created_at": now_iso(), "result": None}
                q.append(alert)
                APP.alerts[alert["id"]] = alert
            return self.send(201, alert)
        if len(parts) == 6 and parts[:2] == ["v1", "clients"] and parts[3] == "alerts" and parts[5] == "choice":
            client, aid = parts[2], parts[4]
            with APP.lock:
                q = APP.queues.get(client, [])
                a = APP.alerts.get(aid)
                if a is None or a["client"] != client:
                    return self.send(404, {"code": "not-found"})
                if a["state"] == "answered":
                    return self.send(409, {"code": "already-decided"})
                if not q or q[0]["id"] != aid:
                    return self.send(409, {"code": "not-displayed"})
                q.pop(0)
                if q:
                    q[0]["state"] = "displayed"
                a["state"] = "answered"
                a["decided_at"] = now_iso()
                a["result"] = {"outcome": "answered", "button": body.get("button"), "button_index": 0,
                               "cancelled": False, "decided_by": None}
                del APP.alerts[aid]
                snapshot = dict(a)
            APP.deliver(snapshot)
            return self.send(200, snapshot)
        if len(parts) == 4 and parts[:2] == ["v1", "clients"] and parts[3] == "webhooks":
            secret = body.get("secret") or "whsec_" + base64.b64encode(os.urandom(32)).decode()
            h = {"id": new_id(), "url": body["url"], "secret": secret}
            with APP.lock:
                APP.webhooks.setdefault(parts[2], []).append(h)
            return self.send(201, h)
        self.send(404, {"code": "not-found"})


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config")
    ap.add_argument("--listen", default="127.0.0.1:8080")
    ap.add_argument("--state-dir", default="./alertd-state")
    ap.add_argument("--workers", type=int, default=16, help="delivery threads per target")
    # Faults, to test the bench's join logic (env STANDIN_FAULTS="delay_ms=3,drop_every=100,dup_every=50").
    args = ap.parse_args()
    faults = dict(kv.split("=") for kv in os.environ.get("STANDIN_FAULTS", "").split(",") if kv)
    args.delay_ms = float(faults.get("delay_ms", 0))
    args.drop_every = int(faults.get("drop_every", 0))
    args.dup_every = int(faults.get("dup_every", 0))
    return args


def main():
    global APP
    args = parse_args()
    APP = App(args)
    host, port = args.listen.rsplit(":", 1)
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    srv.request_queue_size = 1024
    signal.signal(signal.SIGTERM, APP.shutdown)
    signal.signal(signal.SIGINT, APP.shutdown)
    print(f"standin: listening on {args.listen}", file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
