"""The .deb as built by `make deb`: its version, its files, lintian, and binaries
that need nothing from the Swift toolchain. Runs as any user; the install under
a real systemd is test_systemd.py."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from support import REPO, deb_field, deb_path, depends_packages, run, source_version

# Where every file of the package lands (directories left out).
EXPECTED_FILES = """
/etc/alertd/alertd.yaml
/lib/systemd/system/alertd.service
/lib/systemd/system/alertd.socket
/usr/bin/alertctl
/usr/bin/alertd
/usr/lib/sysusers.d/alertd.conf
/usr/share/bash-completion/completions/alertctl
/usr/share/doc/alertd/CHANGELOG.md.gz
/usr/share/doc/alertd/README.md.gz
/usr/share/doc/alertd/changelog.gz
/usr/share/doc/alertd/copyright
/usr/share/doc/alertd/dashboard.md.gz
/usr/share/doc/alertd/systemd.md.gz
/usr/share/fish/vendor_completions.d/alertctl.fish
/usr/share/lintian/overrides/alertd
/usr/share/man/man1/alertctl.1.gz
/usr/share/man/man8/alertd.8.gz
/usr/share/zsh/vendor-completions/_alertctl
""".split()

# Libraries the binaries may load, all from Debian packages the .deb depends on:
# the C and C++ runtimes (libdl, libpthread and librt are stubs in libc6 since
# glibc 2.34; the Swift runtime is linked in statically), zlib (the static
# Foundation links it), libmicrohttpd, SQLite and mimalloc (the allocator, Makefile).
ALLOWED_NEEDED = {
    "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1", "libmicrohttpd.so.12", "libsqlite3.so.0", "libmimalloc.so.2",
    # alertctl: FoundationNetworking's libcurl (the MCP SDK links it; alertctl mcp uses stdio only).
    "libcurl.so.4",
}


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.deb = deb_path()
        cls.tree = tempfile.mkdtemp(prefix="alertd-deb-")
        run(["dpkg-deb", "-R", cls.deb, cls.tree])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tree, ignore_errors=True)

    def path(self, installed):
        return os.path.join(self.tree, installed.lstrip("/"))

    def test_the_changelog_the_binaries_and_the_package_name_one_version(self):
        version = source_version()
        with open(os.path.join(REPO, "CHANGELOG.md")) as f:
            top = next(line for line in f if line.startswith("## "))
        self.assertRegex(top, rf"^## {re.escape(version)}\b", "CHANGELOG.md's top entry names another version")
        self.assertEqual(deb_field(self.deb, "Version"), version)
        self.assertEqual(os.path.basename(self.deb), f"alertd_{version}_amd64.deb")
        for tool in ("alertd", "alertctl"):
            printed = run([self.path(f"/usr/bin/{tool}"), "--version"]).stdout.strip()
            self.assertEqual(printed, version, f"{tool} --version")

    def test_files_land_where_listed(self):
        listing = run(["dpkg-deb", "-c", self.deb]).stdout.splitlines()
        files = sorted(line.split()[-1].lstrip(".") for line in listing if not line.startswith("d"))
        self.assertEqual(files, sorted(EXPECTED_FILES))
        self.assertEqual(run(["dpkg-deb", "-f", self.deb, "Architecture"]).stdout.strip(), "amd64")
        with open(self.path("/DEBIAN/conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/alertd/alertd.yaml"])

    def test_every_file_is_owned_by_root(self):
        listing = run(["dpkg-deb", "-c", self.deb]).stdout.splitlines()
        owners = {line.split()[1] for line in listing}
        self.assertEqual(owners, {"root/root"})

    def test_the_config_listens_on_loopback_with_no_tokens_and_loads(self):
        config = self.path("/etc/alertd/alertd.yaml")
        with open(config) as f:
            live = [line for line in f if line.strip() and not line.lstrip().startswith("#")]
        self.assertIn('listen: "127.0.0.1:8080"\n', live)
        # No token is configured: the tokens example stays commented (issue 32 made it a whole block).
        self.assertFalse([line for line in live if line.strip().startswith(("tokens:", "- name:"))], live)
        self.assertIn("state_dir: /var/lib/alertd\n", live)
        self.assertFalse([line for line in live if "sha256" in line or "secret" in line], "a secret in the default config")
        check = run([self.path("/usr/bin/alertd"), "check-config", config], check=False)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn(": ok (0 tokens, 0 webhooks, listen 127.0.0.1:8080)", check.stdout)

    def test_the_units_start_the_packaged_binary(self):
        with open(self.path("/lib/systemd/system/alertd.service")) as f:
            unit = f.read()
        self.assertIn("\nExecStart=/usr/bin/alertd --config /etc/alertd/alertd.yaml --state-dir /var/lib/alertd\n", unit)
        self.assertNotIn("/usr/local/", unit)
        with open(self.path("/usr/lib/sysusers.d/alertd.conf")) as f:
            self.assertRegex(f.read(), r"(?m)^u alertd - ")

    def test_the_binaries_need_no_library_outside_the_packages_it_depends_on(self):
        depends = set(depends_packages(self.deb))
        for tool in ("alertd", "alertctl"):
            binary = self.path(f"/usr/bin/{tool}")
            dynamic = run(["readelf", "-d", binary]).stdout
            needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
            self.assertTrue(needed, f"{tool}: no NEEDED entries read")
            self.assertLessEqual(needed, ALLOWED_NEEDED, f"{tool} needs more than the C/C++ runtimes and its libraries")
            self.assertNotRegex(dynamic, r"\((RUNPATH|RPATH)\)", f"{tool} carries a library search path")
            self.assertNotIn("swift", dynamic.lower())
            # Where this machine resolves them: never the toolchain, always a package in Depends.
            resolved = run(["ldd", binary]).stdout
            self.assertNotIn("not found", resolved)
            self.assertNotIn("/opt/swift", resolved)
            # "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x…)", or "/lib64/ld-linux-x86-64.so.2 (0x…)".
            paths = {}
            for line in resolved.splitlines():
                fields = line.split()
                path = fields[2] if len(fields) > 2 and fields[1] == "=>" else fields[0]
                paths[fields[0] if fields[1] == "=>" else os.path.basename(path)] = path
            for library in needed:
                path = paths[library]
                owner = run(["dpkg", "-S", os.path.realpath(path)], check=False).stdout.split(":")[0]
                if not owner:
                    owner = run(["dpkg", "-S", path]).stdout.split(":")[0]
                self.assertIn(owner, depends, f"{tool}: {library} comes from {owner}, not in Depends")

    def test_alertd_allocates_with_mimalloc(self):
        # Named before libc, mimalloc's malloc and free are alertd's and every library's it
        # loads (libmicrohttpd's, SQLite's, libc's own): the dynamic linker says where it bound them.
        binary = self.path("/usr/bin/alertd")
        traced = subprocess.run([binary, "--version"], env={**os.environ, "LD_DEBUG": "bindings", "LD_BIND_NOW": "1"},
                                capture_output=True, text=True, timeout=60)
        self.assertEqual(traced.returncode, 0, traced.stderr[-2000:])
        bound = {}
        for line in traced.stderr.splitlines():
            match = re.search(r"binding file (\S+) \[0\] to (\S+) \[0\]: normal symbol `(malloc|free|realloc|calloc)'", line)
            if match:
                bound.setdefault((os.path.basename(match.group(1)), match.group(3)), set()).add(os.path.basename(match.group(2)))
        for symbol in ("malloc", "free", "realloc"):
            self.assertEqual(bound.get(("alertd", symbol)), {"libmimalloc.so.2"}, f"alertd's {symbol}: {bound}")
        for library in ("libmicrohttpd.so.12", "libsqlite3.so.0", "libc.so.6"):
            self.assertEqual(bound.get((library, "malloc")), {"libmimalloc.so.2"}, f"{library}'s malloc: {bound}")

    def test_depends_is_what_dpkg_shlibdeps_computes(self):
        depends = deb_field(self.deb, "Depends")
        # Versioned, as from the shlibs/symbols files: libc6 (>= 2.xx) and so on.
        for package in ("libc6", "libmicrohttpd12", "libsqlite3-0", "libstdc++6", "libgcc-s1", "zlib1g"):
            self.assertRegex(depends, rf"(^|, ){re.escape(package)} \(>= [^)]+\)", depends)
        self.assertIn("systemd | systemd-standalone-sysusers | systemd-sysusers", depends)

    def test_man_pages_and_completions_come_from_the_binaries(self):
        for page, name in (("/usr/share/man/man8/alertd.8.gz", "alertd"), ("/usr/share/man/man1/alertctl.1.gz", "alertctl")):
            text = run(["sh", "-c", f"zcat {self.path(page)}"]).stdout
            self.assertIn(f".Nm {name}", text)
        alertd = run(["sh", "-c", f"zcat {self.path('/usr/share/man/man8/alertd.8.gz')}"]).stdout
        self.assertIn("check-config", alertd)
        # alertctl mcp's page: its tools, from the command's own help (issue 31).
        alertctl = run(["sh", "-c", f"zcat {self.path('/usr/share/man/man1/alertctl.1.gz')}"]).stdout
        self.assertIn("ask_human", alertctl)
        with open(self.path("/usr/share/bash-completion/completions/alertctl")) as f:
            self.assertIn("complete", f.read())
        with open(self.path("/usr/share/zsh/vendor-completions/_alertctl")) as f:
            self.assertTrue(f.readline().startswith("#compdef alertctl"))
        with open(self.path("/usr/share/fish/vendor_completions.d/alertctl.fish")) as f:
            self.assertRegex(f.read(), r"(?m)^complete -c '?alertctl'? ")

    def test_lintian_is_clean(self):
        # Errors, warnings and info; each override in packaging/deb/lintian-overrides says why.
        result = subprocess.run(
            ["lintian", "--display-level", ">=info", "--fail-on", "error,warning,info", self.deb],
            capture_output=True, text=True, timeout=600,
        )
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.strip(), "", result.stdout)


if __name__ == "__main__":
    unittest.main()
