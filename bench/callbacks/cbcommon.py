"""cbcommon.py: pieces shared by latency.py and throughput.py (bench/callbacks/).

Python 3 standard library only. Reuses bench/tools/benchhttp.py (HTTP/1.1
keep-alive client, percentiles). Every process started here is remembered by
its PID and stopped by that PID at exit; nothing else is ever signalled.
"""
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(BENCH, "tools"))
from benchhttp import Conn, ResponseParser, build_request, percentile, raise_nofile  # noqa: E402,F401

HOST = "127.0.0.1"
RECEIVER = os.path.join(BENCH, "out", "callbacks", "receiver")
# A fixed secret per role, so the receivers can verify every signature.
CALLBACK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"            # callbacks.signing_secret
FAST_SECRET = "whsec_" + "ZmFzdC1yZWNlaXZlci1zZWNyZXQtMzItYnl0ZXMhIQ=="  # "fast-receiver-secret-32-bytes!!"
SLOW_SECRET = "slow receiver secret (plain text: its UTF-8 bytes sign)"


def log(*a):
    print(f"[cb {time.strftime('%H:%M:%S')}]", *a, file=sys.stderr, flush=True)


def default_alertd():
    """$ALERTD, else the bench build (.build-bench), else None."""
    if os.environ.get("ALERTD"):
        return os.environ["ALERTD"]
    p = os.path.join(ROOT, ".build-bench", "release", "alertd")
    return p if os.path.exists(p) else None


def out_dir(kind, given=None):
    d = given or os.path.join(BENCH, "out", "callbacks", time.strftime("%Y%m%d-%H%M%S") + "-" + kind)
    os.makedirs(d, exist_ok=True)
    return d


def build_receiver():
    """make -C bench/callbacks (no-op when up to date). Returns the binary path."""
    r = subprocess.run(["make", "-s", "-C", HERE], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: building the receiver failed:\n{r.stdout}{r.stderr}")
    return RECEIVER


# ---- processes ------------------------------------------------------------------------------

_started = []  # Popen objects we own


def _cleanup():
    for p in _started:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


atexit.register(_cleanup)
for _s in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_s, lambda *_: sys.exit(1))


def spawn(cmd, logpath):
    f = open(logpath, "ab")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    f.close()
    _started.append(p)
    return p


def stop(p, name, timeout=30.0, sig=signal.SIGTERM):
    """Signal our own process and wait (bounded); SIGKILL only if it does not exit."""
    if p.poll() is not None:
        return p.returncode
    p.send_signal(sig)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log(f"WARNING: {name} (PID {p.pid}) did not exit within {timeout:.0f} s of signal {sig}: SIGKILL")
        p.kill()
        return p.wait()


def port_free(port):
    with socket.socket() as s:
        return s.connect_ex((HOST, port)) != 0


def http_get(port, path, timeout=2.0):
    """(status, body bytes) of one GET on a fresh connection; (None, b'') on error."""
    c = Conn(HOST, port, timeout=timeout)
    try:
        st, _, body = c.request("GET", path)
        return st, body
    except (OSError, TimeoutError, ValueError):
        return None, b""
    finally:
        c.close()


def wait_http(port, path, timeout, proc=None, want=200):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        st, _ = http_get(port, path, timeout=1.0)
        if st == want:
            return True
        time.sleep(0.02)
    return False


class Receiver:
    """The C receiver, one instance."""

    def __init__(self, name, port, outdir, delay_ms=0, hold=False, secret=None, threads=2):
        self.name, self.port = name, port
        self.logpath = os.path.join(outdir, f"{name}.tsv")
        self.errpath = os.path.join(outdir, f"{name}.stderr")
        if not port_free(port):
            sys.exit(f"error: port {port} ({name}) is in use")
        cmd = [RECEIVER, "--port", str(port), "--threads", str(threads), "--log", self.logpath]
        if hold:
            cmd.append("--hold")
        elif delay_ms:
            cmd += ["--delay-ms", str(delay_ms)]
        if secret:
            cmd += ["--secret", secret]
        self.proc = spawn(cmd, self.errpath)
        if not wait_http(port, "/stats", 10, self.proc):
            sys.exit(f"error: receiver {name} did not start (see {self.errpath})")
        self.url = f"http://{HOST}:{port}/{name}"

    def stats(self):
        st, body = http_get(self.port, "/stats")
        return json.loads(body) if st == 200 else None

    def release(self):
        """SIGUSR1: answer every held request, answer at once from now on."""
        self.proc.send_signal(signal.SIGUSR1)

    def finish(self):
        """SIGTERM (the receiver writes its log), then the records and the RESULT fields."""
        stop(self.proc, self.name, timeout=60)
        result = {}
        with open(self.errpath) as f:
            for line in f:
                if line.startswith("RESULT "):
                    result = dict(kv.split("=", 1) for kv in line.split()[1:])
        return read_log(self.logpath), result


def read_log(path):
    """Receiver log -> list of (arrival_ns, answered_ns, webhook_id, alert_id, type, bytes, sig)."""
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            a, b, wid, aid, typ, n, sig = line.rstrip("\n").split("\t")
            out.append((int(a), int(b), wid, aid, typ, int(n), sig))
    return out


# ---- alertd ----------------------------------------------------------------------------------

def write_config(path, port, durability="full", log_level="info", signing_secret=None,
                 webhooks=(), timeout=None, max_pending=None):
    """An alertd YAML config. webhooks: (client, url, secret) triples. One key per
    line (standin_alertd.py reads this layout)."""
    lines = ["# generated by bench/callbacks; --listen and --state-dir come from the command line",
             f'listen: "{HOST}:{port}"', f"durability: {durability}", "log:", f"  level: {log_level}"]
    if max_pending:
        lines += ["limits:", f"  max_pending_per_client: {max_pending}"]
    # The bench's receivers listen on loopback, which callbacks.deny refuses by default.
    cb = ['  allow: ["127.0.0.0/8"]']
    if signing_secret:
        cb.append(f'  signing_secret: "{signing_secret}"')
    if timeout:
        cb.append(f"  timeout: {timeout}")
    if cb:
        lines += ["callbacks:"] + cb
    if webhooks:
        lines.append("webhooks:")
        for client, url, secret in webhooks:
            lines += [f"  - client: {client}", f'    url: "{url}"', f'    secret: "{secret}"']
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Alertd:
    """alertd (or a stand-in with the same flags) on 127.0.0.1:port with its own state dir."""

    def __init__(self, binary, port, config, state_dir, outdir):
        self.binary, self.port, self.config, self.state_dir, self.outdir = binary, port, config, state_dir, outdir
        self.proc = None
        self.runs = 0

    def start(self, timeout=60):
        if not port_free(self.port):
            sys.exit(f"error: port {self.port} (alertd) is in use")
        self.runs += 1
        self.logpath = os.path.join(self.outdir, f"alertd-{self.runs}.log")
        cmd = [self.binary, "--config", self.config, "--listen", f"{HOST}:{self.port}", "--state-dir", self.state_dir]
        if self.binary.endswith(".py"):
            cmd = [sys.executable] + cmd
        t0 = time.time_ns()
        self.proc = spawn(cmd, self.logpath)
        if not wait_http(self.port, "/readyz", timeout, self.proc):
            os.system(f"tail -20 {self.logpath} >&2")
            sys.exit(f"error: alertd did not become ready within {timeout} s (log: {self.logpath})")
        return t0

    def stop(self, timeout=60):
        return stop(self.proc, "alertd", timeout=timeout)


# ---- statistics ------------------------------------------------------------------------------

def summary_ms(values_ns):
    """p50/p90/p99/p99.9/max/mean in ms of a list of nanosecond values."""
    v = sorted(values_ns)
    if not v:
        return {"n": 0}
    ms = lambda x: round(x / 1e6, 3)  # noqa: E731
    return {"n": len(v), "p50_ms": ms(percentile(v, 50)), "p90_ms": ms(percentile(v, 90)),
            "p99_ms": ms(percentile(v, 99)), "p999_ms": ms(percentile(v, 99.9)), "max_ms": ms(v[-1]),
            "min_ms": ms(v[0]), "mean_ms": ms(sum(v) / len(v))}


def cpu_busy(seconds=1):
    """Percent of the machine busy over `seconds` (bench/tools/cpubusy.py)."""
    r = subprocess.run([sys.executable, os.path.join(BENCH, "tools", "cpubusy.py"), str(seconds)],
                       capture_output=True, text=True)
    try:
        return int(r.stdout.strip().split()[-1])
    except (ValueError, IndexError):
        return None


def write_result(outdir, name, obj):
    with open(os.path.join(outdir, name), "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    print("RESULT " + json.dumps(obj, sort_keys=True, separators=(",", ":")), flush=True)
