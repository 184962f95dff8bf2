#!/usr/bin/env python3
"""footprint.py: what pending alerts take in alertd's memory, against what
limits.max_pending_bytes counts for them (issue 27 item 6).

    python3 bench/tools/footprint.py --port 8080 --pid $(pidof alertd) --kind largest --count 5000
    python3 bench/tools/footprint.py --port 8080 --pid ... --kind small --count 50000
    python3 bench/tools/footprint.py --port 8080 --pid ... --kind largest          # until 429

Posts alerts of one kind to CLIENTS clients (round robin, one keep-alive
connection per thread) until COUNT were created or alertd answers anything but
201 (the budget is full: it prints that answer), then prints the RSS growth per
alert against the footprint alertd counts for it (Alert.footprint: its text in
UTF-8 plus 1 024 bytes, plus 32 a button). Kinds: `largest` (the largest alert
§2 allows, in 4-byte characters, metadata 4 KiB) and `small` (the 321-byte alert
of bench/wrk/post_alert.lua). Python 3 standard library only.
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchhttp  # noqa: E402


def largest():
    return {
        "title": "🚨" * 256,
        "message": "📟" * 4096,
        "buttons": [{"title": f"{n}" + "🔘" * 60} for n in range(16)],
        "metadata": {"pad": "x" * 4080},
    }


def small():
    return {
        "title": "Deploy build 4711 to production?",
        "message": "All 1342 checks passed on commit 9f3c2e1. The rollout takes about 4 minutes and can be rolled back.",
        "buttons": [{"title": "Deploy", "style": "default"}, {"title": "Cancel", "style": "cancel"}],
        "priority": 0,
        "metadata": {"service": "checkout", "build": 4711, "requested_by": "ci"},
    }


def footprint(alert):
    """Alert.footprint as alertd counts it."""
    size = 1024 + len(alert["title"].encode()) + len(alert.get("message", "").encode())
    if "metadata" in alert:
        size += len(json.dumps(alert["metadata"], separators=(",", ":"), ensure_ascii=False).encode())
    for button in alert.get("buttons", []):
        size += 32 + len(button["title"].encode())
    return size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--kind", choices=["largest", "small"], default="largest")
    parser.add_argument("--count", type=int, default=10**9)
    parser.add_argument("--clients", type=int, default=40)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--prefix", default="fp")
    args = parser.parse_args()

    alert = largest() if args.kind == "largest" else small()
    body = json.dumps(alert, separators=(",", ":"), ensure_ascii=False)
    counted = footprint(alert)
    before = benchhttp.settle(args.pid)[0]
    created = [0]
    refused = []
    lock = threading.Lock()

    def poster(index):
        conn = benchhttp.Conn("127.0.0.1", args.port, timeout=60)
        n = index
        while True:
            with lock:
                if refused or created[0] >= args.count:
                    return
                created[0] += 1
            status, _, rbody = conn.request("POST", f"/v1/clients/{args.prefix}-{n % args.clients}/alerts", body)
            n += args.threads
            if status != 201:
                with lock:
                    created[0] -= 1
                    refused.append((status, rbody.decode(errors="replace")))
                return

    started = time.monotonic()
    threads = [threading.Thread(target=poster, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - started
    after = benchhttp.settle(args.pid)[0]
    grown = (after - before) * 1024
    n = created[0]
    print(f"kind {args.kind}: {n} alerts created in {seconds:.1f} s, body {len(body.encode())} bytes, "
          f"footprint counted {counted} bytes each ({n * counted / 2**20:.1f} MiB together)")
    print(f"RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB: +{grown / 2**20:.1f} MiB, "
          f"{grown / max(1, n):.0f} bytes an alert, {grown / max(1, n * counted):.2f}x the footprint")
    if refused:
        status, text = refused[0]
        print(f"stopped by a {status}: {text}")


if __name__ == "__main__":
    main()
