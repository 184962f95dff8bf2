#!/usr/bin/env bash
# bench/postgres.sh: two alertd instances on one local PostgreSQL (issues 33 and 46), one
# instance alone, the database's own floor (pgbench) and one alertd on SQLite
# (durability: full), all measured in the same run.
#
#   bench/postgres.sh                 build alertd (release) and run everything
#   ALERTD=path bench/postgres.sh     use that binary
#   PHASES="post" bench/postgres.sh   only the POST rounds (issue 46's PostgreSQL target)
#
# Environment (defaults in brackets):
#   DURATION [10] seconds per wrk run    WARMUP [2] seconds of warm-up
#   CONNS [32] wrk connections per instance            WRK_THREADS [1] per instance
#   ROUNDS_POST [5] rounds of the POST phases, 1 instance alone and 2 instances alternating
#   WAITERS [10000] parked waiters, half on each instance   ROUNDS [2000] latency rounds
#   POOL [8] store.postgres.pool_size    BASE_PORT [19080]
#   PG_SYNC [on] PostgreSQL's synchronous_commit (off only to see what the commit's flush costs)
#   PG_OPTS [] more server settings, e.g. "-c log_autovacuum_min_duration=0" (word-split)
#   PHASES ["post current latency pgbench sqlite"] the groups of phases to run
#
# Phases:
#   post    ROUNDS_POST rounds; each round one group "1 instance alone" (instance A, both wrk
#           loads on it, B not running) and one group "2 instances" (A and B, wrk on each), in
#           ABBA order (odd rounds alone first, even rounds two first), each group on a fresh
#           database with freshly started instances. In each group:
#             alone-one / one        POSTs to one client
#             alone-spread / spread  POSTs spread over 100 clients
#           For every measured run: posts/s, p99, the store's flushes and round trips (/metrics),
#           and the CPU of all the processes involved per committed post (below).
#   current GET …/current of one client with an alert displayed, A alone (alone-current),
#           then through both instances (every read checks the client's version in the
#           database: SPEC §9)
#   latency WAITERS parked (half on each); a waiter parked on instance A, the choice
#           made on instance B: choice sent -> waiter answered
#   pgbench the database's floor: one alert-sized INSERT per transaction, 32 clients;
#           the same with 32 rows per transaction
#   sqlite  the `one` phase against a single alertd on SQLite (reference)
#
# CPU per committed post (tools/proccpu.py): right before and after each measured wrk run
# (after the warm-up), utime + stime + cutime + cstime from /proc/<pid>/stat (ticks, 1/`getconf
# CLK_TCK` s, converted to microseconds) of every process in the trees of the alertd
# instance(s) of the run and of the PostgreSQL postmaster (its backends, walwriter,
# checkpointer, autovacuum workers..., found by parent pid), summed; the difference is
# divided by the posts committed in the run (wrk's requests less its non-2xx answers). A
# backend that exits during the run counts whole: the part before the first snapshot from its
# own stat, the rest through the postmaster's cutime + cstime once the postmaster has reaped it.
# Not counted: wrk, curl, the kernel's threads working for these processes (page writeback,
# softirqs run in ksoftirqd, the journal), and anything else on the machine. Good to under a
# tick (10 ms) per process of the trees. The summary gives the medians over the rounds, and
# the ratios 2 instances / 1 alone against issue 46's targets (posts/s >= 0.8x with p99 < 20 ms,
# CPU per post <= 1.25x), for one client and for 100 clients.
#
# PostgreSQL is a cluster of its own under bench/out (on disk: fsync and
# synchronous_commit = on, the server's defaults), started and stopped here.
# Raw output in bench/out/pg-<timestamp>/ (a POST run's files are <phase>-r<round>-*), the
# summary on stdout and in summary.txt.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-32}
WRK_THREADS=${WRK_THREADS:-1}
WAITERS=${WAITERS:-10000}
ROUNDS=${ROUNDS:-2000}
ROUNDS_POST=${ROUNDS_POST:-5}
POOL=${POOL:-8}
BASE_PORT=${BASE_PORT:-19080}
PHASES=${PHASES:-post current latency pgbench sqlite}
PG_PORT=$((BASE_PORT + 10))
PORT_A=$((BASE_PORT + 1))
PORT_B=$((BASE_PORT + 2))
PORT_S=$((BASE_PORT + 3))

OUT="$HERE/out/pg-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
say() { echo "[postgres.sh] $*" >&2; }
wants() { [[ " $PHASES " == *" $1 "* ]]; }

for tool in wrk python3 getconf; do command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }; done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] || { say "needs PostgreSQL (apt-get install postgresql)"; exit 2; }
[[ $ROUNDS_POST =~ ^[1-9][0-9]*$ ]] || { say "ROUNDS_POST must be a positive integer"; exit 2; }
HZ=$(getconf CLK_TCK)

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
forget() { # $1 a pid that has been waited for: cleanup must not signal it (its number may be reused)
    local keep=() pid
    for pid in "${PIDS[@]}"; do [ "$pid" = "$1" ] || keep+=("$pid"); done
    PIDS=("${keep[@]}")
}
echo "start: $(cut -d' ' -f1-3 /proc/loadavg)" >"$OUT/loadavg.txt"

# ---- PostgreSQL -------------------------------------------------------------------------
# shellcheck source=tools/pgcluster.sh
source "$HERE/tools/pgcluster.sh"
# shellcheck disable=SC2086 # PG_OPTS is a list of words
pg_cluster "$OUT" "$PG_PORT" -c synchronous_commit="${PG_SYNC:-on}" -c fsync=on ${PG_OPTS:-}
PG_PID=$(head -1 "$OUT/pgdata/postmaster.pid")
psql_admin() { "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres "$@"; }
db_url() { echo "postgres://postgres@127.0.0.1:$PG_PORT/$1?sslmode=disable"; }

# ---- alertd -----------------------------------------------------------------------------
# Builds since issue 44 bound the pending alerts' bytes (limits.max_pending_bytes, 256 MiB by
# default), which two phases at full pace can fill: every post after it would be a quick 429.
# Raised where the build knows the key (an older build refuses a key it does not know).
printf 'state_dir: %s\nlimits: {max_pending_bytes: 17179869184}\n' "$OUT/probe-state" >"$OUT/probe.yaml"
MORE_LIMITS=""
if "$ALERTD" check-config "$OUT/probe.yaml" >/dev/null 2>&1; then MORE_LIMITS="  max_pending_bytes: 17179869184"; fi
rm -rf "$OUT/probe-state" "$OUT/probe.yaml"

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
$MORE_LIMITS
$2
EOF
}
# Instances on one database sign receipts with one key (builds since issue 47 require it).
RECEIPTS=""
if "$ALERTD" receipts keygen "$OUT/receipts.key" >/dev/null 2>&1; then RECEIPTS="receipts: {key_file: $OUT/receipts.key}"; fi
pgstore() { # $1 database
    echo "store: {backend: postgres, postgres: {url: \"$(db_url "$1")\", pool_size: $POOL}}"
    echo "$RECEIPTS"
}
start() { # $1 name (config $OUT/$1.yaml), $2 port; sets STARTED to its pid
    "$ALERTD" --config "$OUT/$1.yaml" --listen "127.0.0.1:$2" 2>>"$OUT/$1.log" &
    STARTED=$!
    PIDS+=("$STARTED")
    for _ in $(seq 1 300); do
        curl -fsS "http://127.0.0.1:$2/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$STARTED" 2>/dev/null || break
        sleep 0.1
    done
    say "alertd $1 did not become ready"; cat "$OUT/$1.log" >&2; exit 1
}
stop() { # $1 pid
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    forget "$1"
}

# wrk on both instances at once (or, with ALONE=1, both loads on A); $SCRIPT [post_alert.lua].
# Instance A's pid is PID_A, B's PID_B. Around the measured run: the store's counters and the
# CPU of the run's processes (A, B unless ALONE=1, the PostgreSQL postmaster's tree).
both() { # $1 phase, $2.. wrk script arguments
    local phase=$1; shift
    local script="$HERE/wrk/${SCRIPT:-post_alert.lua}"
    local second=$PORT_B
    local roots=("alertd-a=$PID_A")
    if [ "${ALONE:-0}" = 1 ]; then second=$PORT_A; else roots+=("alertd-b=$PID_B"); fi
    roots+=("postgres=$PG_PID")
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$PORT_A" -- "$@" >/dev/null 2>&1 &
    local warm=$!
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$script" "http://127.0.0.1:$second" -- "$@" >/dev/null 2>&1
    wait "$warm" || true
    flushes "$phase" before "$second"
    python3 "$HERE/tools/proccpu.py" snapshot --hz "$HZ" "${roots[@]}" >"$OUT/$phase-cpu-before.json"
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$PORT_A" -- "$@" \
        >"$OUT/$phase-a.txt" 2>&1 &
    local first=$!
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "http://127.0.0.1:$second" -- "$@" \
        >"$OUT/$phase-b.txt" 2>&1
    wait "$first"
    python3 "$HERE/tools/proccpu.py" snapshot --hz "$HZ" "${roots[@]}" >"$OUT/$phase-cpu-after.json"
    flushes "$phase" after "$second"
    python3 "$HERE/tools/proccpu.py" delta "$OUT/$phase-cpu-before.json" "$OUT/$phase-cpu-after.json" \
        >"$OUT/$phase-cpu.json" || say "$phase: no CPU figure (see $phase-cpu-*.json)"
    say "$(python3 "$HERE/tools/pgsummary.py" "$OUT" --phase "$phase")"
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

# One group of a POST round on a database of its own, with instances started for it:
# "alone" (A only, both wrk loads on it) or "two" (A and B, wrk on each).
post_group() { # $1 round, $2 alone|two
    local round=$1 kind=$2 db="post_r${1}_${2}"
    psql_admin -c "CREATE DATABASE $db"
    config "a-r$round-$kind" "$(pgstore "$db")"
    start "a-r$round-$kind" "$PORT_A"
    PID_A=$STARTED
    if [ "$kind" = alone ]; then
        say "round $round/$ROUNDS_POST, one instance alone: both loads on A, ${DURATION}s each"
        ALONE=1 both "alone-one-r$round" 1 alone-one
        ALONE=1 both "alone-spread-r$round" 100 alone-spread
    else
        config "b-r$round-$kind" "$(pgstore "$db")"
        start "b-r$round-$kind" "$PORT_B"
        PID_B=$STARTED
        say "round $round/$ROUNDS_POST, two instances: $CONNS connections on each, ${DURATION}s each"
        both "one-r$round" 1 one
        both "spread-r$round" 100 spread
        stop "$PID_B"
        rm -rf "$OUT/state-b-r$round-$kind"
    fi
    stop "$PID_A"
    rm -rf "$OUT/state-a-r$round-$kind"
    psql_admin -c "DROP DATABASE $db WITH (FORCE)" || say "could not drop database $db (left in the cluster)"
}

if wants post; then
    for round in $(seq 1 "$ROUNDS_POST"); do
        # ABBA: which group goes first alternates, so a drift in the machine's speed falls on both.
        if ((round % 2)); then post_group "$round" alone; post_group "$round" two
        else post_group "$round" two; post_group "$round" alone; fi
    done
fi

if wants current || wants latency; then
    config a "$(pgstore alertd)"
    config b "$(pgstore alertd)"
    start a "$PORT_A"
    PID_A=$STARTED
    if wants current; then
        curl -fsS -o /dev/null -H 'Content-Type: application/json' -d '{"title":"Shown","buttons":[{"title":"OK"}]}' \
            "http://127.0.0.1:$PORT_A/v1/clients/shown/alerts"
        say "GET current of one client, instance A alone, ${DURATION}s"
        ALONE=1 SCRIPT=get_current.lua both alone-current shown
    fi
    start b "$PORT_B"
    PID_B=$STARTED
    if wants current; then
        say "GET current of one client through both instances, ${DURATION}s"
        SCRIPT=get_current.lua both current shown
    fi
    if wants latency; then
        say "latency: $WAITERS waiters (half on each), a waiter on A, the choice on B"
        python3 "$HERE/tools/waiters.py" park --port "$PORT_B" --waiters $((WAITERS / 2)) --duration 55 --wait 60 \
            --bg-client bgb >/dev/null 2>"$OUT/park-b.log" &
        PARK=$!
        PIDS+=("$PARK")
        sleep 5
        python3 "$HERE/tools/waiters.py" latency --port "$PORT_A" --choose-port "$PORT_B" --waiters $((WAITERS / 2)) \
            --rounds "$ROUNDS" --duration 40 --wait 60 --json "$OUT/latency.json" >/dev/null 2>"$OUT/latency.log" || true
        kill "$PARK" 2>/dev/null || true
        wait "$PARK" 2>/dev/null || true
        forget "$PARK"
    fi
    stop "$PID_A"
    stop "$PID_B"
fi

if wants pgbench; then
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
fi

if wants sqlite; then
    config s "durability: full"
    start s "$PORT_S"
    PID_S=$STARTED
    say "reference: one alertd on SQLite, one client, $CONNS connections, ${DURATION}s"
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT_S" -- 1 ref >/dev/null 2>&1
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT_S" -- 1 ref \
        >"$OUT/sqlite.txt" 2>&1
    stop "$PID_S"
fi

echo "end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/loadavg.txt"
{
    echo "alertd $ALERTD; POST: $ROUNDS_POST round(s) of each, ${DURATION}s after ${WARMUP}s of warm-up, $CONNS connections" \
        "per wrk, pool_size $POOL, synchronous_commit ${PG_SYNC:-on}; medians over the rounds"
    python3 "$HERE/tools/pgsummary.py" "$OUT" "$ROUNDS_POST"
} >"$OUT/summary.txt"
cat "$OUT/summary.txt"
ln -sfn "$(basename "$OUT")" "$HERE/out/pg-latest"
