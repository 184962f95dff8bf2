"""A stand-in push service (RFC 8030) for alertd's Web Push tests: it does what a real one
does with a push, and nothing more.

Each device (``Device``) has a P-256 key pair and a 16-byte authentication secret, as a
browser's PushSubscription does, and an endpoint on this server,
``http://127.0.0.1:PORT/push/<device>``. For every POST to an endpoint the service checks
what a push service checks before it accepts a message:

- ``TTL`` is present and a non-negative integer; ``Urgency`` and ``Topic``, when present,
  are well formed (RFC 8030 §5.2–5.4);
- ``Content-Encoding: aes128gcm``;
- ``Authorization: vapid t=<JWT>, k=<key>`` (RFC 8292): ``k`` is the key the test expects
  (the one alertd publishes at /v1/push/key), the JWT is ES256 over that key, ``aud`` is the
  endpoint's origin, ``exp`` is in the future and within 24 hours, ``sub`` is a mailto: or
  https: URI;

then decrypts the body with Mozilla's ``http_ece`` and the device's private key, as the
browser would, records the message, and answers with the status the test set for that
device (201 by default; 429 or 503 with Retry-After, 404, 410...).
"""
import base64
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Device:
    """A browser's subscription: its keys, as PushSubscription.toJSON() gives them."""

    def __init__(self, name):
        self.name = name
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.public_key = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.auth = os.urandom(16)

    def keys(self):
        return {"p256dh": b64url(self.public_key), "auth": b64url(self.auth)}


class Received:
    """One message the service accepted (or refused): its headers, and its payload decrypted."""

    def __init__(self, device, headers, payload, status, at):
        self.device = device
        self.headers = headers
        self.payload = payload
        self.status = status
        self.at = at

    def json(self):
        return json.loads(self.payload)


def verify_vapid(authorization, endpoint_origin, expected_key):
    """The claims of a valid VAPID Authorization header; raises ValueError naming what is wrong."""
    if not authorization or not authorization.startswith("vapid "):
        raise ValueError(f"Authorization is not vapid: {authorization!r}")
    params = dict(part.strip().split("=", 1) for part in authorization[len("vapid ") :].split(","))
    if set(params) != {"t", "k"}:
        raise ValueError(f"vapid parameters are {sorted(params)}, not t and k")
    if expected_key is not None and params["k"] != expected_key:
        raise ValueError(f"k={params['k']} is not the key alertd publishes ({expected_key})")
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(params["k"]))
    header_b64, claims_b64, signature_b64 = params["t"].split(".")
    header = json.loads(b64url_decode(header_b64))
    if header.get("alg") != "ES256" or header.get("typ", "JWT") != "JWT":
        raise ValueError(f"JWT header {header}")
    signature = b64url_decode(signature_b64)
    if len(signature) != 64:
        raise ValueError(f"ES256 signature of {len(signature)} bytes")
    der = utils.encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    key.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))  # raises InvalidSignature
    claims = json.loads(b64url_decode(claims_b64))
    if claims.get("aud") != endpoint_origin:
        raise ValueError(f"aud {claims.get('aud')!r} is not the endpoint's origin {endpoint_origin!r}")
    now = time.time()
    if not (now < claims.get("exp", 0) <= now + 24 * 3600 + 60):
        raise ValueError(f"exp {claims.get('exp')} is not within the next 24 hours")
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        raise ValueError(f"sub {claims.get('sub')!r}")
    return claims


class PushService:
    """The service: start(), then device() for each subscription a test makes."""

    def __init__(self):
        self.devices = {}
        self.statuses = {}  # device name -> list of (status, headers) to answer with, in turn
        self.received = []
        self.refused = []  # (device, reason): messages a real push service would refuse
        self.expected_key = None
        self.lock = threading.Condition()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                name = self.path.rsplit("/", 1)[-1]
                status, extra = service.handle(name, dict(self.headers), body)
                self.send_response(status)
                for header, value in extra.items():
                    self.send_header(header, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def device(self, name):
        device = Device(name)
        with self.lock:
            self.devices[name] = device
        return device

    def endpoint(self, device):
        return f"{self.origin}/push/{device.name}"

    def answer_with(self, device, *answers):
        """The next statuses this device's endpoint answers, in turn: ints or (status, headers)."""
        with self.lock:
            self.statuses[device.name] = [a if isinstance(a, tuple) else (a, {}) for a in answers]

    def handle(self, name, headers, body):
        headers = {key.lower(): value for key, value in headers.items()}
        with self.lock:
            device = self.devices.get(name)
        if device is None:
            return 404, {}
        try:
            ttl = headers.get("ttl")
            if ttl is None or not ttl.isdigit():
                raise ValueError(f"TTL {ttl!r}")
            if headers.get("urgency", "normal") not in ("very-low", "low", "normal", "high"):
                raise ValueError(f"Urgency {headers.get('urgency')!r}")
            topic = headers.get("topic")
            if topic is not None and (len(topic) > 32 or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in topic)):
                raise ValueError(f"Topic {topic!r}")
            if headers.get("content-encoding") != "aes128gcm":
                raise ValueError(f"Content-Encoding {headers.get('content-encoding')!r}")
            verify_vapid(headers.get("authorization"), self.origin, self.expected_key)
            payload = http_ece.decrypt(body, private_key=device.private_key, auth_secret=device.auth, version="aes128gcm")
        except Exception as error:  # a real push service answers 400/401/403 and drops it
            with self.lock:
                self.refused.append((name, f"{type(error).__name__}: {error}"))
                self.lock.notify_all()
            return 400, {}
        with self.lock:
            queued = self.statuses.get(name) or []
            status, extra = queued.pop(0) if queued else (201, {})
            self.received.append(Received(name, headers, payload, status, time.monotonic()))
            self.lock.notify_all()
        return status, extra

    def wait_for(self, predicate, timeout=10, what="a push"):
        """Waits until predicate(received) holds (awaited on each arrival); returns its value."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                value = predicate(list(self.received))
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"no {what} within {timeout} s; received {[(r.device, r.status, r.payload[:120]) for r in self.received]}; "
                        f"refused {self.refused}"
                    )
                self.lock.wait(left)
