#!/usr/bin/env bash
# bench/peer.sh: the peer workload of issue 14 — every POST to one client, each
# carrying a small metadata object, durability full — at 16 and 64 connections.
# Target: POST p99 < 10 ms at both. Prints, per binary and connection count,
# the rate, p50, p99 and maximum latency, and the WAL file's size afterwards.
#
#   bench/peer.sh                     .build/release/alertd
#   bench/peer.sh OLD_BIN NEW_BIN     both, alternating run by run (same machine, same minute)
#
# Environment: CONNS_LIST ["16 64"], DURATION [10] seconds per run, ROUNDS [3]
# runs per binary and connection count, PORT [18181]. Needs wrk and curl.
# Everything runs on 127.0.0.1; each run has a fresh state directory and stops
# its daemon by PID.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
BINS=("$@")
[[ ${#BINS[@]} -gt 0 ]] || BINS=("$ROOT/.build/release/alertd")
CONNS_LIST=${CONNS_LIST:-"16 64"}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18181}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/alertd-peer.XXXXXX")
PID=""
cleanup() {
    [[ -n "$PID" ]] && kill "$PID" 2> /dev/null && wait "$PID" 2> /dev/null || true
    rm -rf -- "$WORK"
}
trap cleanup EXIT

for bin in "${BINS[@]}"; do [[ -x "$bin" ]] || { echo "not an executable: $bin" >&2; exit 2; }; done
command -v wrk > /dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 2; }

cat > "$WORK/alertd.yaml" << EOF
durability: full
limits:
  max_pending_per_client: 5000000
  max_pending_total: 5000000
  max_connections: 30000
EOF

printf '%-10s %-6s %-5s %9s %8s %8s %9s %10s\n' binary conns round "req/s" "p50 ms" "p99 ms" "max ms" "WAL MiB"
for round in $(seq 1 "$ROUNDS"); do
    for conns in $CONNS_LIST; do
        for index in "${!BINS[@]}"; do
            bin=${BINS[$index]}
            state="$WORK/state-$round-$conns-$index"
            "$bin" --config "$WORK/alertd.yaml" --listen "127.0.0.1:$PORT" --state-dir "$state" \
                > "$WORK/alertd.log" 2>&1 &
            PID=$!
            for _ in $(seq 1 200); do
                curl -sf -o /dev/null "http://127.0.0.1:$PORT/readyz" && break
                sleep 0.05
            done
            curl -sf -o /dev/null "http://127.0.0.1:$PORT/readyz" || { tail "$WORK/alertd.log" >&2; exit 1; }
            result=$(wrk -t2 -c"$conns" -d"${DURATION}s" -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT" -- 1 bench \
                | grep '^RESULT')
            wal=$(stat -c %s "$state/alertd.sqlite-wal" 2> /dev/null || echo 0)
            kill "$PID"
            wait "$PID" 2> /dev/null || true
            PID=""
            field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< "$result"; }
            [[ "$(field non2xx)" == 0 ]] || echo "WARNING: $(field non2xx) answers were not 2xx" >&2
            printf '%-10s %-6s %-5s %9.0f %8.2f %8.2f %9.2f %10.1f\n' "bin$index" "$conns" "$round" \
                "$(field rps)" "$(field p50_ms)" "$(field p99_ms)" "$(field max_ms)" "$(awk -v b="$wal" 'BEGIN { print b / 1048576 }')"
            rm -rf -- "$state"
        done
    done
done
