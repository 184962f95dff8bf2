"""get_load.py PORT COUNT [post|answer]: COUNT keep-alive requests on one connection, one at a
time: GETs of /v1/clients/bench/alerts/current, or with `post` POSTs of an alert to that client,
or with `answer` COUNT decisions: a POST of an alert, then its choice (each displayed at once:
the one before it is answered)."""
import re
import socket
import sys
import time

port, count = int(sys.argv[1]), int(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "get"
post = mode in ("post", "answer")
deadline = time.monotonic() + 120
while True:
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"nothing listens on 127.0.0.1:{port}")
        time.sleep(0.1)
if post:
    body = b'{"title":"Deploy?","message":"v1.2.3 to production","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}'
    request = (
        b"POST /v1/clients/bench/alerts HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (port, len(body), body)
    )
else:
    request = b"GET /v1/clients/bench/alerts/current HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port
pending = b""


def choice(answer):
    """The choice of the alert a POST answered with."""
    alert = re.search(rb'"id":"([0-9A-Z]{26})"', answer).group(1)
    body = b'{"button_index":0}'
    return (
        b"POST /v1/clients/bench/alerts/%s/choice HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (alert, port, len(body), body)
    )


# `answer`: each post is followed by the choice of the alert it answered (None: made from it).
requests = [request] if mode != "answer" else [request, None]
for index in range(count * len(requests)):
    sock.sendall(request if requests[index % len(requests)] is not None else choice(last))
    while True:
        pending += sock.recv(65536)
        end = pending.find(b"\r\n\r\n")
        if end < 0:
            continue
        status = pending[:end].split(b"\r\n")[0]
        if not (status.startswith(b"HTTP/1.1 20")):
            sys.exit(f"unexpected answer: {status!r}")
        length = 0
        for line in pending[:end].split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if len(pending) >= end + 4 + length:
            last = pending[end + 4:end + 4 + length]
            pending = pending[end + 4 + length:]
            break
