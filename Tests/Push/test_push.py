"""Web Push (SPEC §11) against a stand-in push service that does what a real one does
(pushservice.py: it checks RFC 8030's headers and the VAPID JWT with the key alertd publishes,
and decrypts with Mozilla's http_ece), on the real alertd binary (ALERTD_BIN), on SQLite and
on PostgreSQL with two instances. The stand-in is first checked against pywebpush, a Web Push
sender nobody here wrote.

    ALERTD_BIN=.build/debug/alertd .venv/bin/python -m unittest discover -s Tests/Push -v
"""
import json
import os
import secrets
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))

import pywebpush  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from py_vapid import Vapid02  # noqa: E402

from pushservice import PushService, b64url  # noqa: E402
from support import ALERTD_BIN, Daemon, Postgres, token_entry, wait_for  # noqa: E402

OPERATOR = secrets.token_urlsafe(24)
POSTER = secrets.token_urlsafe(24)


def config(extra=""):
    return (
        "log:\n  level: info\n"
        "callbacks:\n  allow: [\"127.0.0.0/8\"]\n  retry_initial_seconds: 0.2\n  retry_max_interval_seconds: 1\n"
        'push:\n  subject: "mailto:ops@example.com"\n  allow_http: true\n'
        "auth:\n  tokens:\n"
        + token_entry("alice", OPERATOR, ["answer"])
        + token_entry("deployer", POSTER, ["post"])
        + extra
    )


DEPLOY = {"title": "Deploy 4.2 to production?", "message": "build 1234", "priority": 60, "buttons": [{"title": "Deploy"}, {"title": "Cancel", "style": "cancel"}]}


class StandInTests(unittest.TestCase):
    """The stand-in is only worth what it checks: a reference sender passes, a wrong key does not."""

    def setUp(self):
        self.service = PushService().start()
        self.addCleanup(self.service.stop)

    def reference_push(self, device, payload, vapid_key):
        pem = vapid_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        return pywebpush.webpush(
            subscription_info={"endpoint": self.service.endpoint(device), "keys": device.keys()},
            data=payload,
            vapid_private_key=Vapid02.from_pem(pem),
            vapid_claims={"sub": "mailto:test@example.com"},
            content_encoding="aes128gcm",
            ttl=60,
        )

    def test_a_reference_sender_is_accepted_and_decrypted(self):
        key = ec.generate_private_key(ec.SECP256R1())
        self.service.expected_key = b64url(key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint))
        device = self.service.device("reference")
        answer = self.reference_push(device, json.dumps({"hello": "world"}), key)
        self.assertEqual(answer.status_code, 201)
        received = self.service.wait_for(lambda r: r, what="the reference push")
        self.assertEqual(received[0].json(), {"hello": "world"})

    def test_a_key_other_than_the_published_one_is_refused(self):
        key = ec.generate_private_key(ec.SECP256R1())
        self.service.expected_key = b64url(os.urandom(65))  # what alertd would publish: not this key
        device = self.service.device("stranger")
        with self.assertRaises(pywebpush.WebPushException) as refused:
            self.reference_push(device, "x", key)
        self.assertEqual(refused.exception.response.status_code, 400)
        self.assertEqual(self.service.received, [])
        self.assertIn("is not the key alertd publishes", self.service.refused[0][1])


class PushTests(unittest.TestCase):
    def setUp(self):
        self.service = PushService().start()
        self.addCleanup(self.service.stop)
        self.daemon = Daemon(config())
        self.addCleanup(self.daemon.remove)
        key = self.daemon.request("GET", "/v1/push/key", token=OPERATOR)
        self.assertEqual(key.status, 200, key.body)
        self.service.expected_key = key.json()["public_key"]

    def subscribe(self, daemon, device, answer=True, clients=("ops",)):
        made = daemon.request(
            "POST",
            "/v1/push/subscriptions",
            {"endpoint": self.service.endpoint(device), "keys": device.keys(), "clients": list(clients), "answer": answer, "expirationTime": None},
            token=OPERATOR,
        )
        self.assertIn(made.status, (200, 201), made.body)
        return made.json()

    def post(self, daemon, alert=DEPLOY, client="ops"):
        posted = daemon.request("POST", f"/v1/clients/{client}/alerts", alert, token=POSTER)
        self.assertEqual(posted.status, 201, posted.body)
        return posted.json()

    def pushes(self, device, type_):
        return lambda received: [r for r in received if r.device == device.name and r.status < 300 and r.json()["type"] == type_]

    def test_a_displayed_alert_is_pushed_within_a_second_answered_once_and_closed(self):
        device = self.service.device("phone")
        self.subscribe(self.daemon, device)
        started = time.monotonic()
        alert = self.post(self.daemon)
        push = self.service.wait_for(self.pushes(device, "alert.displayed"), timeout=10, what="the displayed push")[0]
        self.assertLess(push.at - started, 1.0, "pushed within a second of the post")
        payload = push.json()
        self.assertEqual(payload["alert"]["id"], alert["id"])
        self.assertEqual(payload["alert"]["title"], "Deploy 4.2 to production?")
        self.assertEqual([b["title"] for b in payload["alert"]["buttons"]], ["Deploy", "Cancel"])
        self.assertNotIn("metadata", payload["alert"])
        self.assertEqual(push.headers["urgency"], "high")
        self.assertEqual(push.headers["topic"], alert["id"])
        self.assertTrue(payload["answer_url"].startswith("/v1/answers/"))

        answered = self.daemon.request("POST", payload["answer_url"], {"button_index": 0})
        self.assertEqual(answered.status, 200, answered.body)
        self.assertEqual(answered.json()["result"]["decided_by"], "alice")
        again = self.daemon.request("POST", payload["answer_url"], {"button_index": 0})
        self.assertEqual(again.status, 410)
        self.assertEqual(again.json()["code"], "answer-used")

        decided = self.service.wait_for(self.pushes(device, "alert.decided"), timeout=10, what="the decided push")[0]
        self.assertEqual(decided.json()["alert"], {"id": alert["id"], "client": "ops", "state": "answered"})
        self.assertEqual(decided.headers["topic"], alert["id"])
        self.assertEqual(self.service.refused, [])

    def test_a_410_ends_the_subscription(self):
        device = self.service.device("gone")
        self.service.answer_with(device, 410)
        made = self.subscribe(self.daemon, device, answer=False)
        self.post(self.daemon)
        self.service.wait_for(lambda r: [x for x in r if x.status == 410], what="the 410")
        wait_for(
            lambda: made["id"] not in [s["id"] for s in self.daemon.request("GET", "/v1/push/subscriptions", token=OPERATOR).json()["subscriptions"]],
            10,
            "the subscription removed after its 410",
        )

    def test_a_429_is_retried_after_its_retry_after(self):
        device = self.service.device("busy")
        self.service.answer_with(device, (429, {"Retry-After": "2"}), 201)
        self.subscribe(self.daemon, device, answer=False)
        self.post(self.daemon)
        accepted = self.service.wait_for(lambda r: [x for x in r if x.status == 201], timeout=15, what="the retried push")
        first = [x for x in self.service.received if x.status == 429][0]
        self.assertGreaterEqual(accepted[0].at - first.at, 1.9, "Retry-After: 2 was honoured")

    def test_a_restart_keeps_subscriptions_and_pending_pushes(self):
        device = self.service.device("patient")
        # The service is down (503) while alertd runs, and alertd is killed with the push pending.
        self.service.answer_with(device, *([503] * 50))
        self.subscribe(self.daemon, device, answer=False)
        alert = self.post(self.daemon)
        self.service.wait_for(lambda r: [x for x in r if x.status == 503], what="a refused attempt")
        self.daemon.kill()
        self.service.answer_with(device)  # back: 201 from now on
        restarted = self.daemon.restart()
        self.daemon = restarted
        pushed = self.service.wait_for(self.pushes(device, "alert.displayed"), timeout=20, what="the push after the restart")
        self.assertEqual(pushed[0].json()["alert"]["id"], alert["id"])
        listed = restarted.request("GET", "/v1/push/subscriptions", token=OPERATOR).json()["subscriptions"]
        self.assertEqual(len(listed), 1, "the subscription survived the restart")


class TwoInstancesTests(unittest.TestCase):
    """PostgreSQL, two instances: one VAPID key for both, each display pushed once."""

    def test_two_instances_push_once_with_one_key(self):
        postgres = Postgres()
        self.addCleanup(postgres.stop)
        service = PushService().start()
        self.addCleanup(service.stop)
        # Every instance of one database signs receipts with one key (SPEC §14: required on PostgreSQL).
        key = os.path.join(postgres.directory, "receipts-key.pem")
        subprocess.run([ALERTD_BIN, "receipts", "keygen", key], check=True, capture_output=True)
        store = f"store:\n  backend: postgres\n  postgres:\n    url: \"{postgres.url}\"\n    pool_size: 4\nreceipts:\n  key_file: {key}\n"
        first = Daemon(config(store))
        self.addCleanup(first.remove)
        second = Daemon(config(store))
        self.addCleanup(second.remove)
        keys = {d.request("GET", "/v1/push/key", token=OPERATOR).json()["public_key"] for d in (first, second)}
        self.assertEqual(len(keys), 1, "every instance signs with the same key")
        service.expected_key = keys.pop()
        device = service.device("shared")
        made = first.request(
            "POST", "/v1/push/subscriptions", {"endpoint": service.endpoint(device), "keys": device.keys(), "clients": ["ops"], "answer": True}, token=OPERATOR
        )
        self.assertEqual(made.status, 201, made.body)
        # Posted through the other instance once it knows the subscription: it is told through the
        # database, milliseconds after the commit (docs/high-availability.md); a post in between
        # is pushed to the subscriptions that instance knew, which is what the docs promise. Its
        # count is on /metrics (alertd_push_subscriptions).
        def pushes_to():
            lines = second.request("GET", "/metrics").body.decode().splitlines()
            return [float(line.split()[-1]) for line in lines if line.startswith("alertd_push_subscriptions ")]

        wait_for(lambda: pushes_to() == [1.0], 10, "the second instance learning of the subscription")
        posted = []
        for _ in range(5):
            alert = second.request("POST", "/v1/clients/ops/alerts", DEPLOY, token=POSTER).json()
            posted.append(alert["id"])
            push = service.wait_for(lambda r: [x for x in r if x.json()["type"] == "alert.displayed" and x.json()["alert"]["id"] == alert["id"]], what="its push")[0]
            # Answered through the first instance with the link the push carried.
            answered = first.request("POST", push.json()["answer_url"], {"button": "Deploy"})
            self.assertEqual(answered.status, 200, answered.body)
            service.wait_for(lambda r: [x for x in r if x.json()["type"] == "alert.decided" and x.json()["alert"]["id"] == alert["id"]], what="its decided push")
        time.sleep(0.5)  # a duplicate would come within milliseconds of the first
        for alert_id in posted:
            for type_ in ("alert.displayed", "alert.decided"):
                count = len([x for x in service.received if x.json()["type"] == type_ and x.json()["alert"]["id"] == alert_id])
                self.assertEqual(count, 1, f"{type_} of {alert_id} pushed {count} times")
        self.assertEqual(service.refused, [])


if __name__ == "__main__":
    unittest.main()
