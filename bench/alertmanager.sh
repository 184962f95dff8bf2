#!/usr/bin/env bash
# bench/alertmanager.sh [ALERTD]: alertd against Prometheus Alertmanager, the peer a user would
# pick instead (issue 46), in the same run, with the same load generator.
#
# Alertmanager (Debian's prometheus-alertmanager) runs alone: cluster disabled
# (--cluster.listen-address=, FIELD-NOTES), alerts in memory (it never fsyncs them), a storage
# directory of its own per run (for its silences and notification log), one route to a receiver
# with no integration. Load: wrk/post_am.lua, a new alert per POST /api/v2/alerts.
# alertd runs as ab.sh's post mode runs it (SQLite, durability: full, a fresh state directory per
# run) under wrk/post_alert.lua -- 8 bench: it makes every alert durable before it answers.
#
# For ROUNDS rounds and each connection count in CONNS_LIST, one run of each (the order
# alternating round by round): wrk -t2 -cN, WARMUP seconds of warm-up, then DURATION seconds.
# Prints every run, then per connection count the medians and alertd/Alertmanager against the
# target: ahead of Alertmanager at 16 connections, at least 2x it at 64.
#
#   bench/alertmanager.sh                  .build-deb/release/alertd (make deb's optimised build)
#   bench/alertmanager.sh path/to/alertd
#   ROUNDS=1 DURATION=2 CONNS_LIST=16 bench/alertmanager.sh    a smoke run
#
# Environment: ROUNDS [5], DURATION [10] seconds a run, WARMUP [2], CONNS_LIST ["16 64"],
# ALERTMANAGER [/usr/bin/prometheus-alertmanager]. Needs wrk, curl, python3. Ports are free
# ones the kernel picks, on 127.0.0.1.
# Raw output (wrk's reports, logs, results, summary.txt): bench/out/alertmanager-<time>/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
ALERTD=${1:-$ROOT/.build-deb/release/alertd}
ALERTMANAGER=${ALERTMANAGER:-/usr/bin/prometheus-alertmanager}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS_LIST=${CONNS_LIST:-"16 64"}
OUT="$HERE/out/alertmanager-$(date -u +%Y%m%dT%H%M%SZ)"
# shellcheck source=tools/yardstick.sh
source "$HERE/tools/yardstick.sh"
trap yardstick_cleanup EXIT
trap 'exit 130' INT TERM

for tool in wrk curl python3; do command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }; done
[ -x "$ALERTD" ] || { say "not an executable: $ALERTD"; exit 2; }
[ -x "$ALERTMANAGER" ] || { say "not an executable: $ALERTMANAGER (apt-get install prometheus-alertmanager)"; exit 2; }
mkdir -p "$OUT"
cat >"$OUT/alertmanager.yml" <<'EOF'
route:
  receiver: blackhole
receivers:
  - name: blackhole
EOF

run_one() { # NAME CONNS ROUND TAG
    local port
    port=$(free_port)
    if [ "$1" = alertmanager ]; then
        mkdir -p "$OUT/$4.state"
        "$ALERTMANAGER" --config.file="$OUT/alertmanager.yml" --storage.path="$OUT/$4.state" \
            --web.listen-address="127.0.0.1:$port" --cluster.listen-address= --log.level=warn 2>>"$OUT/$4.log" &
        SERVER=$!
        wait_ready "http://127.0.0.1:$port/-/ready" "$OUT/$4.log"
        measure "$1" "$2" "$3" "$4" "http://127.0.0.1:$port" "$HERE/wrk/post_am.lua"
    else
        alertd_start "$ALERTD" "$4" "$port"
        measure "$1" "$2" "$3" "$4" "http://127.0.0.1:$port" "$HERE/wrk/post_alert.lua" 8
    fi
    stop_server "$4"
}

say "alertd $ALERTD ($(sha256sum "$ALERTD" | cut -c1-12)) against $("$ALERTMANAGER" --version 2>&1 | head -1);" \
    "$ROUNDS rounds of ${DURATION}s at $CONNS_LIST connections; load average $(cut -d' ' -f1-3 /proc/loadavg); raw: $OUT"
each_run alertmanager alertd
summarise alertd alertmanager "16>1 64>=2"
