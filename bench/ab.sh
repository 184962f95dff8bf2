#!/usr/bin/env bash
# bench/ab.sh: two builds of alertd against each other, one run of each in turn, ROUNDS
# times, so the machine's drift (another process, the CPU's clock) falls on both alike.
# Prints every run and, per build, the median; then B's median against A's.
#
#   bench/ab.sh post A B           POSTs, SQLite (durability: full), wrk -t2 -c64, a fresh
#                                  state directory per run; with PERF=1 also perf stat's CPU
#                                  time and context switches a post (the daemon's own)
#   bench/ab.sh pg-current A B     GET …/current of one client with an alert displayed,
#                                  through two instances on one PostgreSQL (SPEC §9: each
#                                  read checks the client's version in the database)
#   bench/ab.sh pg-current-alone A B   the same, one instance, both loads on it
#   bench/ab.sh answer A B         decisions: each of ANSWER_CONNS wrk threads (default 16) posts an
#                                  alert to a client of its own and answers it, over and over
#                                  (wrk/answer_loop.lua), SQLite (durability: full), a fresh state
#                                  directory per run: decisions a second (each one a post and a
#                                  choice), the figure receipts (SPEC §14, issue 47) cost; with
#                                  PERF=1 also the daemon's CPU time and context switches a decision
#   bench/ab.sh pg-answer A B      the same through two instances on one PostgreSQL database (half
#                                  the threads on each), a fresh database per run: every decision
#                                  takes its turn at the one chain of receipts
#
# A and B are alertd binaries (release builds). Environment: ROUNDS [5], DURATION [10]
# seconds a run, WARMUP [2], PORT [19180]; an environment for one build only goes in
# ENV_A / ENV_B (e.g. ENV_B="GLIBC_TUNABLES=glibc.malloc.arena_max=2").
# Raw output: bench/out/ab-<mode>-<timestamp>/.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${1:?"usage: bench/ab.sh post|pg-current|pg-current-alone|answer|pg-answer A B"}
BIN_A=${2:?"binary A"}
BIN_B=${3:?"binary B"}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
PORT=${PORT:-19180}
OUT="$HERE/out/ab-$MODE-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
say() { echo "[ab.sh] $*" >&2; }
for tool in wrk python3 curl; do command -v "$tool" >/dev/null || { say "needs $tool"; exit 2; }; done
[ "${PERF:-0}" = 0 ] || command -v perf >/dev/null || { say "PERF=1 needs perf (linux-perf)"; exit 2; }

PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

# A receipts key for the instances on PostgreSQL, made once (SPEC §14: every instance signs
# with one key). Builds since issue 47's first part read the section; those before it refuse it.
KEY="$OUT/receipts-key.pem"

# ---- PostgreSQL, once for every run (pg-* modes) ----------------------------------------
URL=""
if [[ $MODE == pg-* ]]; then
    # shellcheck source=tools/pgcluster.sh
    source "$HERE/tools/pgcluster.sh"
    pg_cluster "$OUT" $((PORT + 10))
    # A build before receipts has no keygen: the other one makes the key.
    "$BIN_B" receipts keygen "$KEY" >/dev/null 2>&1 || "$BIN_A" receipts keygen "$KEY" >/dev/null 2>&1 || true
fi
ANSWER_CONNS=${ANSWER_CONNS:-16}
# Decisions a second of an answer_loop.lua output: its ANSWERED count over the run.
decisions() { python3 -c "import re,sys; t=open(sys.argv[1]).read(); print(round(int(re.search(r'ANSWERED (\\d+)', t).group(1)) / float(sys.argv[2]), 1))" "$1" "$DURATION"; }
refused() { sed -n 's/^REFUSED \([0-9]*\).*/\1/p' "$1"; }


# Builds since issue 44 bound the pending alerts' bytes (limits.max_pending_bytes, 256 MiB by
# default), which a run at full pace can fill: every post after it is a quick 429, which would
# count as a fast post. Raised where the build knows the key (older builds refuse unknown keys).
more_limits() { # $1 binary
    printf 'state_dir: %s\nlimits: {max_pending_bytes: 17179869184}\n' "$OUT/probe-state" >"$OUT/probe.yaml"
    if "$1" check-config "$OUT/probe.yaml" >/dev/null 2>&1; then echo ", max_pending_bytes: 17179869184"; fi
}
MORE_LIMITS_A=$(more_limits "$BIN_A")
MORE_LIMITS_B=$(more_limits "$BIN_B")
# The receipts section where the build knows it (a build before issue 47 refuses it, and writes none).
knows_receipts() { # $1 binary
    printf 'state_dir: %s\nreceipts: {key_file: %s}\n' "$OUT/probe-state" "$KEY" >"$OUT/probe-receipts.yaml"
    "$1" check-config "$OUT/probe-receipts.yaml" >/dev/null 2>&1
}

config() { # $1 file, $2 state dir, $3 database URL (pg modes), $4 more limits, $5 receipts (yes/no)
    {
        echo "log: {level: warning}"
        echo "state_dir: $2"
        echo "limits: {max_pending_per_client: 10000000, max_pending_total: 100000000, max_connections: 60000, max_connections_per_ip: 60000${4:-}}"
        if [ -n "${3:-$URL}" ]; then
            echo "store: {backend: postgres, postgres: {url: \"${3:-$URL}\", pool_size: 8}}"
            [ "${5:-yes}" = no ] || echo "receipts: {key_file: $KEY}"
        else
            echo "durability: full"
        fi
    } >"$1"
}

# Starts build $1 (A or B) as instance $2 on port $3 (on database URL $4, pg modes); sets STARTED to its pid.
start() {
    local which=$1 name=$2 port=$3 bin env
    if [ "$which" = A ]; then bin=$BIN_A env=${ENV_A:-}; else bin=$BIN_B env=${ENV_B:-}; fi
    local state="$OUT/state-$name"
    [[ $MODE == pg-* ]] || rm -rf "$state"
    local more=$MORE_LIMITS_B
    [ "$which" = B ] || more=$MORE_LIMITS_A
    local receipts=yes
    knows_receipts "$bin" || receipts=no
    config "$OUT/$name.yaml" "$state" "${4:-}" "$more" "$receipts"
    # shellcheck disable=SC2086
    env $env "$bin" --config "$OUT/$name.yaml" --listen "127.0.0.1:$port" 2>>"$OUT/$name.log" &
    STARTED=$!
    PIDS+=("$STARTED")
    for _ in $(seq 1 300); do
        curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    say "build $which did not become ready"; cat "$OUT/$name.log" >&2; exit 1
}
stop() { kill -TERM "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
rps() { sed -n 's/^RESULT rps=\([0-9.]*\).*/\1/p' "$1"; }

# One run of build $1 (round $2): appends "build rps [cpu_us cs]" to results.
run() {
    local which=$1 round=$2 tag="$1-$2"
    case $MODE in
    post)
        start "$which" "$tag" "$PORT"
        local pid=$STARTED
        wrk -t2 -c64 -d"${WARMUP}s" -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT" -- 8 warm >/dev/null 2>&1
        wrk -t2 -c64 -d"${DURATION}s" -s "$HERE/wrk/post_alert.lua" "http://127.0.0.1:$PORT" -- 8 bench \
            >"$OUT/$tag.txt" 2>&1 &
        local load=$!
        if [ "${PERF:-0}" = 1 ]; then
            sleep 1
            perf stat -x, -e task-clock,context-switches -p "$pid" -- sleep $((DURATION - 2)) 2>"$OUT/$tag.perf"
        fi
        wait "$load"
        stop "$pid"
        local r; r=$(rps "$OUT/$tag.txt")
        local refused; refused=$(sed -n 's/^RESULT .* non2xx=\([0-9]*\).*/\1/p' "$OUT/$tag.txt")
        [ "${refused:-0}" = 0 ] || say "$tag: $refused answers were not 2xx (a bound reached?): its figure is suspect"
        if [ "${PERF:-0}" = 1 ]; then
            python3 - "$which" "$r" "$OUT/$tag.perf" $((DURATION - 2)) >>"$OUT/results" <<'EOF'
import sys
which, rps, path, secs = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
values = {line.split(",")[2]: float(line.split(",")[0]) for line in open(path) if line.count(",") > 2}
posts = rps * secs
print(which, rps, round(values["task-clock"] * 1000 / posts, 1), round(values["context-switches"] / posts, 2))
EOF
        else
            echo "$which $r" >>"$OUT/results"
        fi
        ;;
    pg-current | pg-current-alone)
        # A database of the run's own: a build never starts on a schema a newer one migrated.
        local database="run_${which,,}_${round}"
        "$PGBIN/psql" -X -q -h 127.0.0.1 -p $((PORT + 10)) -U postgres -c "CREATE DATABASE $database" postgres
        local url="postgres://postgres@127.0.0.1:$((PORT + 10))/$database?sslmode=disable"
        start "$which" "$tag-a" "$PORT" "$url"
        local a=$STARTED b="" second=$PORT
        if [ "$MODE" = pg-current ]; then
            start "$which" "$tag-b" $((PORT + 1)) "$url"
            b=$STARTED second=$((PORT + 1))
        fi
        curl -fsS -o /dev/null -H 'Content-Type: application/json' \
            -d '{"title":"Deploy build 4711?","buttons":[{"title":"Deploy"},{"title":"Cancel","style":"cancel"}]}' \
            "http://127.0.0.1:$PORT/v1/clients/shown/alerts"
        local warm=()
        for port in "$PORT" "$second"; do
            wrk -t1 -c32 -d"${WARMUP}s" -s "$HERE/wrk/get_current.lua" "http://127.0.0.1:$port" -- shown >/dev/null 2>&1 &
            warm+=($!)
        done
        wait "${warm[@]}"
        wrk -t1 -c32 -d"${DURATION}s" -s "$HERE/wrk/get_current.lua" "http://127.0.0.1:$PORT" -- shown >"$OUT/$tag-a.txt" 2>&1 &
        local first=$!
        wrk -t1 -c32 -d"${DURATION}s" -s "$HERE/wrk/get_current.lua" "http://127.0.0.1:$second" -- shown >"$OUT/$tag-b.txt" 2>&1
        wait "$first"
        stop "$a"
        [ -z "$b" ] || stop "$b"
        echo "$which $(python3 -c "print($(rps "$OUT/$tag-a.txt") + $(rps "$OUT/$tag-b.txt"))")" >>"$OUT/results"
        ;;
    answer)
        start "$which" "$tag" "$PORT"
        local pid=$STARTED
        wrk -t"$ANSWER_CONNS" -c"$ANSWER_CONNS" -d"${WARMUP}s" -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$PORT" -- warm >/dev/null 2>&1
        wrk -t"$ANSWER_CONNS" -c"$ANSWER_CONNS" -d"${DURATION}s" -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$PORT" -- bench \
            >"$OUT/$tag.txt" 2>&1 &
        local load=$!
        if [ "${PERF:-0}" = 1 ]; then
            sleep 1
            perf stat -x, -e task-clock,context-switches -p "$pid" -- sleep $((DURATION - 2)) 2>"$OUT/$tag.perf"
        fi
        wait "$load"
        stop "$pid"
        [ "$(refused "$OUT/$tag.txt")" = 0 ] || say "build $which refused $(refused "$OUT/$tag.txt") requests (see $OUT/$tag.txt)"
        local d; d=$(decisions "$OUT/$tag.txt")
        if [ "${PERF:-0}" = 1 ]; then
            python3 - "$which" "$d" "$OUT/$tag.perf" $((DURATION - 2)) >>"$OUT/results" <<'EOF'
import sys
which, rate, path, secs = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
values = {line.split(",")[2]: float(line.split(",")[0]) for line in open(path) if line.count(",") > 2}
decisions = rate * secs
print(which, rate, round(values["task-clock"] * 1000 / decisions, 1), round(values["context-switches"] / decisions, 2))
EOF
        else
            echo "$which $d" >>"$OUT/results"
        fi
        ;;
    pg-answer)
        # A database of the run's own: both builds start from an empty schema and chain.
        local database="run_${which,,}_${round}"
        "$PGBIN/psql" -X -q -h 127.0.0.1 -p $((PORT + 10)) -U postgres -c "CREATE DATABASE $database" postgres
        local url="postgres://postgres@127.0.0.1:$((PORT + 10))/$database?sslmode=disable"
        start "$which" "$tag-a" "$PORT" "$url"
        local a=$STARTED
        start "$which" "$tag-b" $((PORT + 1)) "$url"
        local b=$STARTED half=$((ANSWER_CONNS / 2))
        local warm=()
        for port in "$PORT" $((PORT + 1)); do
            wrk -t"$half" -c"$half" -d"${WARMUP}s" -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$port" -- "warm$port" >/dev/null 2>&1 &
            warm+=($!)
        done
        wait "${warm[@]}"
        wrk -t"$half" -c"$half" -d"${DURATION}s" -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$PORT" -- one >"$OUT/$tag-a.txt" 2>&1 &
        local first=$!
        wrk -t"$half" -c"$half" -d"${DURATION}s" -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$((PORT + 1))" -- two >"$OUT/$tag-b.txt" 2>&1
        wait "$first"
        stop "$a"
        stop "$b"
        echo "$which $(python3 -c "print($(decisions "$OUT/$tag-a.txt") + $(decisions "$OUT/$tag-b.txt"))")" >>"$OUT/results"
        ;;
    *) say "unknown mode $MODE"; exit 2 ;;
    esac
    say "$(tail -1 "$OUT/results")"
}

say "$MODE: A=$BIN_A${ENV_A:+ ($ENV_A)}, B=$BIN_B${ENV_B:+ ($ENV_B)}, $ROUNDS rounds of ${DURATION}s; raw: $OUT"
for round in $(seq 1 "$ROUNDS"); do
    # Alternate which goes first, so neither always follows the other.
    if ((round % 2)); then run A "$round"; run B "$round"; else run B "$round"; run A "$round"; fi
done
python3 - "$OUT/results" "$MODE" <<'EOF' | tee "$OUT/summary.txt"
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
medians = {}
for build in ("A", "B"):
    mine = [r for r in rows if r[0] == build]
    columns = list(zip(*[[float(x) for x in r[1:]] for r in mine]))
    medians[build] = [statistics.median(c) for c in columns]
    unit = "decision" if sys.argv[2].endswith("answer") else "post"
    labels = ["req/s" if unit == "post" else "decisions/s", f"CPU us/{unit}", f"switches/{unit}"][: len(columns)]
    print(f"{build}: " + "  ".join(f"{l} median {m:,.1f} (runs: {', '.join(f'{x:,.1f}' for x in c)})"
                                    for l, m, c in zip(labels, medians[build], columns)))
a, b = medians["A"][0], medians["B"][0]
print(f"B against A: {'req/s' if unit == 'post' else 'decisions/s'} {100 * (b - a) / a:+.1f} %")
if len(medians["A"]) > 1:
    print(f"B against A: CPU a {unit} {100 * (medians['B'][1] - medians['A'][1]) / medians['A'][1]:+.1f} %")
EOF
