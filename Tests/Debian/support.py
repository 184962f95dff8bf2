"""Support for the Debian package tests: the .deb, and a real systemd in a container.

Standard library only. The container is a Debian root made once with
debootstrap and cached under /var/cache/alertd-test (keyed by the packages it
holds), booted with systemd-nspawn as PID 1 of its own namespaces, with a
private network: alertd in it listens on its own 127.0.0.1:8080 and nothing
on the host can collide with it. Each boot runs on an overlay of the cached
root, so every run starts from the same system and leaves the cache as it was.

Environment:
    ALERTD_DEB            the package (default: the only dist/alertd_*_amd64.deb)
    ALERTD_DEBIAN_MIRROR  debootstrap's mirror (default http://deb.debian.org/debian)
    ALERTD_TEST_CACHE     where roots are cached (default /var/cache/alertd-test)
"""

import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CACHE = os.environ.get("ALERTD_TEST_CACHE", "/var/cache/alertd-test")
MIRROR = os.environ.get("ALERTD_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# What the root holds besides minbase and the package's Depends: systemd as
# init, man to read the pages, iproute2 for the sandbox probe. No python3: the
# tests' HTTP client runs on the host, in the container's network namespace.
BASE_PACKAGES = ["systemd", "systemd-sysv", "dbus", "procps", "iproute2", "man-db"]
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def source_version():
    """The version from its one place, Sources/AlertdVersion/Version.swift."""
    with open(os.path.join(REPO, "Sources", "AlertdVersion", "Version.swift")) as f:
        found = re.findall(r'static let string = "([^"]+)"', f.read())
    if len(found) != 1:
        raise RuntimeError("Version.swift does not hold exactly one version string")
    return found[0]


def deb_path():
    path = os.environ.get("ALERTD_DEB")
    if path:
        return os.path.abspath(path)
    found = glob.glob(os.path.join(REPO, "dist", "alertd_*_amd64.deb"))
    if len(found) != 1:
        raise RuntimeError(f"expected one dist/alertd_*_amd64.deb (run make deb), found {found}")
    return found[0]


def run(args, check=True, timeout=120, **kwargs):
    result = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}")
    return result


def deb_field(deb, field):
    return run(["dpkg-deb", "-f", deb, field]).stdout.strip()


def depends_packages(deb):
    """The package names in Depends (the first of each alternative)."""
    names = []
    for clause in deb_field(deb, "Depends").split(","):
        first = clause.split("|")[0].strip()
        names.append(re.match(r"[a-z0-9][a-z0-9+.-]*", first).group(0))
    return names


def why_container_cannot_run():
    """None when this machine can boot the container; else the reason, said plainly."""
    if os.geteuid() != 0:
        return "needs root (debootstrap, systemd-nspawn, overlay mounts)"
    for tool in ("systemd-nspawn", "debootstrap", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install systemd-container debootstrap)"
    return None


def cached_root(packages):
    """A Debian root holding minbase plus `packages`, made once per package set."""
    key = hashlib.sha256(" ".join(sorted(packages)).encode()).hexdigest()[:16]
    root = os.path.join(CACHE, f"bookworm-{key}")
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, "lock"), "w") as lock:
        # One debootstrap at a time on this machine; the others wait for it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        complete = os.path.join(root, ".complete")
        # A month-old root is made again, so it follows bookworm's point releases.
        if os.path.exists(complete) and time.time() - os.path.getmtime(complete) < 30 * 86400:
            return root
        for old in glob.glob(os.path.join(CACHE, "bookworm-*")):  # other package sets, or too old
            shutil.rmtree(old, ignore_errors=True)
        partial = root + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        started = time.monotonic()
        print(f"\n[debian] building the container root once (debootstrap, ~2 min): {root}", flush=True)
        run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(sorted(packages))}", "bookworm", partial, MIRROR],
            timeout=1200,
        )
        # No downloaded .debs in the cache.
        run(["chroot", partial, "apt-get", "clean"])
        open(os.path.join(partial, ".complete"), "w").close()
        os.rename(partial, root)
        print(f"[debian] root ready in {time.monotonic() - started:.0f} s", flush=True)
        return root


class Container:
    """A booted Debian whose PID 1 is systemd, on an overlay of a cached root."""

    def __init__(self, root, files=()):
        self.dir = tempfile.mkdtemp(prefix="alertd-nspawn-", dir="/var/tmp")
        self.merged = os.path.join(self.dir, "merged")
        self.mounted, self.nspawn, self.pid, self.console = False, None, None, None
        try:
            self._boot(root, files)
        except BaseException:
            self.stop()
            raise

    def _boot(self, root, files):
        upper, work = os.path.join(self.dir, "upper"), os.path.join(self.dir, "work")
        for d in (self.merged, upper, work):
            os.mkdir(d)
        run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={root},upperdir={upper},workdir={work}", self.merged])
        self.mounted = True
        for source, target in files:
            shutil.copy(source, self.merged + target)
        self.console = open(os.path.join(self.dir, "console.log"), "w+")
        self.nspawn = subprocess.Popen(
            # --keep-unit/--register=no: no host systemd to make a scope or register with.
            ["systemd-nspawn", "-q", "-D", self.merged, "-b", "--register=no", "--keep-unit",
             "--resolv-conf=off", "--private-network", "-M", f"alertd-test-{os.getpid()}"],
            stdin=subprocess.DEVNULL, stdout=self.console, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.pid = self._leader()
        # Until systemd has set up its private bus, systemctl cannot reach it ("offline").
        deadline = time.monotonic() + 90
        while True:
            answer = self.sh("systemctl is-system-running --wait", check=False, timeout=90)
            state = answer.stdout.strip()
            if state in ("running", "degraded"):
                break
            if time.monotonic() > deadline or state not in ("", "offline", "initializing", "starting"):
                raise RuntimeError(f"the container did not boot: {state} {answer.stderr}\n{self.console_text()}")
            time.sleep(0.1)

    def _leader(self):
        # PID 1 of the container: the child of the systemd-nspawn process.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.nspawn.poll() is not None:
                raise RuntimeError(f"systemd-nspawn exited {self.nspawn.returncode}\n{self.console_text()}")
            try:
                with open(f"/proc/{self.nspawn.pid}/task/{self.nspawn.pid}/children") as f:
                    children = f.read().split()
                for child in children:
                    with open(f"/proc/{child}/comm") as f:
                        if f.read().strip() == "systemd":
                            return int(child)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise RuntimeError("no systemd in the container after 30 s\n" + self.console_text())

    def console_text(self):
        if self.console is None:
            return ""
        self.console.flush()
        with open(self.console.name, errors="replace") as f:
            return f.read()[-4000:]

    def sh(self, script, check=True, timeout=60):
        """Runs a shell script inside the container, as root, in every one of its namespaces."""
        env = {"PATH": CLEAN_PATH, "LANG": "C.UTF-8", "HOME": "/root", "SYSTEMD_PAGER": "", "SYSTEMD_COLORS": "0"}
        return run(["nsenter", "-t", str(self.pid), "-a", "--", "/bin/sh", "-c", script],
                   check=check, timeout=timeout, env=env)

    def http_process(self, method, path, body=None, token=None, timeout=90):
        """Starts one HTTP request to the container's 127.0.0.1:8080, from the host's Python in
        the container's network namespace; `http_result` reads its answer."""
        script = (
            "import http.client, json, sys\n"
            "method, path, body, token, timeout = json.loads(sys.argv[1])\n"
            "headers = {'Content-Type': 'application/json'} if body is not None else {}\n"
            "if token: headers['Authorization'] = 'Bearer ' + token\n"
            "c = http.client.HTTPConnection('127.0.0.1', 8080, timeout=timeout)\n"
            "try:\n"
            "    c.request(method, path, body=None if body is None else json.dumps(body), headers=headers)\n"
            "    r = c.getresponse(); data = r.read().decode()\n"
            "    print(json.dumps({'status': r.status, 'body': data}))\n"
            "except OSError as e:\n"
            "    print(json.dumps({'status': None, 'error': repr(e)}))\n"
        )
        return subprocess.Popen(
            ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", "python3", "-c", script,
             json.dumps([method, path, body, token, timeout])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )

    @staticmethod
    def http_result(process, timeout=120):
        out, err = process.communicate(timeout=timeout)
        if process.returncode != 0:
            raise AssertionError(f"the HTTP client failed: {err}")
        answer = json.loads(out)
        if answer.get("body"):
            try:
                answer["json"] = json.loads(answer["body"])
            except ValueError:
                pass
        return answer

    def http(self, method, path, body=None, token=None, timeout=30):
        return self.http_result(self.http_process(method, path, body, token, timeout), timeout + 10)

    def stop(self):
        if self.nspawn is not None and self.nspawn.poll() is None:
            if self.pid is not None:
                self.sh("systemctl poweroff --no-block", check=False, timeout=30)
            else:
                self.nspawn.terminate()  # nspawn asks the container's init to power off
            try:
                self.nspawn.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.nspawn.pid, signal.SIGKILL)
                self.nspawn.wait(timeout=30)
        if self.console is not None:
            self.console.close()
        if self.mounted:
            run(["umount", self.merged], check=False)
            self.mounted = False
        shutil.rmtree(self.dir, ignore_errors=True)
