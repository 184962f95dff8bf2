"""Web Push for the browser tests: a push endpoint that decrypts what alertd sends, and the
DevTools protocol to hand the decrypted message to Chromium's service worker.

Headless Chromium has no push service, so the path is split where a real push service would
sit: alertd pushes (VAPID-signed, aes128gcm-encrypted) to ``PushEndpoint``, which decrypts
the message as the browser would (RFC 8291, with Debian's python3-cryptography), and
``DevTools.deliver_push`` gives the plaintext to the service worker with
``ServiceWorker.deliverPushMessage``, which is what Chromium does with a message its push
service brings. The payload, its ``answer_url`` above all, is therefore alertd's own.

The VAPID signature is not checked here: Tests/Push does that against a stand-in push service.

``DevTools`` speaks to the page's DevTools target over its WebSocket (Debian's
python3-websocket) beside chromedriver, because ``deliverPushMessage`` needs the service
worker's registration id, which Chromium reports only in events
(``ServiceWorker.workerRegistrationUpdated``), and chromedriver's ``execute_cdp_cmd`` returns
no events.
"""

import base64
import json
import os
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import websocket
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hkdf(salt, info, length, key):
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(key)


class Device:
    """A browser's subscription keys: a P-256 key pair and a 16-byte authentication secret."""

    def __init__(self, name):
        self.name = name
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.auth = os.urandom(16)

    def keys(self):
        return {"p256dh": b64url(self.public_key), "auth": b64url(self.auth)}

    def decrypt(self, body):
        """RFC 8188's aes128gcm record with RFC 8291's keys, as a browser decrypts a push."""
        salt, record_size, id_length = body[:16], int.from_bytes(body[16:20], "big"), body[20]
        sender_key, ciphertext = body[21 : 21 + id_length], body[21 + id_length :]
        if len(ciphertext) > record_size:
            raise ValueError("more than one record: alertd's payloads fit in one")
        shared = self.private_key.exchange(
            ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender_key)
        )
        ikm = _hkdf(self.auth, b"WebPush: info\x00" + self.public_key + sender_key, 32, shared)
        key = _hkdf(salt, b"Content-Encoding: aes128gcm\x00", 16, ikm)
        nonce = _hkdf(salt, b"Content-Encoding: nonce\x00", 12, ikm)
        padded = AESGCM(key).decrypt(nonce, ciphertext, None).rstrip(b"\x00")
        if not padded.endswith(b"\x02"):
            raise ValueError("no last-record delimiter")
        return padded[:-1]


class PushEndpoint:
    """Endpoints ``http://127.0.0.1:PORT/push/<device>`` answering 201 and keeping each message decrypted."""

    def __init__(self):
        self.devices = {}
        self.messages = []  # (device name, payload as parsed JSON)
        self.condition = threading.Condition()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                name = self.path.rsplit("/", 1)[-1]
                device = endpoint.devices.get(name)
                if device is None or self.headers.get("Content-Encoding") != "aes128gcm":
                    self.send_response(404)
                    self.end_headers()
                    return
                payload = json.loads(device.decrypt(body))
                with endpoint.condition:
                    endpoint.messages.append((name, payload))
                    endpoint.condition.notify_all()
                self.send_response(201)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def device(self, name):
        device = Device(name)
        self.devices[name] = device
        return device

    def url(self, device):
        return f"http://127.0.0.1:{self.server.server_address[1]}/push/{device.name}"

    def wait(self, device, kind, alert_id, timeout=10):
        """The payload of the push of `kind` about `alert_id` that `device` received."""
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                for name, payload in self.messages:
                    if name == device.name and payload.get("type") == kind and payload["alert"]["id"] == alert_id:
                        return payload
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {kind} push about {alert_id} for {device.name} within {timeout} s")
                self.condition.wait(left)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class DevTools:
    """The DevTools protocol on the page's target, beside chromedriver (Chromium serves several clients)."""

    def __init__(self, driver, origin):
        """On the tab that shows a page of `origin` (the test's one tab)."""
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/list", timeout=10) as response:
            targets = json.load(response)
        page = next(t for t in targets if t["type"] == "page" and t["url"].startswith(origin))
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=10, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, params=None, timeout=10):
        self.next_id += 1
        ident = self.next_id
        self.socket.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
        raise AssertionError(f"{method} had no answer within {timeout} s")

    def wait_event(self, predicate, timeout=10):
        """The first event (seen already or to come) for which `predicate` holds."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            while seen < len(self.events):
                event = self.events[seen]
                seen += 1
                if predicate(event):
                    return event
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no such DevTools event within {timeout} s")
            self.socket.settimeout(left)
            try:
                message = json.loads(self.socket.recv())
            except websocket.WebSocketTimeoutException:
                continue
            finally:
                self.socket.settimeout(10)
            if "method" in message:
                self.events.append(message)

    def registration_id(self, scope, timeout=10):
        """The id of the service worker registration of `scope` whose worker is activated.

        ``ServiceWorker.enable`` reports every registration and version (as events) at once and
        every change after, so this waits for the activation rather than guessing when it was.
        """
        self.call("ServiceWorker.enable")
        registrations = {}

        def activated(event):
            if event["method"] == "ServiceWorker.workerRegistrationUpdated":
                for registration in event["params"]["registrations"]:
                    if not registration["isDeleted"]:
                        registrations[registration["registrationId"]] = registration["scopeURL"]
            if event["method"] == "ServiceWorker.workerVersionUpdated":
                for version in event["params"]["versions"]:
                    if version["status"] == "activated" and registrations.get(version["registrationId"]) == scope:
                        return True
            return False

        event = self.wait_event(activated, timeout)
        return next(v["registrationId"] for v in event["params"]["versions"] if v["status"] == "activated" and registrations.get(v["registrationId"]) == scope)

    def deliver_push(self, origin, registration_id, payload, raw=False):
        """What Chromium does with a message its push service brings: a push event with this data
        (`payload` as JSON, or as it is when `raw`)."""
        self.call(
            "ServiceWorker.deliverPushMessage",
            {"origin": origin, "registrationId": registration_id, "data": payload if raw else json.dumps(payload)},
        )

    def worker_events(self):
        """The ServiceWorker events seen so far (after draining what is waiting): for a failure's message."""
        self.socket.settimeout(0.2)
        try:
            while True:
                message = json.loads(self.socket.recv())
                if "method" in message:
                    self.events.append(message)
        except (websocket.WebSocketTimeoutException, BlockingIOError):
            pass
        finally:
            self.socket.settimeout(10)
        return [e for e in self.events if e["method"].startswith("ServiceWorker.")][-8:]

    def close(self):
        self.socket.close()
