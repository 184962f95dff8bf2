#!/usr/bin/env bash
# bench/floor.sh [ALERTD]: alertd against the durable-POST floor (issue 46), in the same run.
#
# The floor is floor/mhd_durable.c: libmicrohttpd (poll, a pool of FLOOR_THREADS), each POST's
# body handed to one writer thread that inserts a batch of rows in one SQLite WAL transaction
# with synchronous=FULL (group commit), then 201; no JSON parsing. It takes any path and any body
# that starts with "{" and holds a "title" key, so wrk/post_alert.lua drives both unchanged.
# alertd runs as ab.sh's post mode runs it: SQLite, durability: full, a fresh state directory
# per run; the floor gets a fresh database per run.
#
# For ROUNDS rounds and each connection count in CONNS_LIST, one run of each (the order
# alternating round by round): wrk -t2 -cN, WARMUP seconds of warm-up, then DURATION seconds of
# wrk/post_alert.lua -- 8 bench. Prints every run, then per connection count the medians,
# alertd/floor and p99 against the target: alertd at >= 80 % of the floor with p99 < 10 ms.
#
#   bench/floor.sh                         .build-deb/release/alertd (make deb's optimised build)
#   bench/floor.sh path/to/alertd
#   ROUNDS=1 DURATION=2 CONNS_LIST=16 bench/floor.sh    a smoke run
#
# Environment: ROUNDS [5], DURATION [10] seconds a run, WARMUP [2], CONNS_LIST ["16 64"],
# FLOOR_THREADS [nproc]. Needs cc, pkg-config, libmicrohttpd-dev, libsqlite3-dev, wrk, curl,
# python3. Ports are free ones the kernel picks, on 127.0.0.1.
# Raw output (the floor binary, wrk's reports, logs, results, summary.txt): bench/out/floor-<time>/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
ALERTD=${1:-$ROOT/.build-deb/release/alertd}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS_LIST=${CONNS_LIST:-"16 64"}
FLOOR_THREADS=${FLOOR_THREADS:-$(nproc)}
OUT="$HERE/out/floor-$(date -u +%Y%m%dT%H%M%SZ)"
# shellcheck source=tools/yardstick.sh
source "$HERE/tools/yardstick.sh"
trap yardstick_cleanup EXIT
trap 'exit 130' INT TERM

for tool in cc pkg-config wrk curl python3; do command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }; done
[ -x "$ALERTD" ] || { say "not an executable: $ALERTD"; exit 2; }
mkdir -p "$OUT"
# shellcheck disable=SC2046
cc -O2 -Wall -o "$OUT/mhd_durable" "$HERE/floor/mhd_durable.c" $(pkg-config --cflags --libs libmicrohttpd sqlite3) -lpthread

run_one() { # NAME CONNS ROUND TAG
    local port
    port=$(free_port)
    if [ "$1" = floor ]; then
        mkdir -p "$OUT/$4.state"
        "$OUT/mhd_durable" --port "$port" --threads "$FLOOR_THREADS" --db "$OUT/$4.state/floor.db" --sync full \
            2>>"$OUT/$4.log" &
        SERVER=$!
        wait_ready "http://127.0.0.1:$port/" "$OUT/$4.log"
    else
        alertd_start "$ALERTD" "$4" "$port"
    fi
    measure "$1" "$2" "$3" "$4" "http://127.0.0.1:$port" "$HERE/wrk/post_alert.lua" 8
    stop_server "$4"
}

say "alertd $ALERTD ($(sha256sum "$ALERTD" | cut -c1-12)) against the floor (pool $FLOOR_THREADS);" \
    "$ROUNDS rounds of ${DURATION}s at $CONNS_LIST connections; load average $(cut -d' ' -f1-3 /proc/loadavg); raw: $OUT"
each_run floor alertd
summarise alertd floor "16>=0.8 64>=0.8" 10
