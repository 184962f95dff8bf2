#!/usr/bin/env bash
# bench/postgres.sh: two alertd instances on one local PostgreSQL (issue 33's targets),
# one instance alone, the database's own floor (pgbench) and one alertd on SQLite
# (durability: full), all measured in the same run.
#
#   bench/postgres.sh                 build alertd (release) and run everything
#   ALERTD=path bench/postgres.sh     use that binary
#
# Environment (defaults in brackets):
#   DURATION [10] seconds per wrk run    WARMUP [2] seconds of warm-up
#   CONNS [32] wrk connections per instance            WRK_THREADS [1] per instance
#   WAITERS [10000] parked waiters, half on each instance   ROUNDS [2000] latency rounds
#   POOL [8] store.postgres.pool_size    BASE_PORT [19080]
#   PG_SYNC [on] PostgreSQL's synchronous_commit (off only to see what the commit's flush costs)
#
# Phases:
#   alone-* one instance alone (A), the same phases with both wrk loads on it
#   one     POSTs to one client, through both instances at once (wrk on each)
#   spread  POSTs spread over 100 clients, through both instances
#   current GET …/current of one client with an alert displayed, through both instances
#           (every read checks the client's version in the database: SPEC §9)
#   latency WAITERS parked (half on each); a waiter parked on instance A, the choice
#           made on instance B: choice sent -> waiter answered
#   pgbench the database's floor: one alert-sized INSERT per transaction, 32 clients;
#           the same with 32 rows per transaction
#   sqlite  the `one` phase against a single alertd on SQLite (reference)
#
# PostgreSQL is a cluster of its own under bench/out (on disk: fsync and
# synchronous_commit = on, the server's defaults), started and stopped here.
# Raw output in bench/out/pg-<timestamp>/, the summary on stdout and in summary.txt.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-32}
WRK_THREADS=${WRK_THREADS:-1}
WAITERS=${WAITERS:-10000}
ROUNDS=${ROUNDS:-2000}
POOL=${POOL:-8}
BASE_PORT=${BASE_PORT:-19080}
PG_PORT=$((BASE_PORT + 10))
PORT_A=$((BASE_PORT + 1))
PORT_B=$((BASE_PORT + 2))
PORT_S=$((BASE_PORT + 3))

OUT="$HERE/out/pg-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
say() { echo "[postgres.sh] $*" >&2; }

for tool in wrk python3; do command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }; done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] || { say "needs PostgreSQL (apt-get install postgresql)"; exit 2; }

if [ -z "${ALERTD:-}" ]; then
    say "building alertd (release)"
    (cd "$ROOT" && swift build -c release --product alertd >&2)
    ALERTD="$ROOT/.build/release/alertd"
fi

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# ---- PostgreSQL -------------------------------------------------------------------------
# shellcheck source=tools/pgcluster.sh
source "$HERE/tools/pgcluster.sh"
pg_cluster "$OUT" "$PG_PORT" -c synchronous_commit="${PG_SYNC:-on}" -c fsync=on

# ---- alertd -----------------------------------------------------------------------------
config() { # $1 name, $2 store section
    cat >"$OUT/$1.yaml" <<EOF
log: {level: warning}
state_dir: $OUT/state-$1
limits:
  max_pending_per_client: 10000000
  max_pending_total: 100000000
  max_clients: 100000
  max_waiters: 200000
  max_waiters_per_token: 200000
  max_connections: 60000
  max_connections_per_ip: 60000
$2
EOF
}
start() { # $1 name, $2 port
    "$ALERTD" --config "$OUT/$1.yaml" --listen "127.0.0.1:$2" 2>"$OUT/$1.log" &
    PIDS+=($!)
    eval "PID_$1=$!"
    for _ in $(seq 1 300); do
        curl -fsS "http://127.0.0.1:$2/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    say "alertd $1 did not become ready"; cat "$OUT/$1.log" >&2; exit 1
}
stop() { # $1 name
    local pid; pid=$(eval echo "\$PID_$1")
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

PGSTORE="store: {backend: postgres, postgres: {url: \"$URL\", pool_size: $POOL}}"
config a "$PGSTORE"
config b "$PGSTORE"
config s "durability: full"

# wrk on both instances at once (or, with ALONE=1, both loads on A); $SCRIPT [post_alert.lua].
both() { # $1 phase, $2.. wrk script arguments
    local phase=$1; shift
    local script="$HERE/wrk/${SCRIPT:-post_alert.lua}"
    local second=$PORT_B
    [ "${ALONE:-0}" = 1 ] && second=$PORT_A
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$PORT_A" -- "$@" >/dev/null 2>&1 &
    local warm=$!
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$second" -- "$@" >/dev/null 2>&1
    wait "$warm" || true
    flushes "$phase" before "$second"
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$PORT_A" -- "$@" \
        >"$OUT/$phase-a.txt" 2>&1 &
    local first=$!
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$second" -- "$@" \
        >"$OUT/$phase-b.txt" 2>&1
    wait "$first"
    flushes "$phase" after "$second"
}

# The store's flush counters of A (and B) at a point of a phase: commits, changes, round trips.
flushes() { # $1 phase, $2 before|after, $3 the second port
    local ports=("$PORT_A")
    [ "$3" != "$PORT_A" ] && ports+=("$3")
    for port in "${ports[@]}"; do
        curl -fsS "http://127.0.0.1:$port/metrics" \
            | grep -E '^alertd_store_(commit_duration_seconds_count|changes_total|round_trips_total) ' || true
    done >"$OUT/$1-flushes-$2.txt"
}

field() { sed -n "s/.*RESULT.* $2=\([0-9.]*\).*/\1/p" "$1"; }
rps() { sed -n 's/.*RESULT rps=\([0-9.]*\).*/\1/p' "$1"; }

start a "$PORT_A"
say "one instance alone: the same loads, both on A"
ALONE=1 both alone-one 1 alone-one
ALONE=1 both alone-spread 100 alone-spread
curl -fsS -o /dev/null -H 'Content-Type: application/json' -d '{"title":"Shown","buttons":[{"title":"OK"}]}' \
    "http://127.0.0.1:$PORT_A/v1/clients/shown/alerts"
ALONE=1 SCRIPT=get_current.lua both alone-current shown
start b "$PORT_B"
say "one client: $CONNS connections on each instance, ${DURATION}s"
both one 1 one
say "100 clients: $CONNS connections on each instance, ${DURATION}s"
both spread 100 spread
say "GET current of one client through both instances, ${DURATION}s"
SCRIPT=get_current.lua both current shown

say "latency: $WAITERS waiters (half on each), a waiter on A, the choice on B"
python3 "$HERE/tools/waiters.py" park --port "$PORT_B" --waiters $((WAITERS / 2)) --duration 55 --wait 60 \
    --bg-client bgb >/dev/null 2>"$OUT/park-b.log" &
PARK=$!
PIDS+=("$PARK")
sleep 5
python3 "$HERE/tools/waiters.py" latency --port "$PORT_A" --choose-port "$PORT_B" --waiters $((WAITERS / 2)) \
    --rounds "$ROUNDS" --duration 40 --wait 60 --json "$OUT/latency.json" >/dev/null 2>"$OUT/latency.log" || true
kill "$PARK" 2>/dev/null || true
stop a
stop b

# The database's own floor, on the same server: an alert-sized row per transaction, then 32.
"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d alertd \
    -c "CREATE TABLE bench_floor (id bigserial PRIMARY KEY, client text, body text, created_at bigint)"
printf "INSERT INTO bench_floor (client, body, created_at) VALUES ('bench', repeat('x', 600), 1);\n" >"$OUT/floor-1.sql"
{
    echo "BEGIN;"
    for _ in $(seq 1 32); do echo "INSERT INTO bench_floor (client, body, created_at) VALUES ('bench', repeat('x', 600), 1);"; done
    echo "COMMIT;"
} >"$OUT/floor-32.sql"
for rows in 1 32; do
    say "pgbench: $rows alert-sized row(s) per transaction, 32 clients, ${DURATION}s"
    "$PGBIN/pgbench" -n -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 32 -j 2 -T "$DURATION" -f "$OUT/floor-$rows.sql" alertd \
        >"$OUT/pgbench-$rows.txt" 2>&1 || true
done

start s "$PORT_S"
say "reference: one alertd on SQLite, one client, $CONNS connections, ${DURATION}s"
wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT_S" -- 1 ref >/dev/null 2>&1
wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT_S" -- 1 ref \
    >"$OUT/sqlite.txt" 2>&1
stop s

python3 - "$OUT" >"$OUT/summary.txt" <<'EOF'
import json, re, sys
out = sys.argv[1]
def result(name):
    text = open(f"{out}/{name}.txt").read()
    m = re.search(r"RESULT (.*)", text)
    return dict(kv.split("=") for kv in m.group(1).split()) if m else {}
def pair(phase):
    a, b = result(f"{phase}-a"), result(f"{phase}-b")
    rps = float(a.get("rps", 0)) + float(b.get("rps", 0))
    p99 = max(float(a.get("p99_ms", 0)), float(b.get("p99_ms", 0)))
    bad = int(a.get("non2xx", 0)) + int(b.get("non2xx", 0))
    return rps, p99, bad
lines = []
for phase, label, target in (("one", "posts/s to one client", 5000), ("spread", "posts/s over 100 clients", 5000)):
    alone, alone_p99, alone_bad = pair(f"alone-{phase}")
    rps, p99, bad = pair(phase)
    ok = rps >= target and p99 < 20 and bad == 0
    ratio = rps / alone if alone else float("nan")
    lines.append(f"{label + ', 1 instance alone':<42} {alone:>9.0f}  POST p99 {alone_p99:.2f} ms   non-2xx {alone_bad}")
    lines.append(f"{label + ', 2 instances':<42} {rps:>9.0f}  (target >= {target})   POST p99 {p99:.2f} ms (target < 20)   "
                 f"non-2xx {bad}   {'MET' if ok else 'NOT MET'}")
    lines.append(f"{'  2 instances / 1 alone':<42} {ratio:>9.2f}  (target >= 0.80)   {'MET' if ratio >= 0.8 else 'NOT MET'}")
alone, _, _ = pair("alone-current")
rps, p99, bad = pair("current")
def flushes(phase):
    def read(when):
        totals = {}
        try:
            for line in open(f"{out}/{phase}-flushes-{when}.txt"):
                name, value = line.split()
                totals[name] = totals.get(name, 0) + float(value)
        except OSError:
            pass
        return totals
    before, after = read("before"), read("after")
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    commits = delta.get("alertd_store_commit_duration_seconds_count", 0)
    changes = delta.get("alertd_store_changes_total", 0)
    trips = delta.get("alertd_store_round_trips_total", 0)
    if commits <= 0:
        return f"{phase}: no flush counted"
    return (f"{phase + ' flushes':<42} {commits:>9.0f}  changes/flush {changes / commits:.1f}   "
            f"round trips/flush {trips / commits:.2f}   round trips/post {trips / max(changes, 1):.3f}")
for phase in ("alone-one", "one", "alone-spread", "spread"):
    lines.append(flushes(phase))
lines.append(f"{'GET current, 1 instance alone':<42} {alone:>9.0f}")
lines.append(f"{'GET current, 2 instances (reads current)':<42} {rps:>9.0f}  (target >= 50000)   p99 {p99:.2f} ms   non-2xx {bad}   "
             f"{'MET' if rps >= 50000 and bad == 0 else 'NOT MET'}")
for rows in (1, 32):
    try:
        text = open(f"{out}/pgbench-{rows}.txt").read()
        tps = float(re.search(r"tps = ([0-9.]+)", text).group(1))
        lines.append(f"{f'pgbench floor, {rows} row(s) per transaction':<42} {tps * rows:>9.0f} rows/s ({tps:.0f} transactions/s)")
    except (OSError, AttributeError):
        lines.append(f"pgbench floor, {rows} row(s): no result (see pgbench-{rows}.txt)")
try:
    lat = json.load(open(f"{out}/latency.json"))
    w = lat.get("waiter_latency", {})
    p99 = w.get("p99_ms", float("nan"))
    lines.append(f"{'choice on B -> waiter on A, p99':<42} {p99:>9.2f} ms (target < 5)   p50 {w.get('p50_ms', float('nan')):.2f} ms   "
                 f"rounds {lat.get('valid_rounds')}   waiters parked on A {lat.get('bg_parked_after')}   "
                 f"{'MET' if lat.get('valid') and p99 < 5 else 'NOT MET' if lat.get('valid') else 'INVALID'}")
except (OSError, ValueError):
    lines.append("choice on B -> waiter on A: no result (see latency.log)")
s = result("sqlite")
lines.append(f"{'reference: SQLite, one client, 1 instance':<42} {float(s.get('rps', 0)):>9.0f}  POST p99 {float(s.get('p99_ms', 0)):.2f} ms")
print("\n".join(lines))
EOF
cat "$OUT/summary.txt"
ln -sfn "$(basename "$OUT")" "$HERE/out/pg-latest"
