#!/usr/bin/env python3
"""Wire-level fuzzing of the real alertd binary over real sockets (Python stdlib only).

    python3 fuzz/wire/wirefuzz.py --binary PATH [--seconds 600] [--workers 6] [--seed N]

It starts alertd on 127.0.0.1 with a temporary state directory and, for the given
time, sends random and mutated HTTP/1.1 requests: any method, path, query and
header; chunked bodies with good and bad chunk sizes; conflicting, huge, negative
and zero lengths; pipelined requests in one write; requests cut short, with the
write side closed or left open; oversized heads and bodies; bytes that are not
HTTP. Meanwhile:

- a checker sends well-formed requests on its own clients and holds every answer to
  the spec (status, problem code, the alert it names); every alert answered 201 is
  an acknowledged alert;
- a canary asks GET /healthz on a fresh connection every second: the daemon must
  answer within 10 s (a hang otherwise);
- every answer to fuzzed bytes must be a well-framed HTTP/1.x response and never
  500 (alertd's "internal": a bug); a connection left to the server must be
  answered or closed within the read timeout (plus slack);
- the daemon must not exit.

Halfway it is killed with SIGKILL and started again on the same state; at the end it
is killed again, restarted, every acknowledged alert (the checker's and any 201 a
fuzzed request got) must be there with its title, a fixed sequence of well-formed
requests must be answered correctly, and SIGTERM must end it with exit status 0.
Findings are printed with the bytes that preceded them (saved under --out).
Exit status: 0 when nothing was found, 1 otherwise.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

READ_TIMEOUT = 2  # limits.read_timeout_seconds given to the daemon
MAX_WAIT = 2  # limits.max_wait_seconds: a long-poll parks at most this long
SLACK = 20  # a loaded 2-core machine (and an ASan build) answers late, not never


class Findings:
    def __init__(self, out):
        self.out = out
        self.lock = threading.Lock()
        self.items = []

    def add(self, kind, detail, data=b""):
        with self.lock:
            n = len(self.items)
            self.items.append((kind, detail))
            path = os.path.join(self.out, "finding-%03d-%s.bin" % (n, kind))
            with open(path, "wb") as f:
                f.write(data)
            print("FINDING %s: %s (input: %s)" % (kind, detail, path), flush=True)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}

    def bump(self, key, n=1):
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n


class Daemon:
    def __init__(self, binary, state, port, log_dir, env):
        self.binary, self.state, self.port, self.log_dir, self.env = binary, state, port, log_dir, env
        self.proc = None
        self.starts = 0
        self.config = os.path.join(os.path.dirname(state), "alertd.yaml")
        with open(self.config, "w") as f:
            f.write(
                'listen: "127.0.0.1:%d"\nstate_dir: "%s"\ndurability: full\n'
                "limits: { max_wait_seconds: %d, read_timeout_seconds: %d, max_connections_per_ip: 4096 }\n"
                "alerts: { default_expires_in: 600 }\nlog: { level: warning }\n" % (port, state, MAX_WAIT, READ_TIMEOUT)
            )

    def start(self):
        self.starts += 1
        log = open(os.path.join(self.log_dir, "alertd-%d.log" % self.starts), "wb")
        self.proc = subprocess.Popen([self.binary, "--config", self.config], stdout=log, stderr=log, env=self.env)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit("alertd exited at start with %s; see %s" % (self.proc.returncode, log.name))
            try:
                if request("GET", "/healthz", self.port, timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("alertd did not answer /healthz within 120 s")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


# ---------------------------------------------------------------- HTTP, by hand


def parse_responses(data):
    """Splits bytes into responses: [(status, headers, body)]; raises ValueError on bad framing.
    A trailing incomplete response is ignored (the connection may have been cut)."""
    out = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        head = data[:end].decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise ValueError("bad status line %r" % lines[0][:80])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise ValueError("bad header line %r" % line[:80])
            headers[name.strip().lower()] = value.strip()
        rest = data[end + 4 :]
        if "transfer-encoding" in headers:
            raise ValueError("chunked response (alertd sends lengths)")
        length = int(headers.get("content-length", "0"))
        if len(rest) < length:
            break
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


def request(method, path, port, body=None, headers=None, timeout=10):
    """One well-formed request on a fresh connection: (status, headers, body bytes)."""
    body_bytes = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1:%d" % port, "Connection: close"]
    if body is not None:
        lines += ["Content-Type: application/json", "Content-Length: %d" % len(body_bytes)]
    for name, value in (headers or {}).items():
        lines.append("%s: %s" % (name, value))
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode() + body_bytes
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(raw)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    responses = parse_responses(data)
    if not responses:
        raise OSError("no response to %s %s" % (method, path))
    return responses[0]


# ---------------------------------------------------------------- well-formed traffic

WORDS = ["Deploy", "Restart", "Roll back", "Cancel", "Später", "✓ ok", "🚀", "a" * 64, "x"]


def random_alert(rng, title):
    alert = {"title": title}
    if rng.random() < 0.5:
        alert["message"] = rng.choice(["", "12 commits", "é" * rng.randint(0, 200)])
    if rng.random() < 0.5:
        buttons = rng.sample(WORDS, rng.randint(1, 4))
        alert["buttons"] = [{"title": b} for b in buttons]
        if rng.random() < 0.5:
            alert["buttons"][-1]["style"] = "cancel"
    alert["priority"] = rng.randint(-100, 100)
    alert["expires_in"] = rng.choice([5, 30, 120.5])
    if rng.random() < 0.3:
        alert["metadata"] = {"n": rng.randint(0, 10**6), "nested": {"list": [1, "two", None, True]}}
    if rng.random() < 0.2:
        alert["style"] = "action_sheet"
    return alert


def expect(cond, findings, what, data=b""):
    if not cond:
        findings.add("wrong-answer", what, data)


def checker(port, rng, stop, acked, findings, stats):
    """Well-formed requests on clients no fuzzed request names, each answer checked."""
    client = "chk-%08x" % rng.getrandbits(32)
    while not stop.is_set():
        try:
            title = "check %d" % rng.getrandbits(40)
            alert = random_alert(rng, title)
            key = None
            if rng.random() < 0.3:
                key = "k-%d" % rng.getrandbits(16)
            status, headers, body = request("POST", "/v1/clients/%s/alerts" % client, port, alert,
                                            {"Idempotency-Key": key} if key else None)
            stats.bump("checker")
            if status in (200, 201):
                doc = json.loads(body)
                if status == 201:
                    expect(doc.get("title") == title and doc.get("client") == client, findings, "201 for another alert", body)
                    expect(headers.get("location") == "/v1/clients/%s/alerts/%s" % (client, doc.get("id")), findings,
                           "Location %r" % headers.get("location"), body)
                    acked.append((client, doc["id"], title))
                else:
                    expect(key is not None, findings, "200 to a post without Idempotency-Key", body)
            elif status == 422 and key:
                expect(json.loads(body).get("code") == "idempotency-mismatch", findings, "422 %r" % body[:200], body)
                continue
            else:
                findings.add("wrong-answer", "POST alert: %d %r" % (status, body[:300]), json.dumps(alert).encode())
                continue
            doc = json.loads(body)
            ident = doc["id"]
            status, _, body = request("GET", "/v1/clients/%s/alerts/%s" % (client, ident), port)
            expect(status == 200 and json.loads(body)["id"] == ident, findings, "GET own alert: %d" % status, body)
            status, _, body = request("GET", "/v1/clients/%s/alerts/current" % client, port)
            expect(status in (200, 204), findings, "current: %d" % status, body)
            if status == 200:
                shown = json.loads(body)
                expect(shown["state"] == "displayed", findings, "current not displayed", body)
                if shown["buttons"]:
                    status, _, body = request("POST", "/v1/clients/%s/alerts/%s/choice" % (client, shown["id"]), port,
                                              {"button_index": 0})
                    # 409: a deadline (expiry) may have decided it in between.
                    expect(status in (200, 409), findings, "choice: %d %r" % (status, body[:200]), body)
                    if status == 200:
                        expect(json.loads(body)["result"]["button_index"] == 0, findings, "choice result", body)
            status, _, body = request("GET", "/v1/clients/%s/alerts?limit=5&state=queued,displayed" % client, port)
            expect(status == 200 and "alerts" in json.loads(body), findings, "list: %d" % status, body)
            status, _, body = request("GET", "/v1/clients/%s/alerts/%s" % (client, "0" * 26), port)
            expect(status == 404 and json.loads(body)["code"] == "not-found", findings, "unknown id: %d" % status, body)
            status, _, body = request("PUT", "/v1/clients/%s/alerts" % client, port, b"{}")
            expect(status == 405 and json.loads(body)["code"] == "method-not-allowed", findings, "PUT: %d" % status, body)
        except (OSError, ValueError, KeyError, TypeError) as error:
            if not stop.is_set():
                findings.add("checker-failed", repr(error))
                time.sleep(1)


def canary(port, stop, findings, stats, proc_ref):
    while not stop.is_set():
        started = time.time()
        try:
            status = request("GET", "/healthz", port, timeout=10)[0]
            expect(status == 200, findings, "/healthz %d" % status)
        except OSError as error:
            if not stop.is_set() and proc_ref().poll() is None:
                findings.add("hang", "/healthz not answered within 10 s: %r" % error)
        stats.bump("canary")
        stop.wait(max(0.0, 1.0 - (time.time() - started)))


# ---------------------------------------------------------------- fuzzed traffic

METHODS = ["GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS", "TRACE", "CONNECT", "get", "G\x00T", "", "X" * 300]
PATHS = [
    "/healthz", "/readyz", "/metrics", "/", "/ui/dashboard.js", "/ui/../../etc/passwd", "/v1/whoami", "/v1/clients",
    "/v1/clients/fz{c}/alerts", "/v1/clients/fz{c}/alerts/current?wait=1&after=", "/v1/clients/fz{c}/alerts/{id}",
    "/v1/clients/fz{c}/alerts/{id}/choice", "/v1/clients/fz{c}/alerts/{id}/deliveries", "/v1/clients/fz{c}/webhooks",
    "/v1/clients/fz{c}/alerts?state=queued,bogus&limit=0", "/v1/clients/fz{c}/alerts?cursor=p.1.{id}&limit=1000",
    "/v1/clients/%2e%2e/alerts", "/v1/clients/fz{c}%00/alerts", "/v1//clients", "*", "http://127.0.0.1/healthz",
    "/v1/clients/" + "a" * 70 + "/alerts", "/" + "x/" * 400, "/v1/clients/fz{c}/alerts/current?wait=99999999999999999999999",
    "/v1/clients/fz{c}/alerts?%zz=%", "/v1/clients/fz{c}/alerts/current?wait=1&wait=2", "/\xff\xfe", "/v1/clients/é/alerts",
]
VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "http/1.1", "HTTP/1.1 ", "", "HTTP/11"]
EXTRA_HEADERS = [
    "Connection: close", "Connection: keep-alive", "Expect: 100-continue", "Expect: nonsense", "Transfer-Encoding: chunked",
    "Transfer-Encoding: gzip, chunked", "Transfer-Encoding: chunked, identity", "Content-Length: 0", "Content-Length: -1",
    "Content-Length: 99999999999999999999", "Content-Length: 1e3", "Content-Length: +5", "Content-Length: 5, 5",
    "Content-Length: 70000", "Content-Type: application/json; charset=utf-8", "Content-Type: text/plain",
    "Idempotency-Key: k", "Idempotency-Key: " + "k" * 300, "Authorization: Bearer x", "Authorization: Basic Zm9vOmJhcg==",
    "Origin: http://evil.example", "Origin: null", "Host: evil.example", "Host: [::1", "Host: 127.0.0.1:99999",
    "X-Request-Id: " + "r" * 200, "X-Request-Id: \x01\x02", " folded: continuation", "NoColon", ": empty-name",
    "If-None-Match: *", "Accept: */*", "Range: bytes=0-1", "Upgrade: h2c", "Content-Encoding: gzip",
]


def fuzz_body(rng):
    choice = rng.random()
    if choice < 0.3:
        return json.dumps(random_alert(rng, "fuzz %d" % rng.getrandbits(20))).encode()
    if choice < 0.45:
        return json.dumps({rng.choice(["button", "button_index", "url", "secret"]): rng.choice([0, -1, "Deploy", None, [], 1e308])}).encode()
    if choice < 0.55:
        return b"[" * rng.randint(1, 5000) + b"]" * rng.randint(0, 5000)
    if choice < 0.65:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300)))
    if choice < 0.7:
        return b"{" + b'"a":1,' * rng.randint(1, 12000) + b'"b":2}'  # over 64 KiB at times
    return b""


def chunked(rng, body):
    out = b""
    pos = 0
    while pos < len(body):
        n = rng.randint(1, max(1, len(body) - pos))
        size = b"%x" % n
        r = rng.random()
        if r < 0.05:
            size = rng.choice([b"ffffffffffffffffff", b"-1", b"g", b"", b" 5", b"5;ext=1", b"0x5", b"7fffffffffffffff"])
        out += size + b"\r\n" + body[pos : pos + n] + (b"\r\n" if rng.random() > 0.03 else b"\n")
        pos += n
    out += rng.choice([b"0\r\n\r\n", b"0\r\nX-Trailer: 1\r\n\r\n", b"0\r\n", b"", b"00000\r\n\r\n", b"1\r\n"])
    return out


def one_request(rng, ids):
    method = rng.choice(METHODS[:4]) if rng.random() < 0.7 else rng.choice(METHODS)
    path = rng.choice(PATHS).replace("{c}", str(rng.randint(0, 63))).replace("{id}", rng.choice(ids) if ids else "0" * 26)
    if rng.random() < 0.1:
        path += "?" + "&".join("%s=%s" % (rng.choice(["wait", "limit", "after", "cursor", "state", "x", ""]),
                                          rng.choice(["", "1", "-1", "1000", "t", "%00", "a" * 40]))
                               for _ in range(rng.randint(1, 5)))
    version = rng.choice(VERSIONS[:1]) if rng.random() < 0.8 else rng.choice(VERSIONS)
    headers = ["Host: 127.0.0.1"] if rng.random() < 0.9 else []
    body = fuzz_body(rng) if method in ("POST", "PUT", "PATCH") or rng.random() < 0.1 else b""
    use_chunked = rng.random() < 0.2
    if body or rng.random() < 0.2:
        headers.append("Content-Type: application/json")
    if use_chunked:
        headers.append("Transfer-Encoding: chunked")
        body = chunked(rng, body)
    elif rng.random() < 0.9:
        headers.append("Content-Length: %d" % (len(body) if rng.random() < 0.85 else rng.choice([0, len(body) + 1, max(0, len(body) - 1), 65537, 10**12])))
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        headers.append(rng.choice(EXTRA_HEADERS))
    if rng.random() < 0.02:
        headers += ["X-Many-%d: %s" % (i, "v" * rng.randint(0, 60)) for i in range(rng.randint(50, 400))]
    if rng.random() < 0.02:
        headers.append("X-Big: " + "b" * rng.choice([6000, 7700, 8200, 20000]))
    rng.shuffle(headers)
    eol = "\r\n" if rng.random() < 0.95 else rng.choice(["\n", "\r", "\r\r\n"])
    head = ("%s %s %s" % (method, path, version)).rstrip() + eol + eol.join(headers) + eol + eol
    return head.encode("utf-8", "surrogateescape"), body


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.choice([0, 0, 1, 1, 2, 4, 8])):
        if not data:
            break
        op = rng.random()
        i = rng.randrange(len(data))
        if op < 0.3:
            data[i] = rng.getrandbits(8)
        elif op < 0.5:
            del data[i : i + rng.randint(1, 16)]
        elif op < 0.7:
            data[i:i] = rng.choice([b"\r\n", b"\x00", b" ", b":", b"%", b"\xff", b"0", b"\r\n\r\n", bytes([rng.getrandbits(8)])])
        elif op < 0.85:
            j = rng.randrange(len(data))
            data[i:i] = data[j : j + rng.randint(1, 64)]
        else:
            data[i : i + 1] = data[i : i + 1] * rng.randint(2, 2000)
    return bytes(data)


def fuzz_worker(port, rng, stop, ids, acked, findings, stats, out):
    while not stop.is_set():
        # One connection: 1–20 requests (pipelined when more than one), maybe mutated, maybe cut.
        parts = []
        for _ in range(1 if rng.random() < 0.6 else rng.randint(2, 20)):
            head, body = one_request(rng, ids)
            parts.append(head + body)
        data = b"".join(parts)
        if rng.random() < 0.5:
            data = mutate(rng, data)
        if rng.random() < 0.03:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 2000)))
        truncated = rng.random() < 0.15
        if truncated and data:
            data = data[: rng.randrange(len(data))]
        half_close = rng.random() < 0.5
        wait_for_server = rng.random() < 0.1  # wait until the server itself closes
        stats.bump("connections")
        stats.bump("requests", len(parts))
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
        except OSError as error:
            findings.add("connect-failed", repr(error))
            time.sleep(1)
            continue
        received = b""
        started = time.time()
        try:
            with s:
                pos = 0
                while pos < len(data):  # in pieces, sometimes slowly
                    n = rng.choice([len(data), len(data), rng.randint(1, 200)])
                    s.sendall(data[pos : pos + n])
                    pos += n
                    if n < len(data) and rng.random() < 0.05:
                        time.sleep(0.05)
                if half_close:
                    s.shutdown(socket.SHUT_WR)
                s.settimeout(READ_TIMEOUT + MAX_WAIT + SLACK if wait_for_server or half_close else 0.3)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    received += chunk
        except socket.timeout:
            if (wait_for_server or half_close) and time.time() - started > READ_TIMEOUT + MAX_WAIT + SLACK - 1:
                findings.add("connection-hang", "no answer and no close in %d s" % (time.time() - started), data)
        except (ConnectionResetError, BrokenPipeError):
            stats.bump("reset")
        except OSError as error:
            stats.bump("oserror:" + type(error).__name__)
        try:
            responses = parse_responses(received)
        except ValueError as error:
            # An answer to HEAD has a Content-Length and no body: the next answer's bytes
            # cannot be told from a body without knowing which request was HEAD.
            if b"HEAD" not in data:
                findings.add("bad-framing", str(error), data + b"\n=====RESPONSE=====\n" + received)
            continue
        stats.bump("responses", len(responses))
        for status, headers, body in responses:
            stats.bump("status %d" % status)
            if status == 500:
                findings.add("server-error", "status %d: %r" % (status, body[:300]), data + b"\n=====RESPONSE=====\n" + received)
            if status == 201 and headers.get("content-type", "").startswith("application/json"):
                try:
                    doc = json.loads(body)
                    acked.append((doc["client"], doc["id"], doc["title"]))
                    if len(ids) < 500:
                        ids.append(doc["id"])
                except (ValueError, KeyError):
                    findings.add("bad-201", repr(body[:300]), data)


# ---------------------------------------------------------------- the run


def verify(port, acked, findings):
    """Every acknowledged alert is there, then a fixed well-formed sequence."""
    missing = 0
    for client, ident, title in list(acked):
        status, _, body = request("GET", "/v1/clients/%s/alerts/%s" % (client, ident), port)
        if status != 200 or json.loads(body)["title"] != title:
            missing += 1
            findings.add("lost-alert", "%s/%s: %d %r" % (client, ident, status, body[:200]))
    status, headers, body = request("POST", "/v1/clients/final/alerts", port,
                                    {"title": "After the storm", "buttons": [{"title": "OK"}, {"title": "No", "style": "cancel"}]})
    expect(status == 201, findings, "final post %d" % status, body)
    ident = json.loads(body)["id"]
    status, _, body = request("GET", "/v1/clients/final/alerts/current", port)
    expect(status == 200 and json.loads(body)["id"] == ident, findings, "final current", body)
    status, _, body = request("POST", "/v1/clients/final/alerts/%s/choice" % ident, port, {"button": "No"})
    expect(status == 200 and json.loads(body)["result"]["cancelled"] is True, findings, "final choice", body)
    status, _, body = request("GET", "/v1/clients/final/alerts/current", port)
    expect(status == 204, findings, "final current after the choice %d" % status, body)
    status, _, body = request("POST", "/v1/clients/final/alerts", port, b'{"title": 1}')
    expect(status == 400 and json.loads(body)["code"] == "invalid-alert", findings, "final invalid", body)
    status, _, body = request("GET", "/readyz", port)
    expect(status == 200, findings, "final readyz %d" % status, body)
    return missing


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.environ.get("ALERTD_BIN"), required=os.environ.get("ALERTD_BIN") is None)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default=None, help="where findings and logs go (default: a new temp directory)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().getrandbits(32)
    out = args.out or tempfile.mkdtemp(prefix="wirefuzz-")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="wirefuzz-state-")
    state = os.path.join(work, "state")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    # A sanitizer build writes its reports here (one file per process), not only to stderr.
    for name in ("ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"):
        env[name] = (env.get(name, "") + ":log_path=%s/sanitizer" % out).lstrip(":")
    print("wirefuzz: seed %d, %d workers, %.0f s, port %d, out %s" % (seed, args.workers, args.seconds, port, out), flush=True)

    findings, stats = Findings(out), Stats()
    daemon = Daemon(args.binary, state, port, out, env)
    daemon.start()
    acked, ids = [], []
    started = time.time()
    for phase in (1, 2):
        stop = threading.Event()
        threads = [threading.Thread(target=canary, args=(port, stop, findings, stats, lambda: daemon.proc), daemon=True)]
        threads.append(threading.Thread(target=checker, args=(port, random.Random(seed * 7 + phase), stop, acked, findings, stats), daemon=True))
        for i in range(args.workers):
            rng = random.Random(seed * 1000 + phase * 100 + i)
            threads.append(threading.Thread(target=fuzz_worker, args=(port, rng, stop, ids, acked, findings, stats, out), daemon=True))
        for t in threads:
            t.start()
        phase_end = started + args.seconds * phase / 2
        while time.time() < phase_end and daemon.proc.poll() is None:
            time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=READ_TIMEOUT + MAX_WAIT + SLACK + 15)
        if daemon.proc.poll() is not None:
            findings.add("crash", "alertd exited with %s during phase %d" % (daemon.proc.returncode, phase))
            daemon.start()
        # Kill it where it stands, start it again on the same state: nothing acknowledged may be lost.
        daemon.kill()
        daemon.start()
        print("wirefuzz: phase %d done after %.0f s; %d acknowledged alerts" % (phase, time.time() - started, len(acked)), flush=True)

    missing = verify(port, acked, findings)
    status = daemon.terminate()
    if status != 0:
        findings.add("exit-status", "alertd exited %d on SIGTERM" % status)
    reports = [name for name in os.listdir(out) if name.startswith("sanitizer")]
    for name in reports:
        with open(os.path.join(out, name), "rb") as f:
            findings.add("sanitizer", name, f.read())

    c = stats.counts
    print("wirefuzz: %.0f s, seed %d: %d connections, %d requests sent (%d pipelined or mutated), %d responses, %d checker rounds, "
          "%d canaries; %d acknowledged alerts, %d missing after 2 kills; statuses %s; %d findings" % (
              time.time() - started, seed, c.get("connections", 0), c.get("requests", 0), c.get("requests", 0) - c.get("connections", 0),
              c.get("responses", 0), c.get("checker", 0), c.get("canary", 0), len(acked), missing,
              {k[7:]: v for k, v in sorted(c.items()) if k.startswith("status ")}, len(findings.items)), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if findings.items else 0


if __name__ == "__main__":
    sys.exit(main())
