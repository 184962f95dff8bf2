"""get_load.py PORT COUNT [post]: COUNT keep-alive requests on one connection, one at a time:
GETs of /v1/clients/bench/alerts/current, or with `post` POSTs of an alert to that client."""
import socket
import sys
import time

port, count = int(sys.argv[1]), int(sys.argv[2])
post = len(sys.argv) > 3 and sys.argv[3] == "post"
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
for _ in range(count):
    sock.sendall(request)
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
            pending = pending[end + 4 + length:]
            break
