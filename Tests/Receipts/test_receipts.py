"""Signed receipts (SPEC §14) checked by code that is not alertd's: Python's `cryptography`
(Ed25519) and the `rfc8785` package (JCS). Receipts signed by alertd's own receipt code
(AlertdReceipts, through the receipts-sample executable: chosen alerts, random content), and
receipts a real alertd wrote as it decided alerts, on SQLite and on two instances sharing a
throwaway PostgreSQL cluster (Tests/Push's); this tier verifies every signature,
content_sha256 (from the alert as GET returns it) and the hash chain itself, reads the keys
`GET /v1/keys` lists, and holds `alertctl audit export` and `alertctl audit verify` to the
same answers, tampered files included — and to receipts this tier signs itself.

ALERTD_BIN, ALERTCTL_BIN and RECEIPTS_SAMPLE_BIN name the binaries (default: the debug build).
"""
import base64
import copy
import ctypes
import importlib.util
import hashlib
import json
import math
import os
import random
import re
import signal
import stat
import struct
import subprocess
import tempfile
import threading
import unittest
import urllib.request

import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# The push tier's throwaway PostgreSQL cluster and alertd runner, loaded under a name of its own.
_spec = importlib.util.spec_from_file_location("push_support", os.path.join(REPO, "Tests", "Push", "support.py"))
push_support = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(push_support)


def binary(variable, name):
    return os.path.abspath(os.path.join(REPO, os.environ.get(variable, f".build/debug/{name}")))


ALERTD_BIN = binary("ALERTD_BIN", "alertd")
ALERTCTL_BIN = binary("ALERTCTL_BIN", "alertctl")
SAMPLE_BIN = binary("RECEIPTS_SAMPLE_BIN", "receipts-sample")
ZEROS = "0" * 64
CONTENT = ["client", "title", "message", "style", "buttons", "priority", "quorum", "fields", "metadata", "posted_by", "created_at"]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def raw_public(public_key):
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def thumbprint(public_key):
    """RFC 7638's JWK thumbprint of an Ed25519 key (RFC 8037 §2), as this tier computes it."""
    members = {"crv": "Ed25519", "kty": "OKP", "x": b64url(raw_public(public_key))}
    return b64url(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


def jwks(*public_keys):
    return {"keys": [{"kty": "OKP", "crv": "Ed25519", "x": b64url(raw_public(k)), "kid": thumbprint(k)} for k in public_keys]}


def run(*arguments, stdin=None):
    return subprocess.run(list(arguments), capture_output=True, text=True, timeout=60, input=stdin)


def keygen(directory, name="receipts.pem"):
    path = os.path.join(directory, name)
    made = run(ALERTD_BIN, "receipts", "keygen", path)
    if made.returncode != 0:
        raise AssertionError(f"alertd receipts keygen exited {made.returncode}: {made.stderr}")
    with open(path, "rb") as file:
        return path, serialization.load_pem_private_key(file.read(), password=None), made.stdout


# Alerts as the daemon renders them, with what JCS must get right: numbers spelled many ways,
# non-ASCII text, an emoji (a surrogate pair in UTF-16: it orders names differently from UTF-8),
# controls, and names that sort differently by UTF-16 and by code point.
ALERTS = [
    {
        "alert": {
            "id": "01JR0000000000000000000001", "client": "ops", "title": "Deploy build 1187 to production?",
            "message": "Tests passed \u2014 ship it? \U0001F680", "style": "alert",
            "buttons": [{"title": "Deploy", "style": "default"}, {"title": "Cancel", "style": "cancel"}],
            "priority": 5, "quorum": 2,
            "fields": [{"name": "ticket", "label": "Ticket", "placeholder": "OPS-123", "required": True, "max_length": 200, "buttons": ["Deploy"]}],
            "metadata": {"numbers": [333333333.33333329, 1e30, 4.5, 0.002, 1e-27, -0.0, 9007199254740993, 1e21, 1e-7],
                         "\u20ac": "euro", "\r": "cr", "\ufb33": "dalet", "\U0001F600": "grin", "\u0080": "ctl", "text": "\u000f\n\"\\/<"},
            "posted_by": "ci", "created_at": "2026-11-21T19:00:00.000Z", "state": "answered", "position": None,
        },
        "result": {"outcome": "answered", "button": "Deploy", "button_index": 0, "decided_by": "bob",
                   "votes": [{"decided_by": "alice", "button": "Deploy", "button_index": 0, "at": "2026-11-21T19:00:30.000Z", "comment": None, "values": {"ticket": "OPS-1"}},
                             {"decided_by": "bob", "button": "Deploy", "button_index": 0, "at": "2026-11-21T19:01:00.123Z", "comment": "looks good \u2713", "values": {"ticket": "OPS-1"}}],
                   "comment": "looks good \u2713", "values": {"ticket": "OPS-1"}},
        "decided_at": "2026-11-21T19:01:00.123Z",
    },
    {
        "alert": {"id": "01JR0000000000000000000002", "client": "ops", "title": "Disk 91% full", "message": None, "style": "alert",
                  "buttons": [], "priority": 0, "quorum": 1, "fields": [], "metadata": None, "posted_by": None,
                  "created_at": "2026-11-21T19:02:00.000Z"},
        "result": {"outcome": "dismissed"}, "decided_at": "2026-11-21T19:02:02.000Z",
    },
    {
        "alert": {"id": "01JR0000000000000000000003", "client": "deploys", "title": "Rotate keys?", "style": "action_sheet",
                  "buttons": [{"title": "Rotate", "style": "destructive"}], "priority": -3, "quorum": 1, "fields": [],
                  "metadata": {"nested": {"b": [1, {"d": 2.50, "c": 1E2}], "a": True}}, "posted_by": "ops-bot",
                  "created_at": "2026-11-21T19:03:00.000Z"},
        "result": {"outcome": "withdrawn", "decided_by": "ops-bot"}, "decided_at": "2026-11-21T19:04:00.000Z",
    },
    {
        "alert": {"id": "01JR0000000000000000000004", "client": "ops", "title": "Still there?", "message": "", "style": "alert",
                  "buttons": [{"title": "Yes", "style": "default"}], "priority": 100, "quorum": 1, "fields": [], "metadata": {},
                  "posted_by": None, "created_at": "2026-11-21T19:05:00.000Z"},
        "result": {"outcome": "expired"}, "decided_at": "2026-11-21T20:05:00.000Z",
    },
    {
        "alert": {"id": "01JR0000000000000000000005", "client": "ops", "title": "Pay invoice 42?", "message": "\u00e9\u0301 and e\u0301",
                  "style": "alert", "buttons": [{"title": "Pay", "style": "default"}, {"title": "No", "style": "cancel"}],
                  "priority": 1, "quorum": 1, "fields": [], "metadata": {"amount": 1234.5, "currency": "EUR"}, "posted_by": "billing",
                  "created_at": "2026-11-21T19:06:00.000Z"},
        "result": {"outcome": "answered", "button": "No", "button_index": 1, "decided_by": "carol", "comment": None, "values": {},
                   "votes": [{"decided_by": "carol", "button": "No", "button_index": 1, "at": "2026-11-21T19:07:00.000Z", "comment": None, "values": {}}]},
        "decided_at": "2026-11-21T19:07:00.000Z",
    },
]


def sign_with_sample(directory, key_path, alerts=ALERTS, start=None):
    alerts_path = os.path.join(directory, "alerts.jsonl")
    with open(alerts_path, "w", encoding="utf-8") as file:
        for entry in alerts:
            file.write(json.dumps(entry, ensure_ascii=False) + "\n")
    arguments = [SAMPLE_BIN, key_path, alerts_path] + ([str(start[0]), start[1]] if start else [])
    made = run(*arguments)
    if made.returncode != 0:
        raise AssertionError(f"receipts-sample exited {made.returncode}: {made.stderr}")
    return made.stdout.splitlines()


def unsigned_bytes(receipt):
    return rfc8785.dumps({k: v for k, v in receipt.items() if k != "signature"})


def python_signed(receipt, private_key):
    """A receipt this tier signs itself: the JCS of the members, Ed25519, base64url."""
    receipt = dict(receipt)
    receipt.pop("signature", None)
    receipt["key_id"] = thumbprint(private_key.public_key())
    receipt["signature"] = b64url(private_key.sign(rfc8785.dumps(receipt)))
    return receipt


class ReceiptsSignedByAlertd(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="alertd-receipts-")
        self.key_path, self.private_key, self.keygen_output = keygen(self.directory)
        self.public_key = self.private_key.public_key()
        self.lines = sign_with_sample(self.directory, self.key_path)
        self.receipts = [json.loads(line) for line in self.lines]

    def test_keygen_writes_an_ed25519_pkcs8_key_readable_by_its_owner_alone_and_never_replaces_one(self):
        self.assertIsInstance(self.private_key, Ed25519PrivateKey)
        self.assertEqual(stat.S_IMODE(os.stat(self.key_path).st_mode), 0o600)
        with open(self.key_path) as file:
            before = file.read()
        self.assertTrue(before.startswith("-----BEGIN PRIVATE KEY-----\n"), before)
        self.assertIn(f"key_id: {thumbprint(self.public_key)}", self.keygen_output)
        again = run(ALERTD_BIN, "receipts", "keygen", self.key_path)
        self.assertEqual(again.returncode, 1, again.stderr)
        self.assertIn("exists", again.stderr)
        self.assertIn("never replaces a signing key", again.stderr)
        with open(self.key_path) as file:
            self.assertEqual(file.read(), before)

    def test_every_line_is_the_rfc8785_form_of_its_receipt(self):
        self.assertEqual(len(self.receipts), len(ALERTS))
        for line, receipt in zip(self.lines, self.receipts):
            self.assertEqual(line.encode(), rfc8785.dumps(receipt))
            self.assertEqual(set(receipt), {"v", "seq", "alert_id", "client", "content_sha256", "outcome", "button", "button_index",
                                            "decided_by", "votes", "comment", "values", "decided_at", "prev_sha256", "key_id", "signature"})
            self.assertEqual(receipt["v"], 1)

    def test_every_signature_verifies_with_cryptography_over_the_rfc8785_bytes(self):
        for receipt in self.receipts:
            self.assertEqual(receipt["key_id"], thumbprint(self.public_key))
            self.public_key.verify(unb64url(receipt["signature"]), unsigned_bytes(receipt))
            changed = dict(receipt, decided_by="mallory")
            with self.assertRaises(Exception):
                self.public_key.verify(unb64url(receipt["signature"]), unsigned_bytes(changed))

    def test_content_sha256_is_the_hash_of_what_was_asked(self):
        for entry, receipt in zip(ALERTS, self.receipts):
            # JCS's numbers are IEEE doubles (RFC 8785 §3.2.2.3): read every number as one, as
            # alertd does (the package refuses an integer beyond 2^53 rather than round it).
            content = json.loads(json.dumps({name: entry["alert"].get(name) for name in CONTENT}), parse_int=float)
            self.assertEqual(receipt["content_sha256"], hashlib.sha256(rfc8785.dumps(content)).hexdigest(), entry["alert"]["id"])
            self.assertEqual(receipt["alert_id"], entry["alert"]["id"])
            self.assertEqual(receipt["outcome"], entry["result"]["outcome"])
            self.assertEqual(receipt["votes"], entry["result"].get("votes", []))

    def test_the_chain_counts_from_one_and_links_each_receipt_to_the_hash_of_the_one_before(self):
        previous = ZEROS
        for seq, receipt in enumerate(self.receipts, start=1):
            self.assertEqual(receipt["seq"], seq)
            self.assertEqual(receipt["prev_sha256"], previous)
            previous = hashlib.sha256(rfc8785.dumps(receipt)).hexdigest()
        # A resumed chain starts from the head given.
        more = sign_with_sample(self.directory, self.key_path, ALERTS[:1], start=(len(self.receipts), previous))
        self.assertEqual(json.loads(more[0])["seq"], len(self.receipts) + 1)
        self.assertEqual(json.loads(more[0])["prev_sha256"], previous)


def random_value(rng, depth=0):
    """Random JSON: strings of code points from every plane (controls and astral ones, no
    surrogates), doubles from random bits, integers, nested arrays and objects."""
    kind = rng.randrange(6 if depth < 4 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return random_string(rng)
    if kind == 2:
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        return value if math.isfinite(value) else 0.5
    if kind == 3:
        return rng.choice([rng.randrange(-10**6, 10**6), rng.randrange(-2**53 + 1, 2**53), rng.randrange(2**53, 2**64)])
    if kind == 4:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {random_string(rng): random_value(rng, depth + 1) for _ in range(rng.randrange(6))}


def random_string(rng):
    ranges = [(0, 0x7F), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF), (0x10000, 0x10FFFF)]
    return "".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randrange(9)))


class RandomContent(unittest.TestCase):
    def test_content_sha256_of_random_alerts_is_what_rfc8785_computes(self):
        directory = tempfile.mkdtemp(prefix="alertd-receipts-random-")
        key_path, private_key, _ = keygen(directory)
        rng = random.Random(47)
        alerts = []
        for index in range(400):
            alert = copy.deepcopy(ALERTS[index % len(ALERTS)])
            alert["alert"]["id"] = f"01JRANDOM{index:017d}"
            alert["alert"]["title"] = random_string(rng) or "t"
            alert["alert"]["message"] = random_string(rng)
            alert["alert"]["metadata"] = {random_string(rng): random_value(rng) for _ in range(rng.randrange(1, 6))}
            alerts.append(alert)
        receipts = [json.loads(line) for line in sign_with_sample(directory, key_path, alerts)]
        self.assertEqual(len(receipts), len(alerts))
        public_key = private_key.public_key()
        for entry, receipt in zip(alerts, receipts):
            content = json.loads(json.dumps({name: entry["alert"].get(name) for name in CONTENT}), parse_int=float)
            self.assertEqual(receipt["content_sha256"], hashlib.sha256(rfc8785.dumps(content)).hexdigest(),
                             json.dumps(entry["alert"]["metadata"]))
            public_key.verify(unb64url(receipt["signature"]), unsigned_bytes(receipt))


class AuditVerify(unittest.TestCase):
    """`alertctl audit verify` against receipts alertd signed and this tier tampered with or signed."""

    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="alertd-audit-")
        self.key_path, self.private_key, _ = keygen(self.directory)
        self.lines = sign_with_sample(self.directory, self.key_path)
        self.keys_path = self.write("keys.json", json.dumps(jwks(self.private_key.public_key())))

    def write(self, name, text):
        path = os.path.join(self.directory, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return path

    def verify(self, lines, *extra):
        path = self.write("audit.jsonl", "".join(line + "\n" for line in lines))
        return run(ALERTCTL_BIN, "audit", "verify", path, "--keys", self.keys_path, *extra)

    def test_the_receipts_verify_with_a_key_set_this_tier_wrote(self):
        checked = self.verify(self.lines)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        self.assertIn(f"ok: {len(self.lines)} receipts, seq 1 to {len(self.lines)}", checked.stdout)
        report = json.loads(self.verify(self.lines, "--json").stdout)
        self.assertTrue(report["ok"])
        self.assertEqual(report["head_sha256"], hashlib.sha256(self.lines[-1].encode()).hexdigest())
        self.assertEqual(report["key_ids"], [thumbprint(self.private_key.public_key())])

    def test_receipts_this_tier_signs_with_the_deployment_key_verify_too(self):
        # The chain continued by Python: alertctl agrees with another implementation's bytes.
        last = json.loads(self.lines[-1])
        extra = python_signed(dict(last, seq=last["seq"] + 1, prev_sha256=hashlib.sha256(self.lines[-1].encode()).hexdigest(),
                                   alert_id="01JPYTHON", decided_at="2026-11-22T00:00:00.000Z"), self.private_key)
        checked = self.verify(self.lines + [rfc8785.dumps(extra).decode()])
        self.assertEqual(checked.returncode, 0, checked.stderr)
        # And in a spelling of its own (other member order, spaces): the signature covers values, not bytes.
        loose = json.dumps(extra, indent=None, separators=(", ", ": "), ensure_ascii=True)
        self.assertEqual(self.verify(self.lines + [loose]).returncode, 0)

    def failure(self, lines):
        checked = self.verify(lines)
        self.assertEqual(checked.returncode, 1, f"stdout: {checked.stdout}\nstderr: {checked.stderr}")
        report = json.loads(self.verify(lines, "--json").stdout)
        self.assertFalse(report["ok"])
        return checked.stderr, report["failure"]

    def test_a_changed_field_is_named_as_a_bad_signature(self):
        lines = list(self.lines)
        receipt = json.loads(lines[2])
        receipt["outcome"] = "answered" if receipt["outcome"] != "answered" else "withdrawn"
        lines[2] = rfc8785.dumps(receipt).decode()
        stderr, failure = self.failure(lines)
        self.assertIn("line 3: FAILED at receipt 3 (seq 3, alert 01JR0000000000000000000003): bad signature", stderr)
        self.assertEqual((failure["line"], failure["seq"], failure["reason"]), (3, 3, "bad-signature"))

    def test_a_removed_line_is_named_as_a_gap(self):
        stderr, failure = self.failure(self.lines[:1] + self.lines[2:])
        self.assertIn("line 2: FAILED at receipt 2 (seq 3", stderr)
        self.assertIn("gap in seq: expected 2, found 3", stderr)
        self.assertEqual(failure["reason"], "seq")

    def test_a_reordered_pair_is_named_at_the_first_of_them(self):
        lines = list(self.lines)
        lines[1], lines[2] = lines[2], lines[1]
        stderr, failure = self.failure(lines)
        self.assertIn("line 2: FAILED at receipt 2 (seq 3", stderr)
        self.assertEqual((failure["line"], failure["reason"]), (2, "seq"))

    def test_a_receipt_under_an_unknown_key_is_named(self):
        stranger = Ed25519PrivateKey.generate()
        last = json.loads(self.lines[-1])
        forged = python_signed(dict(last, seq=last["seq"] + 1, prev_sha256=hashlib.sha256(self.lines[-1].encode()).hexdigest()), stranger)
        stderr, failure = self.failure(self.lines + [rfc8785.dumps(forged).decode()])
        self.assertIn(f"unknown key: key_id {thumbprint(stranger.public_key())} is not in the key set", stderr)
        self.assertEqual((failure["line"], failure["reason"]), (len(self.lines) + 1, "unknown-key"))

    def test_a_receipt_rewritten_and_signed_again_breaks_the_next_link(self):
        lines = list(self.lines)
        rewritten = python_signed(dict(json.loads(lines[1]), decided_by="mallory"), self.private_key)
        lines[1] = rfc8785.dumps(rewritten).decode()
        stderr, failure = self.failure(lines)
        self.assertIn("line 3: FAILED at receipt 3", stderr)
        self.assertIn("broken chain", stderr)
        self.assertEqual(failure["reason"], "broken-link")

    def test_keys_that_do_not_read_are_bad_usage(self):
        self.keys_path = self.write("keys.json", '{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "short"}]}')
        checked = self.verify(self.lines)
        self.assertEqual(checked.returncode, 64, checked.stderr)
        self.assertIn("--keys", checked.stderr)


def _die_with_parent():
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except OSError:
        pass


class Daemon:
    """The real alertd on 127.0.0.1, a free port, with a config and a state dir."""

    def __init__(self, directory, config=""):
        self.directory = directory
        self.config_path = os.path.join(directory, "alertd.yaml")
        with open(self.config_path, "w") as file:
            file.write(config)
        self.lines = []
        self.port = None
        listening = threading.Event()
        self.process = subprocess.Popen(
            [ALERTD_BIN, "--config", self.config_path, "--listen", "127.0.0.1:0", "--state-dir", os.path.join(directory, "state")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=_die_with_parent,
            env={k: v for k, v in os.environ.items() if not k.startswith(("LISTEN_", "NOTIFY_SOCKET", "WATCHDOG_"))})

        def read():
            for raw in self.process.stderr:
                line = raw.decode(errors="replace")
                self.lines.append(line)
                match = re.search(r'msg="?listening"? .*address="?[0-9.]+:(\d+)', line)
                if match:
                    self.port = int(match.group(1))
                    listening.set()

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not listening.wait(30):
            self.stop()
            raise RuntimeError("alertd did not start listening:\n" + "".join(self.lines))
        self.base = f"http://127.0.0.1:{self.port}"

    def get(self, path):
        with urllib.request.urlopen(self.base + path, timeout=10) as response:
            return response.status, json.loads(response.read())

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        # The reader ends at the pipe's end of file; then the pipe is closed.
        self.reader.join(10)
        self.process.stderr.close()


class KeysEndpoint(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.mkdtemp(prefix="alertd-keys-")

    def test_v1_keys_lists_the_key_file_then_the_previous_keys_as_a_jwks(self):
        key_path, private_key, _ = keygen(self.directory, "current.pem")
        old_path, old_key, _ = keygen(self.directory, "old.pem")
        public_old = os.path.join(self.directory, "old.pub.pem")
        with open(public_old, "wb") as file:
            file.write(old_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
        daemon = Daemon(self.directory, f"receipts:\n  key_file: {key_path}\n  previous_keys: [{public_old}, {old_path}]\n")
        try:
            status, body = daemon.get("/v1/keys")
        finally:
            daemon.stop()
        self.assertEqual(status, 200)
        expected = jwks(private_key.public_key(), old_key.public_key())["keys"]
        self.assertEqual([{k: key[k] for k in ("kty", "crv", "x", "kid")} for key in body["keys"]], expected)
        # The listed key verifies what the key file signs.
        listed = Ed25519PublicKey.from_public_bytes(unb64url(body["keys"][0]["x"]))
        listed.verify(private_key.sign(b"receipt"), b"receipt")

    def test_sqlite_makes_its_key_in_state_dir_once_and_alertctl_verifies_with_the_daemons_keys(self):
        daemon = Daemon(self.directory)
        try:
            _, first = daemon.get("/v1/keys")
        finally:
            daemon.stop()
        key_path = os.path.join(self.directory, "state", "receipts-key.pem")
        self.assertEqual(stat.S_IMODE(os.stat(key_path).st_mode), 0o600)
        with open(key_path, "rb") as file:
            private_key = serialization.load_pem_private_key(file.read(), password=None)
        self.assertEqual(first["keys"][0]["kid"], thumbprint(private_key.public_key()))
        self.assertEqual(len(first["keys"]), 1)
        daemon = Daemon(self.directory)
        try:
            _, second = daemon.get("/v1/keys")
            self.assertEqual(second, first)
            lines = sign_with_sample(self.directory, key_path)
            path = os.path.join(self.directory, "audit.jsonl")
            with open(path, "w") as file:
                file.write("\n".join(lines) + "\n")
            for keys in (daemon.base, daemon.base + "/v1/keys"):
                checked = run(ALERTCTL_BIN, "audit", "verify", path, "--keys", keys)
                self.assertEqual(checked.returncode, 0, checked.stderr)
            # Without --keys: the daemon of --url.
            checked = run(ALERTCTL_BIN, "--url", daemon.base, "audit", "verify", path)
            self.assertEqual(checked.returncode, 0, checked.stderr)
            self.assertIn(f"ok: {len(lines)} receipts", checked.stdout)
        finally:
            daemon.stop()


def verify_chain(test, lines, public_keys, first_seq=1):
    """Every line is the RFC 8785 form of its receipt, signed by the key its key_id names,
    seq follows seq, and prev_sha256 is the hash of the line before (64 zeros for seq 1)."""
    previous = ZEROS if first_seq == 1 else None
    for seq, line in enumerate(lines, start=first_seq):
        receipt = json.loads(line)
        test.assertEqual(line.encode(), rfc8785.dumps(receipt), "not canonical")
        test.assertEqual(receipt["seq"], seq)
        if previous is not None:
            test.assertEqual(receipt["prev_sha256"], previous, f"seq {seq}: broken link")
        public_keys[receipt["key_id"]].verify(unb64url(receipt["signature"]), unsigned_bytes(receipt))
        previous = hashlib.sha256(line.encode()).hexdigest()
    return previous


def content_sha256(alert):
    """What the receipt of `alert` (as GET returns it) must hash: its asked-for members, every
    number read as a double."""
    content = json.loads(json.dumps({name: alert.get(name) for name in CONTENT}), parse_int=float)
    return hashlib.sha256(rfc8785.dumps(content)).hexdigest()


def daemon_keys(daemon):
    body = daemon.request("GET", "/v1/keys").json()
    return {key["kid"]: Ed25519PublicKey.from_public_bytes(unb64url(key["x"])) for key in body["keys"]}


def audit_lines(daemon):
    lines, after = [], 0
    while True:
        page = daemon.request("GET", f"/v1/audit?after={after}&limit=3").json()
        if not page["receipts"]:
            return lines
        lines += [rfc8785.dumps(receipt).decode() for receipt in page["receipts"]]
        after = page["next_after"]


DEPLOY = {"title": "Deploy build 4711 \u2014 \U0001F680?", "message": "checks \u2713",
          "buttons": [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}],
          "fields": [{"name": "ticket", "label": "Ticket", "required": True}],
          "metadata": {"build": 4711, "ratio": 0.25, "big": 1e21, "small": 1e-7, "neg": -0.0, "ints": [1, 10.0, 1E2],
                       "\u20ac": "euro", "nested": {"b": [True, None], "a": "\u00e9"}}}


class ReceiptsFromADaemon(unittest.TestCase):
    """Receipts a real alertd wrote as it decided alerts, checked here with cryptography and rfc8785."""

    def decide_some(self, daemons, client="ops"):
        """Alerts decided every way, through the daemons in turn: answered with words, withdrawn,
        expired, dismissed. Returns each alert as GET returns it once decided."""
        decided = []
        for index, daemon in enumerate(daemons * 2):
            posted = daemon.request("POST", f"/v1/clients/{client}-{index}/alerts", DEPLOY).json()
            path = f"/v1/clients/{client}-{index}/alerts/{posted['id']}"
            answered = daemon.request("POST", path + "/choice", {"button": "Deploy", "comment": f"go {index}", "values": {"ticket": f"OPS-{index}"}})
            self.assertEqual(answered.status, 200, answered.body)
            decided.append((daemon, path))
            other = daemon.request("POST", f"/v1/clients/{client}-{index}/alerts", dict(DEPLOY, title="Withdraw me")).json()
            self.assertEqual(daemon.request("DELETE", f"/v1/clients/{client}-{index}/alerts/{other['id']}").status, 200)
            decided.append((daemon, f"/v1/clients/{client}-{index}/alerts/{other['id']}"))
        daemon = daemons[0]
        expiring = daemon.request("POST", f"/v1/clients/{client}-x/alerts", {"title": "Expire", "buttons": [{"title": "OK"}], "expires_in": 1}).json()
        notice = daemon.request("POST", f"/v1/clients/{client}-n/alerts", {"title": "Notice", "dismiss_after": 1}).json()
        for alert, c in ((expiring, "x"), (notice, "n")):
            path = f"/v1/clients/{client}-{c}/alerts/{alert['id']}"
            polled = daemon.request("GET", path + "?wait=20").json()
            self.assertIn(polled["state"], ("expired", "dismissed"), polled)
            decided.append((daemon, path))
        alerts = []
        for daemon, path in decided:
            alert = daemon.request("GET", path).json()
            receipt = daemon.request("GET", path + "/receipt")
            self.assertEqual(receipt.status, 200, receipt.body)
            # The long-poll answer of a terminal alert carries the same receipt.
            self.assertEqual(rfc8785.dumps(daemon.request("GET", path + "?wait=1").json()["receipt"]), receipt.body)
            alerts.append((alert, json.loads(receipt.body), receipt.body))
        return alerts

    def check(self, daemons, alerts):
        keys = daemon_keys(daemons[0])
        for daemon in daemons[1:]:
            self.assertEqual(daemon_keys(daemon), keys, "every instance lists the same keys")
        for alert, receipt, body in alerts:
            self.assertEqual(body, rfc8785.dumps(receipt), "GET …/receipt is not canonical")
            keys[receipt["key_id"]].verify(unb64url(receipt["signature"]), unsigned_bytes(receipt))
            self.assertEqual(receipt["content_sha256"], content_sha256(alert), alert["id"])
            result = alert["result"]
            self.assertEqual((receipt["alert_id"], receipt["client"], receipt["outcome"], receipt["decided_at"]),
                             (alert["id"], alert["client"], result["outcome"], alert["decided_at"]))
            self.assertEqual((receipt["button"], receipt["button_index"], receipt["decided_by"], receipt["comment"], receipt["values"]),
                             (result["button"], result["button_index"], result["decided_by"], result["comment"], result["values"]))
            self.assertEqual(receipt["votes"], alert["votes"])
        lines = audit_lines(daemons[-1])
        self.assertEqual(len(lines), len(alerts))
        verify_chain(self, lines, keys)
        self.assertEqual(sorted(json.loads(line)["alert_id"] for line in lines), sorted(alert["id"] for alert, _, _ in alerts))
        return lines, keys

    def export_and_verify(self, daemon, lines, directory):
        """alertctl audit export writes the audit log's lines; resumed, it appends the rest;
        alertctl audit verify checks the whole, and names each tampering."""
        export = run(ALERTCTL_BIN, "--url", daemon.base, "audit", "export")
        self.assertEqual(export.returncode, 0, export.stderr)
        self.assertEqual(export.stdout.splitlines(), lines)
        self.assertIn(f"seq 1 to {len(lines)}; resume with --after {len(lines)}", export.stderr)
        resumed = run(ALERTCTL_BIN, "--url", daemon.base, "audit", "export", "--after", "3")
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        self.assertEqual(resumed.stdout.splitlines(), lines[3:])
        path = os.path.join(directory, "audit.jsonl")
        with open(path, "w") as file:
            file.write("".join(line + "\n" for line in lines[:3]) + resumed.stdout)
        checked = run(ALERTCTL_BIN, "--url", daemon.base, "audit", "verify", path)
        self.assertEqual(checked.returncode, 0, checked.stderr)
        self.assertIn(f"ok: {len(lines)} receipts, seq 1 to {len(lines)}", checked.stdout)

        def tampered(changed, expected):
            with open(path, "w") as file:
                file.write("".join(line + "\n" for line in changed))
            result = run(ALERTCTL_BIN, "--url", daemon.base, "audit", "verify", path)
            self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
            self.assertIn(expected, result.stderr)

        edited = json.loads(lines[1])
        edited["decided_by"] = "mallory"
        tampered(lines[:1] + [rfc8785.dumps(edited).decode()] + lines[2:],
                 f"line 2: FAILED at receipt 2 (seq 2, alert {edited['alert_id']}): bad signature")
        tampered(lines[:1] + lines[2:], "gap in seq: expected 2, found 3")
        tampered([lines[0], lines[2], lines[1]] + lines[3:], "line 2: FAILED at receipt 2 (seq 3")
        stranger = Ed25519PrivateKey.generate()
        last = json.loads(lines[-1])
        forged = python_signed(dict(last, seq=last["seq"] + 1, prev_sha256=hashlib.sha256(lines[-1].encode()).hexdigest()), stranger)
        tampered(lines + [rfc8785.dumps(forged).decode()], f"unknown key: key_id {thumbprint(stranger.public_key())}")

    def test_an_alertd_on_sqlite_writes_receipts_that_verify_here(self):
        daemon = push_support.Daemon("")
        self.addCleanup(daemon.remove)
        alerts = self.decide_some([daemon])
        lines, keys = self.check([daemon], alerts)
        with open(os.path.join(daemon.directory, "state", "receipts-key.pem"), "rb") as file:
            own = serialization.load_pem_private_key(file.read(), password=None)
        self.assertEqual(list(keys), [thumbprint(own.public_key())], "signed with the key SQLite made in state_dir")
        self.export_and_verify(daemon, lines, daemon.directory)
        # A restart goes on with the chain: the next receipt links to the last one before it.
        daemon.terminate()
        daemon = daemon.restart()
        more = self.decide_some([daemon], client="after")
        lines, _ = self.check([daemon], alerts + more)

    def test_two_instances_on_postgresql_write_one_chain_that_verifies_here(self):
        postgres = push_support.Postgres()
        self.addCleanup(postgres.stop)
        key_path, private_key, _ = keygen(postgres.directory)
        store = f"store:\n  backend: postgres\n  postgres:\n    url: \"{postgres.url}\"\n    pool_size: 4\nreceipts:\n  key_file: {key_path}\n"
        first = push_support.Daemon(store)
        self.addCleanup(first.remove)
        second = push_support.Daemon(store)
        self.addCleanup(second.remove)
        alerts = self.decide_some([first, second])
        lines, keys = self.check([first, second], alerts)
        self.assertEqual(list(keys), [thumbprint(private_key.public_key())])
        self.export_and_verify(second, lines, postgres.directory)

    def test_postgresql_without_a_key_file_is_refused(self):
        # Refused before any connection is made: no database needed.
        directory = tempfile.mkdtemp(prefix="alertd-receipts-refused-")
        config = os.path.join(directory, "alertd.yaml")
        with open(config, "w") as file:
            file.write("store:\n  backend: postgres\n  postgres:\n    url: \"postgres://alertd@127.0.0.1:1/alertd\"\n")
        started = run(ALERTD_BIN, "--config", config, "--listen", "127.0.0.1:0")
        self.assertEqual(started.returncode, 1, started.stderr)
        self.assertIn("receipts.key_file: required with store.backend: postgres", started.stderr)
        checked = run(ALERTD_BIN, "check-config", config)
        self.assertNotEqual(checked.returncode, 0)
        self.assertIn("receipts.key_file: required with store.backend: postgres", checked.stdout + checked.stderr)


if __name__ == "__main__":
    unittest.main()
