"""The OpenAPI document (openapi/alertd.yaml) against the OpenAPI 3.1 schema and the real alertd.

Run by `make test` with the pinned packages of openapi/requirements.txt in .venv/:

    ALERTD_BIN=.build/debug/alertd .venv/bin/python -m unittest discover -s Tests/OpenAPI -v

1. The document is valid OpenAPI 3.1 (openapi-spec-validator), and what alertd
   serves at /v1/openapi.json is that document (Yams' reading of the YAML is
   PyYAML's).
2. schemathesis runs every phase (examples, coverage, fuzzing, stateful) and
   every check over every operation against a running alertd, with an admin
   token: any failure fails the test. Bounded by SCHEMATHESIS_MAX_EXAMPLES
   (default 25 per operation) and a time budget for the fuzzing and stateful
   phases (SCHEMATHESIS_MAX_TIME, default 60 s); the seed is fixed
   (SCHEMATHESIS_SEED) so a failure can be replayed.

The daemon's config (below) denies every callback target: the generated
`callback_url`s and webhook URLs name hosts on the internet, and no test may
send them anything (push endpoints included). The Alertmanager receiver and Web
Push are on (so schemathesis exercises them), with silences going to a closed port
on 127.0.0.1.
"""

import ctypes
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from referencing import Registry, Resource

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ALERTD_BIN = os.path.abspath(os.path.join(REPO, os.environ.get("ALERTD_BIN", ".build/debug/alertd")))
DOCUMENT = os.path.join(REPO, "openapi", "alertd.yaml")
SCHEMATHESIS_CONFIG = os.path.join(os.path.dirname(__file__), "schemathesis.toml")
SCHEMATHESIS_HOOKS = os.path.join(os.path.dirname(__file__), "schemathesis_hooks.py")


def _die_with_parent():
    # PR_SET_PDEATHSIG = 1: if the test process dies, the kernel kills the daemon.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Daemon:
    """The real alertd on 127.0.0.1, a free port, a temp state dir."""

    def __init__(self, config):
        if not os.access(ALERTD_BIN, os.X_OK):
            raise RuntimeError(f"no alertd binary at {ALERTD_BIN}: build it (swift build) or set ALERTD_BIN")
        self.directory = tempfile.mkdtemp(prefix="alertd-openapi-")
        config_path = os.path.join(self.directory, "alertd.yaml")
        with open(config_path, "w") as file:
            file.write(config)
        self.lines = []
        self.port = None
        listening = threading.Event()
        self.process = subprocess.Popen(
            [ALERTD_BIN, "--config", config_path, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(self.directory, "state")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
            env={k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))},
        )

        def read():
            for raw in self.process.stderr:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                match = re.search(r'msg="?listening"? .*address="?[0-9.]+:(\d+)', line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                    listening.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not listening.wait(20):
            self.stop()
            raise RuntimeError("alertd did not start listening:\n" + "".join(self.lines))
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path, headers=None):
        request = urllib.request.Request(self.base + path, headers=headers or {})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()

    def post(self, path, body, headers=None):
        """POSTs JSON; the status, whatever it is."""
        data = json.dumps(body).encode()
        request = urllib.request.Request(
            self.base + path, data=data, method="POST", headers={"Content-Type": "application/json", **(headers or {})}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def stop(self):
        """SIGTERM; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.reader.join(10)
        self.process.stderr.close()
        shutil.rmtree(self.directory, ignore_errors=True)
        return self.process.returncode


class OpenAPITests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.token = "alertd_" + secrets.token_urlsafe(32)
        digest = hashlib.sha256(cls.token.encode()).hexdigest()
        cls.daemon = Daemon(
            f"""
log: {{ level: info }}
durability: normal
limits:
  max_wait_seconds: 1
auth:
  tokens:
    - {{ name: schemathesis, sha256: "{digest}", roles: [admin], clients: ["*"] }}
callbacks:
  signing_secret: openapi-tests
  deny: ["*", "0.0.0.0/0", "::/0"]
integrations:
  alertmanager:
    # Nothing listens on the discard port: a chosen silence is retried, never sent anywhere.
    url: "http://127.0.0.1:9"
# Web Push on, so its endpoints answer as they do in use (callbacks.deny refuses every endpoint).
push:
  subject: "mailto:openapi@example.com"
"""
        )

    @classmethod
    def tearDownClass(cls):
        status = cls.daemon.stop()
        if status != 0:
            raise AssertionError(f"alertd exited {status}:\n" + "".join(cls.daemon.lines))

    def test_document_is_valid_openapi_3_1(self):
        with open(DOCUMENT) as file:
            document = yaml.safe_load(file)
        validate(document)
        self.assertEqual(document["openapi"], "3.1.0")

    def test_served_document_is_the_yaml_file_as_json(self):
        with open(DOCUMENT) as file:
            document = yaml.safe_load(file)
        # No token: the document is served to anyone.
        status, headers, body = self.daemon.get("/v1/openapi.json")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json")
        served = json.loads(body)
        self.assertEqual(served, document)
        # The same keys in the same order, as written.
        self.assertEqual(list(served["paths"]), list(document["paths"]))
        validate(served)

    def test_schema_and_daemon_agree_on_null_members_and_the_reserved_metadata_key(self):
        # `null` stands for an absent optional member (NewAlert's description): the schema
        # must take it wherever alertd does. schemathesis's fuzzing found `metadata: null`
        # refused by the schema (its `not: {required: [alertmanager]}` held for null) and
        # taken by alertd; a fuzzer finds such a case only now and then, this test always.
        with open(DOCUMENT) as file:
            document = yaml.safe_load(file)
        registry = Registry().with_resource(
            "urn:alertd", Resource.from_contents({"$schema": "https://json-schema.org/draft/2020-12/schema", **document})
        )
        validator = Draft202012Validator({"$ref": "urn:alertd#/components/schemas/NewAlert"}, registry=registry)
        optional = [name for name in document["components"]["schemas"]["NewAlert"]["properties"] if name != "title"]
        self.assertIn("metadata", optional)
        cases = [({"title": "Deploy?", name: None}, True) for name in optional] + [
            ({"title": "Deploy?", "metadata": {"ticket": 7}}, True),
            ({"title": "Deploy?", "metadata": {"alertmanager": {}}}, False),
        ]
        headers = {"Authorization": f"Bearer {self.token}"}
        for body, valid in cases:
            with self.subTest(body=body):
                errors = [error.message for error in validator.iter_errors(body)]
                self.assertEqual(not errors, valid, f"the schema: {errors}")
                status = self.daemon.post("/v1/clients/openapi-nulls/alerts", body, headers)
                self.assertEqual(status, 201 if valid else 400, "alertd")

    def test_schemathesis_finds_nothing(self):
        max_examples = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "25")
        max_time = os.environ.get("SCHEMATHESIS_MAX_TIME", "60")
        seed = os.environ.get("SCHEMATHESIS_SEED", "20261121")
        report = tempfile.mkdtemp(prefix="schemathesis-")
        command = [
            os.path.join(os.path.dirname(sys.executable), "schemathesis"),
            "--config-file",
            SCHEMATHESIS_CONFIG,
            "run",
            f"{self.daemon.base}/v1/openapi.json",
            "--url",
            self.daemon.base,
            "--header",
            f"Authorization: Bearer {self.token}",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            max_examples,
            "--max-time",
            max_time,
            "--seed",
            seed,
            "--generation-database",
            "none",
            "--request-timeout",
            "10",
            # One worker: Debian 12's Python 3.11.2 can fail "AST constructor recursion depth
            # mismatch" when two threads parse source at once (hypothesis does, describing
            # lambdas); fixed in later 3.11 releases.
            "--workers",
            "1",
            "--no-color",
            "--report",
            "junit",
            "--report-dir",
            report,
        ]
        started = time.monotonic()
        run = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "SCHEMATHESIS_HOOKS": SCHEMATHESIS_HOOKS},
            timeout=int(max_time) + 300,
        )
        elapsed = time.monotonic() - started
        print(run.stdout.replace(self.token, "<token>"))
        print(f"schemathesis: exit {run.returncode} after {elapsed:.0f} s (seed {seed}, max examples {max_examples})")
        shutil.rmtree(report, ignore_errors=True)
        self.assertEqual(run.returncode, 0, "schemathesis found failures (above)")


if __name__ == "__main__":
    unittest.main()
