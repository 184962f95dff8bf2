"""What the push tier starts: the alertd binary (ALERTD_BIN), and for the shared store a
throwaway PostgreSQL cluster, as the other tiers do (Tests/AlertdTestSupport/TestPostgres.swift,
bench/tools/pgcluster.sh)."""
import ctypes
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ALERTD_BIN = os.path.abspath(os.path.join(REPO, os.environ.get("ALERTD_BIN", ".build/debug/alertd")))


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: if the test process dies, the kernel kills the child.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


def token_entry(name, secret, roles, clients=("*",)):
    digest = hashlib.sha256(secret.encode()).hexdigest()
    return f'    - {{ name: {name}, sha256: "{digest}", roles: [{", ".join(roles)}], clients: [{", ".join(json.dumps(c) for c in clients)}] }}\n'


class Response:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    def json(self):
        return json.loads(self.body)


class Daemon:
    """The real alertd on 127.0.0.1 (a free port unless given) with a config and a state dir."""

    def __init__(self, config, port=0, directory=None):
        if not os.access(ALERTD_BIN, os.X_OK):
            raise RuntimeError(f"no alertd binary at {ALERTD_BIN}: build it (swift build) or set ALERTD_BIN")
        self.directory = directory or tempfile.mkdtemp(prefix="alertd-push-")
        self.config_path = os.path.join(self.directory, "alertd.yaml")
        if directory is None:
            with open(self.config_path, "w") as file:
                file.write(config)
        self.lines = []
        self.port = None
        self._listening = threading.Event()
        self.process = subprocess.Popen(
            [ALERTD_BIN, "--config", self.config_path, "--listen", f"127.0.0.1:{port}", "--state-dir", os.path.join(self.directory, "state")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
            env={k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._listening.wait(30):
            self.kill()
            raise RuntimeError("alertd did not start listening:\n" + "".join(self.lines))
        self.base = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            match = re.search(r'msg="?listening"? .*address="?[0-9.]+:(\d+)', line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._listening.set()

    def request(self, method, path, body=None, token=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return Response(answer.status, answer.read(), dict(answer.headers))
        except urllib.error.HTTPError as error:
            return Response(error.code, error.read(), dict(error.headers))

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(10)
        self.process.stderr.close()

    def terminate(self):
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(20)
        self._reader.join(10)
        self.process.stderr.close()
        return status

    def restart(self):
        """A new alertd on the same port, config and state dir (after kill or terminate)."""
        return Daemon(None, port=self.port, directory=self.directory)

    def remove(self):
        self.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A throwaway cluster (Debian's postgresql), as the postgres user when run as root."""

    def __init__(self):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
        if not bins:
            raise RuntimeError("needs PostgreSQL (apt-get install postgresql)")
        self.bin = bins[-1]
        self.directory = tempfile.mkdtemp(prefix="alertd-push-pg-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.chmod(self.directory, 0o755)
        self.data = os.path.join(self.directory, "data")
        os.mkdir(self.data)
        self.as_postgres = []
        if os.geteuid() == 0:
            shutil.chown(self.data, "postgres", "postgres")
            self.as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
        subprocess.run(
            self.as_postgres + [f"{self.bin}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"],
            check=True,
            capture_output=True,
        )
        self.port = free_port()
        self.process = subprocess.Popen(
            self.as_postgres
            + [f"{self.bin}/postgres", "-D", self.data, "-p", str(self.port), "-k", self.data, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 30
        while subprocess.run([f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-q"]).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError("PostgreSQL did not start")
            time.sleep(0.1)
        subprocess.run(
            [f"{self.bin}/psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-c", "CREATE DATABASE alertd", "postgres"],
            check=True,
            capture_output=True,
        )
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/alertd"

    def stop(self):
        self.process.kill()
        self.process.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.02)
