"""The .deb installed into a Debian whose PID 1 is a real systemd (systemd-nspawn).

One boot for the whole class; the tests run in the order of their numbers, as
an admin would: install, start, reload, a hang, socket activation, the
sandbox, stop, upgrade, remove and purge. Skipped, saying why, where this machine
cannot boot a container (not root, no systemd-nspawn); CI installs what it
needs, so there it always runs.
"""

import hashlib
import os
import re
import resource
import sys
import time
import unittest

from support import Container, cached_root, deb_path, depends_packages, source_version, why_container_cannot_run, BASE_PACKAGES

REASON = why_container_cannot_run()
# CI provides root and the tools (.ci/run): there this tier must run, never skip.
IN_CI = os.environ.get("CI") == "true"
if REASON and not IN_CI:
    print(f"\n[debian] SKIPPED: the package under a real systemd (test_systemd): {REASON}\n", file=sys.stderr)
DEB_IN_CONTAINER = "/root/alertd.deb"


def config(*tokens):
    """A small config for the container: loopback, and admin tokens (name, secret) if any."""
    lines = ['listen: "127.0.0.1:8080"', "auth:", "  tokens:" if tokens else "  tokens: []"]
    for name, secret in tokens:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        lines.append(f'    - {{ name: {name}, sha256: "{digest}", roles: [admin], clients: ["*"] }}')
    return "\n".join(lines) + "\n"


# Things the alertd user can do in the plain container that the unit's sandbox
# must stop (ATTEMPTS), and one it must allow. The probe runs them twice: as
# alertd outside the unit (the control: each must work there, or the check
# proves nothing) and as an ExecStartPre= of the unit itself, which runs with
# every setting of the service. One line per attempt: "allowed NAME" or "denied NAME".
ATTEMPTS = {
    "ProtectSystem=strict": "echo x > /srv/probe/file",
    "ProtectHome=yes": "test -e /home/probe",
    "PrivateTmp=yes": "test -e /tmp/host-marker",
    "PrivateDevices=yes": "test -e /dev/console",
    "ProtectProc=invisible": "cat /proc/1/status",
    "ProcSubset=pid": "cat /proc/sys/kernel/hostname",
    "RestrictNamespaces=yes": "unshare --user true",
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6": "ip -br link",
    "LockPersonality=yes": "setarch linux32 true",
    "SystemCallFilter=~@privileged @resources": "renice -n 5 -p $$",
    "RestrictSUIDSGID=yes": "f=/var/lib/alertd/.suid; touch $f && chmod u+s $f; r=$?; rm -f $f; exit $r",
    "UMask=0077 (any other umask)": 'test "$(umask)" != 0077',
}
ALLOWED = {"StateDirectory=alertd": "echo x > /var/lib/alertd/.probe && rm /var/lib/alertd/.probe"}
PROBE = "#!/bin/sh\n" + "".join(
    f"if ( {command} ) >/dev/null 2>&1; then echo 'allowed {name}'; else echo 'denied {name}'; fi\n"
    for name, command in {**ATTEMPTS, **ALLOWED}.items()
) + "exit 0\n"


def probe_results(lines):
    return {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in lines.splitlines()
            if line.startswith(("allowed ", "denied "))}


@unittest.skipIf(REASON and not IN_CI, f"the systemd tier is skipped: {REASON}")
class UnderSystemd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if REASON:
            raise RuntimeError(f"CI must run the systemd tier, and cannot: {REASON}")
        cls.deb = deb_path()
        cls.version = source_version()
        # The packages the .deb depends on are in the root already: dpkg -i needs no network.
        root = cached_root(BASE_PACKAGES + depends_packages(cls.deb))
        cls.c = Container(root, files=[(cls.deb, DEB_IN_CONTAINER)])
        cls.before = cls.snapshot()
        cls.accounts_before = cls.accounts()

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()

    # Helpers

    @classmethod
    def snapshot(cls):
        """Every file of the root file system with its type, mode, owner and size (not of
        directories: it depends on their history), and the content of /etc. Left out: what changes whatever a package does (dpkg's own database
        and logs, caches, the journal, systemd's random seed and timers)."""
        script = (
            "find / -xdev \\( -path /var/lib/dpkg -o -path /var/log -o -path /var/cache -o -path /proc "
            "-o -path /var/lib/systemd/random-seed -o -path /var/lib/systemd/timers -o -path /var/lib/systemd/catalog "
            "-o -path /var/tmp -o -path /root/.lesshst \\) -prune -o -type d -printf '%p %y %m %u %g\\n' "
            "-o -printf '%p %y %m %u %g %s\\n' | LC_ALL=C sort; "
            "find /etc -xdev -type f -exec md5sum {} + | LC_ALL=C sort -k2"
        )
        return set(cls.c.sh(script, timeout=120).stdout.splitlines())

    @classmethod
    def accounts(cls):
        return cls.c.sh("cat /etc/passwd /etc/group /etc/shadow /etc/gshadow").stdout.splitlines()

    def sh(self, script, **kwargs):
        return self.c.sh(script, **kwargs).stdout.strip()

    def prop(self, unit, name):
        return self.sh(f"systemctl show {unit} -p {name} --value")

    def main_pid(self):
        return int(self.prop("alertd.service", "MainPID"))

    def write_config(self, text):
        # cat > keeps the file's owner and mode (root:alertd 0640).
        self.c.sh(f"cat > /etc/alertd/alertd.yaml <<'EOF'\n{text}EOF")

    def eventually(self, what, predicate, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail(f"{what}: not within {timeout} s")
            time.sleep(0.1)

    def waiters(self):
        metrics = self.c.http("GET", "/metrics")
        found = re.search(r"^alertd_waiters (\d+)", metrics.get("body") or "", re.M)
        return int(found.group(1)) if found else 0

    def post(self, client, title, token=None, buttons=("Yes", "No")):
        answer = self.c.http("POST", f"/v1/clients/{client}/alerts",
                             {"title": title, "buttons": [{"title": b} for b in buttons]}, token)
        self.assertEqual(answer["status"], 201, answer)
        return answer["json"]

    # The tests, in order

    def test_01_install_creates_the_user_and_enables_without_starting(self):
        self.c.sh(f"dpkg -i {DEB_IN_CONTAINER}", timeout=120)
        user = self.sh("getent passwd alertd").split(":")
        self.assertEqual((user[5], user[6]), ("/var/lib/alertd", "/usr/sbin/nologin"))
        self.assertLess(int(user[2]), 1000, "alertd is not a system user")
        self.assertEqual(self.sh("systemctl is-enabled alertd.service"), "enabled")
        self.assertEqual(self.sh("systemctl is-active alertd.service || true"), "inactive")
        self.assertEqual(self.sh("systemctl is-enabled alertd.socket || true"), "disabled")
        self.assertEqual(self.sh("stat -c '%U:%G %a' /etc/alertd /etc/alertd/alertd.yaml").split("\n"),
                         ["root:alertd 750", "root:alertd 640"])
        # Every file dpkg says it installed is there.
        missing = self.sh("dpkg -L alertd | while read -r f; do [ -e \"$f\" ] || echo \"$f\"; done")
        self.assertEqual(missing, "")

    def test_02_the_binaries_run_without_the_toolchain_and_the_man_pages_read(self):
        self.assertEqual(self.sh("alertd --version"), self.version)
        self.assertEqual(self.sh("alertctl --version"), self.version)
        self.assertIn("check-config", self.sh("MANWIDTH=80 man -P cat 8 alertd"))
        self.assertIn("alertctl", self.sh("MANWIDTH=80 man -P cat 1 alertctl"))
        # This root never had Swift: every library resolves, each from an installed package.
        for tool in ("alertd", "alertctl"):
            ldd = self.sh(f"ldd /usr/bin/{tool}")
            self.assertNotIn("not found", ldd)
            for path in re.findall(r"=> (/\S+)", ldd):
                self.c.sh(f"dpkg -S $(readlink -f {path}) || dpkg -S {path}")

    def test_03_start_returns_once_alertd_is_ready_and_the_api_answers(self):
        self.c.sh("systemctl start alertd.service")
        # No retry: Type=notify means `systemctl start` returned after READY=1, so it listens now.
        ready = self.c.http("GET", "/readyz")
        self.assertEqual(ready["status"], 200, ready)
        self.assertEqual(self.prop("alertd.service", "ActiveState"), "active")
        self.assertEqual(self.prop("alertd.service", "Type"), "notify")
        alert = self.post("ops", "Deploy?")
        self.assertEqual(alert["state"], "displayed")
        self.assertEqual(self.sh("stat -c '%U %a' /var/lib/alertd"), "alertd 700")

    def test_04_reload_applies_a_changed_token_without_dropping_a_parked_long_poll(self):
        self.write_config(config(("old", "secret-old")))
        self.c.sh("systemctl reload alertd.service")
        self.eventually("the first token applies",
                        lambda: self.c.http("GET", "/v1/clients", token="secret-old")["status"] == 200)
        pid = self.main_pid()
        first = self.post("reload", "First", token="secret-old")
        second = self.post("reload", "Second", token="secret-old")
        poll = self.c.http_process("GET", f"/v1/clients/reload/alerts/current?wait=60&after={first['id']}",
                                   token="secret-old", timeout=90)
        self.eventually("the long-poll parks", lambda: self.waiters() >= 1)

        self.write_config(config(("new", "secret-new")))
        self.c.sh("systemctl reload alertd.service")
        self.eventually("the changed token applies",
                        lambda: self.c.http("GET", "/v1/clients", token="secret-new")["status"] == 200)
        self.assertEqual(self.c.http("GET", "/v1/clients", token="secret-old")["status"], 401)
        self.assertEqual(self.main_pid(), pid, "reload restarted alertd")
        self.assertEqual(self.waiters(), 1, "the parked long-poll was dropped")

        chosen = self.c.http("POST", f"/v1/clients/reload/alerts/{first['id']}/choice", {"button": "Yes"},
                             token="secret-new")
        self.assertEqual(chosen["status"], 200, chosen)
        answer = Container.http_result(poll)
        self.assertEqual(answer["status"], 200, answer)
        self.assertEqual(answer["json"]["id"], second["id"])

    def test_05_a_hung_alertd_is_killed_by_the_watchdog_and_restarted(self):
        # The shipped WatchdogSec=30, shortened so the test takes seconds; nothing else changes.
        self.c.sh("mkdir -p /run/systemd/system/alertd.service.d && printf '[Service]\\nWatchdogSec=3\\n' "
                  "> /run/systemd/system/alertd.service.d/watchdog.conf && systemctl daemon-reload "
                  "&& systemctl restart alertd.service")
        try:
            hung = self.main_pid()
            restarts = int(self.prop("alertd.service", "NRestarts"))
            self.c.sh(f"kill -STOP {hung}")
            self.eventually("systemd restarts the hung alertd",
                            lambda: self.main_pid() not in (0, hung)
                            and self.prop("alertd.service", "ActiveState") == "active", timeout=60)
            self.assertEqual(int(self.prop("alertd.service", "NRestarts")), restarts + 1)
            self.assertIn("Watchdog timeout", self.sh("journalctl -u alertd.service -o cat --no-pager"))
            self.assertEqual(self.c.http("GET", "/readyz")["status"], 200)
        finally:
            self.c.sh("rm -r /run/systemd/system/alertd.service.d && systemctl daemon-reload "
                      "&& systemctl restart alertd.service")

    def test_06_the_socket_starts_alertd_on_the_first_connection(self):
        self.c.sh("systemctl stop alertd.service && systemctl start alertd.socket")
        try:
            self.assertEqual(self.prop("alertd.service", "ActiveState"), "inactive")
            first = self.c.http("GET", "/healthz")
            self.assertEqual(first["status"], 200, first)
            self.assertEqual(self.prop("alertd.service", "ActiveState"), "active")
            # alertd serves the socket systemd bound (fd 3), not one of its own.
            socket_inode = self.sh(f"readlink /proc/{self.main_pid()}/fd/3")
            self.assertRegex(socket_inode, r"^socket:")
            self.assertIn("alertd.socket", self.prop("alertd.service", "TriggeredBy"))
        finally:
            self.c.sh("systemctl stop alertd.socket alertd.service && systemctl start alertd.service")

    def test_07_the_units_hardening_is_in_force(self):
        # What a process can see of the sandbox: its capabilities, seccomp, user namespace and
        # limits; then a probe of each setting whose effect a shell can try (ATTEMPTS). Not seen
        # from here: the settings that only narrow seccomp further (MemoryDenyWriteExecute,
        # ProtectClock, RestrictRealtime…; Seccomp: 2 shows the filter is on); IPAddressDeny= and
        # TasksMax= are not probed.
        pid = self.main_pid()
        status = dict(line.split(":\t", 1) for line in self.sh(f"cat /proc/{pid}/status").splitlines()
                      if ":\t" in line)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(status[cap].strip(), 16), 0, cap)
        self.assertEqual(status["NoNewPrivs"].strip(), "1")
        self.assertEqual(status["Seccomp"].strip(), "2")
        uid = self.sh("id -u alertd")
        self.assertEqual(status["Uid"].split()[0], uid)
        # PrivateUsers=yes: a user namespace that maps root and alertd only.
        self.assertNotIn("4294967295", self.sh(f"cat /proc/{pid}/uid_map"))
        self.assertEqual(self.sh(f"grep -c . /proc/{pid}/uid_map"), "2")
        # LimitNOFILE=65536, as far as the container may go: it inherits this process's
        # hard limit and cannot raise it (on a machine that caps it lower, say).
        expected = min(65536, resource.getrlimit(resource.RLIMIT_NOFILE)[1])
        self.assertRegex(self.sh(f"cat /proc/{pid}/limits"), rf"Max open files\s+{expected}\s+{expected}\s")

        # The same sandbox, tried from inside: first as alertd in the plain container, then in the unit.
        self.c.sh(f"cat > /usr/local/sbin/alertd-probe <<'EOF'\n{PROBE}EOF\nchmod 0755 /usr/local/sbin/alertd-probe; "
                  "mkdir -p /srv/probe /home/probe && chown alertd /srv/probe /home/probe && touch /tmp/host-marker")
        try:
            control = probe_results(self.sh("runuser -u alertd -- /usr/local/sbin/alertd-probe"))
            self.assertEqual({name for name, result in control.items() if result != "allowed"}, set(),
                             "the probe proves nothing where alertd may not do these even outside the unit")
            self.c.sh("mkdir -p /run/systemd/system/alertd.service.d && printf "
                      "'[Service]\\nExecStartPre=/usr/local/sbin/alertd-probe\\n' "
                      "> /run/systemd/system/alertd.service.d/probe.conf && systemctl daemon-reload "
                      "&& systemctl restart alertd.service")
            invocation = self.prop("alertd.service", "InvocationID")
            sandboxed = probe_results(self.sh(f"journalctl _SYSTEMD_INVOCATION_ID={invocation} -o cat --no-pager"))
            expected = {**{name: "denied" for name in ATTEMPTS}, **{name: "allowed" for name in ALLOWED}}
            self.assertEqual(sandboxed, expected)
        finally:
            self.c.sh("rm -rf /run/systemd/system/alertd.service.d /usr/local/sbin/alertd-probe /srv/probe /home/probe "
                      "/tmp/host-marker; systemctl daemon-reload && systemctl restart alertd.service")

    def test_08_stop_drains_parked_waiters_with_answers_and_exits_0(self):
        self.write_config(config(("new", "secret-new")))
        self.c.sh("systemctl restart alertd.service")
        alert = self.post("drain", "Still there?", token="secret-new")
        poll = self.c.http_process("GET", f"/v1/clients/drain/alerts/{alert['id']}?wait=60", token="secret-new",
                                   timeout=90)
        self.eventually("the long-poll parks", lambda: self.waiters() >= 1)
        started = time.monotonic()
        self.c.sh("systemctl stop alertd.service")
        answer = Container.http_result(poll)
        self.assertLess(time.monotonic() - started, 15)
        self.assertEqual(answer["status"], 200, answer)
        self.assertEqual(answer["json"]["state"], "displayed")
        self.assertEqual(self.prop("alertd.service", "ExecMainStatus"), "0")
        self.assertEqual(self.prop("alertd.service", "Result"), "success")

    def test_09_an_upgrade_restarts_a_running_alertd_and_keeps_the_config(self):
        self.c.sh("systemctl start alertd.service")
        before = self.main_pid()
        # Installing the package over itself runs postinst as an upgrade does (configure OLD-VERSION).
        self.c.sh(f"dpkg -i {DEB_IN_CONTAINER}", timeout=120)
        self.assertEqual(self.prop("alertd.service", "ActiveState"), "active")
        self.assertNotIn(self.main_pid(), (0, before), "alertd was not restarted")
        # The admin's token is still the one: dpkg kept the edited conffile.
        self.assertEqual(self.c.http("GET", "/v1/clients", token="secret-new")["status"], 200)
        self.assertEqual(self.sh("stat -c '%U:%G %a' /etc/alertd/alertd.yaml"), "root:alertd 640")

    def test_09b_configure_never_follows_a_symlink_in_etc_alertd(self):
        # A config path replaced by a symlink (to a file only root may read): postinst's
        # chgrp and chmod would follow it and hand the target to the alertd group.
        self.c.sh("install -m 0600 -o root -g root /dev/null /root/victim && echo secret > /root/victim")
        self.c.sh("mv /etc/alertd/alertd.yaml /etc/alertd/alertd.yaml.real && ln -s /root/victim /etc/alertd/alertd.yaml")
        try:
            out = self.sh(f"/var/lib/dpkg/info/alertd.postinst configure {self.version} 2>&1")
            self.assertEqual(self.sh("stat -c '%U:%G %a' /root/victim"), "root:root 600")
            self.assertIn("/etc/alertd/alertd.yaml is a symbolic link", out)
        finally:
            self.c.sh("rm -f /etc/alertd/alertd.yaml /root/victim && mv /etc/alertd/alertd.yaml.real /etc/alertd/alertd.yaml")
        self.assertEqual(self.sh("stat -c '%U:%G %a' /etc/alertd/alertd.yaml"), "root:alertd 640")

    def test_10_remove_stops_alertd_and_purge_leaves_the_system_as_before(self):
        self.c.sh("systemctl start alertd.service")
        self.c.sh("dpkg -r alertd", timeout=120)
        self.assertEqual(self.sh("systemctl is-active alertd.service || true"), "inactive")
        self.assertEqual(self.sh("pgrep -x alertd || true"), "")
        self.assertEqual(self.sh("ls /usr/bin/alertd /lib/systemd/system/alertd.service 2>/dev/null || true"), "")
        self.assertEqual(self.sh("ls /etc/alertd"), "alertd.yaml", "remove keeps the conffile")
        self.c.sh("dpkg --purge alertd", timeout=120)
        after = self.snapshot()
        # Debian leaves a system user in place on purge (files it owned may remain,
        # in backups say): the account files differ by the alertd user and group alone.
        account = re.compile(r"^/etc/(passwd|group|shadow|gshadow)-? |  /etc/(passwd|group|shadow|gshadow)-?$")
        self.assertEqual(sorted(line for line in after - self.before if not account.search(line)), [])
        self.assertEqual(sorted(line for line in self.before - after if not account.search(line)), [])
        added = [line for line in self.accounts() if line not in self.accounts_before]
        self.assertEqual([line.split(":")[0] for line in added], ["alertd"] * 4, added)
        self.assertEqual([line for line in self.accounts_before if line not in self.accounts()], [])


if __name__ == "__main__":
    unittest.main()
