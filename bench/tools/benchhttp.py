"""benchhttp.py: the small HTTP/1.1 client pieces shared by waiters.py and pending.py.

Python 3 standard library only. Not a general HTTP client: it speaks just
enough HTTP/1.1 (keep-alive, Content-Length and chunked bodies, pipelining)
to drive alertd and the libmicrohttpd baseline on 127.0.0.1.
"""
import json
import math
import os
import resource
import socket
import sys
import time


def build_request(method, path, host, body=None, content_type="application/json", extra=None):
    """Bytes of one keep-alive request."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    if body is not None:
        if isinstance(body, str):
            body = body.encode()
        lines.append(f"Content-Type: {content_type}")
        lines.append(f"Content-Length: {len(body)}")
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {v}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    return head + (body or b"")


class ResponseParser:
    """Incremental parser: feed() bytes, get back the responses completed so far
    as (status, headers{lowercase: value}, body bytes). Assumes no HEAD requests."""

    __slots__ = ("buf", "_head", "_need", "_chunked", "_chunks")

    def __init__(self):
        self.buf = b""
        self._head = None      # (status, headers) of the response being read
        self._need = 0
        self._chunked = False
        self._chunks = []

    def feed(self, data):
        self.buf += data
        out = []
        while True:
            if self._head is None:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return out
                lines = self.buf[:end].decode("latin-1").split("\r\n")
                self.buf = self.buf[end + 4:]
                parts = lines[0].split(" ", 2)
                if len(parts) < 2 or not parts[0].startswith("HTTP/"):
                    raise ValueError(f"bad status line: {lines[0]!r}")
                status = int(parts[1])
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                self._head = (status, headers)
                self._chunks = []
                if status < 200 or status in (204, 304):
                    self._chunked, self._need = False, 0
                elif "chunked" in headers.get("transfer-encoding", "").lower():
                    self._chunked, self._need = True, -1
                else:
                    self._chunked = False
                    self._need = int(headers.get("content-length", "0"))
            if self._chunked:
                # _need == -1: expecting a chunk-size line; -2: in the trailer
                # section after the last chunk; >= 0: chunk data + CRLF
                if self._need == -2:
                    end = self.buf.find(b"\r\n")
                    if end < 0:
                        return out
                    self.buf = self.buf[end + 2:]
                    if end == 0:  # empty line: end of message
                        status, headers = self._head
                        out.append((status, headers, b"".join(self._chunks)))
                        self._head = None
                    continue
                if self._need == -1:
                    end = self.buf.find(b"\r\n")
                    if end < 0:
                        return out
                    size = int(self.buf[:end].split(b";")[0], 16)
                    self.buf = self.buf[end + 2:]
                    self._need = -2 if size == 0 else size
                    continue
                if len(self.buf) < self._need + 2:
                    return out
                self._chunks.append(self.buf[:self._need])
                self.buf = self.buf[self._need + 2:]
                self._need = -1
                continue
            if len(self.buf) < self._need:
                return out
            body, self.buf = self.buf[:self._need], self.buf[self._need:]
            status, headers = self._head
            out.append((status, headers, body))
            self._head = None


class Conn:
    """A blocking keep-alive connection for sequential requests."""

    def __init__(self, host, port, timeout=10.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock = None
        self.parser = None

    def _connect(self):
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.parser = ResponseParser()

    def request(self, method, path, body=None, extra=None):
        """Returns (status, headers, body). Reconnects once if the server closed."""
        for attempt in (0, 1):
            if self.sock is None:
                self._connect()
            try:
                self.sock.sendall(build_request(method, path, f"{self.host}:{self.port}", body, extra=extra))
                deadline = time.monotonic() + self.timeout
                while time.monotonic() < deadline:
                    data = self.sock.recv(65536)
                    if not data:
                        raise ConnectionError("closed by server")
                    got = self.parser.feed(data)
                    if got:
                        status, headers, rbody = got[0]
                        if headers.get("connection", "").lower() == "close":
                            self.close()
                        return status, headers, rbody
                raise TimeoutError(f"{method} {path}: no answer in {self.timeout}s")
            except (ConnectionError, BrokenPipeError) as e:
                self.close()
                if attempt == 1:
                    raise
        raise RuntimeError("unreachable")

    def json(self, method, path, obj=None):
        body = None if obj is None else json.dumps(obj, separators=(",", ":"))
        status, headers, rbody = self.request(method, path, body)
        try:
            parsed = json.loads(rbody) if rbody else None
        except ValueError:
            parsed = None
        return status, parsed, rbody

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None


def raise_nofile(needed):
    """Raise RLIMIT_NOFILE (soft) as far as the hard limit allows. Returns the soft
    limit now in force; exits with a clear message when `needed` cannot be met."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else max(needed, soft)
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError) as e:
            print(f"warning: could not raise RLIMIT_NOFILE to {want}: {e}", file=sys.stderr)
    if soft < needed:
        sys.exit(f"error: need about {needed} open files but RLIMIT_NOFILE is soft={soft} hard={hard}; "
                 f"raise the hard limit (e.g. `ulimit -Hn {needed}` as root, or LimitNOFILE=) and retry")
    return soft


def proc_status(pid):
    """Fields of /proc/PID/status as {name: value string}; {} if the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except (FileNotFoundError, ProcessLookupError):
        return {}


def rss_kib(pid):
    v = proc_status(pid).get("VmRSS")
    if v is None:
        raise RuntimeError(f"process {pid} is gone (no VmRSS)")
    return int(v.split()[0])


def hwm_kib(pid):
    v = proc_status(pid).get("VmHWM", "0 kB")
    return int(v.split()[0])


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, PermissionError):
        return -1


def alive(pid):
    st = proc_status(pid).get("State", "")
    return bool(st) and not st.startswith(("Z", "X"))


def settle(pid, min_fds=None, timeout=30.0, interval=0.1, stable_for=1.0, rel_tol=0.005, service=None):
    """Wait until the process holds at least min_fds open fds and its RSS has
    changed by less than rel_tol over stable_for seconds; bounded by timeout.
    `service(t)` (optional) is called instead of sleeping, e.g. to read sockets.
    Returns (rss_kib, fds, settled: bool, seconds waited)."""
    start = time.monotonic()
    deadline = start + timeout
    window = []  # (t, rss), oldest first, spanning at least stable_for once full
    while True:
        now = time.monotonic()
        rss, fds = rss_kib(pid), fd_count(pid)
        fds_ok = min_fds is None or fds >= min_fds
        if not fds_ok:
            window = []
        window.append((now, rss))
        # drop samples older than needed: keep the newest one that is >= stable_for old
        while len(window) >= 2 and now - window[1][0] >= stable_for:
            window.pop(0)
        if fds_ok and len(window) >= 2 and now - window[0][0] >= stable_for:
            lo = min(r for _, r in window)
            hi = max(r for _, r in window)
            if hi - lo <= rel_tol * hi:
                return rss, fds, True, now - start
        if now >= deadline:
            return rss, fds, False, now - start
        if service:
            service(interval)
        else:
            time.sleep(interval)


def percentile(sorted_values, p):
    """Nearest-rank percentile of an already sorted list (p in 0..100)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
    print("RESULT " + json.dumps(obj, sort_keys=True, separators=(",", ":")))
