"""get_load.py PORT COUNT: COUNT keep-alive GETs of /v1/clients/bench/alerts/current, one at a time."""
import socket
import sys
import time

port, count = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 120
while True:
    try:
        sock = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"nothing listens on 127.0.0.1:{port}")
        time.sleep(0.1)
request = b"GET /v1/clients/bench/alerts/current HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % port
pending = b""
for _ in range(count):
    sock.sendall(request)
    while True:
        pending += sock.recv(65536)
        end = pending.find(b"\r\n\r\n")
        if end < 0:
            continue
        length = 0
        for line in pending[:end].split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if len(pending) >= end + 4 + length:
            pending = pending[end + 4 + length:]
            break
