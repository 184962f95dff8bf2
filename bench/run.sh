#!/usr/bin/env bash
# bench/run.sh: alertd against a minimal libmicrohttpd baseline, same machine, same run.
#
#   bench/run.sh                  build the baseline and alertd (release), run everything
#   bench/run.sh --skip-build     use an existing binary: $ALERTD, else .build/release/alertd
#   bench/run.sh --baseline-only  build and measure only the C baseline (no Swift needed)
#   bench/run.sh --quick          short smoke run (3 s wrk, 1 000 waiters, 10 000 pending);
#                                 the waiter and pending targets then read INVALID (too small)
#   bench/run.sh --phases http,latency,rss,pending   run only some alertd phases
#
# Environment (defaults in brackets):
#   ALERTD        alertd binary; setting it skips the Swift build
#   DURATION [10] seconds per measured wrk run     WARMUP [2]  seconds of wrk warm-up
#   CONNS [64]    wrk connections                  WRK_THREADS [2]
#   THREADS [nproc] baseline thread-pool size (alertd: whatever it uses itself)
#   WAITERS [10000] parked waiters (latency, rss)  ROUNDS [2000] latency rounds
#   PENDING [100000] pending alerts                PENDING_DEPTH [4] pipelined posts per connection
#   POST_CLIENTS [8] clients the wrk POST load is spread over (bench, bench-1, ...)
#   BASE_PORT [18080] baseline port; alertd uses BASE_PORT+1
#   BASELINE_IDLE_RSS [1] also measure the baseline's RSS per idle keep-alive connection
#   BASELINE_MEMORY_LIMIT [0] baseline's MHD_OPTION_CONNECTION_MEMORY_LIMIT in bytes (0: MHD's 32 KiB)
#   LOG_LEVEL [info] alertd log.level
#   DURABILITY [full] alertd durability (full or normal) for every phase
#
# Everything runs on 127.0.0.1. Raw output goes to bench/out/<timestamp>/ (gitignored;
# bench/out/latest points at the newest), the summary table to stdout and summary.txt.
# Every wait below is bounded; every process it starts is stopped by PID on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
NPROC=$(nproc)

BASELINE_ONLY=0
SKIP_BUILD=0
QUICK=0
PHASES=${PHASES:-http,latency,rss,pending}
ARGS_GIVEN="$*"
while [[ $# -gt 0 ]]; do
    case "$1" in
        --baseline-only) BASELINE_ONLY=1 ;;
        --skip-build) SKIP_BUILD=1 ;;
        --quick) QUICK=1 ;;
        --phases) PHASES=$2; shift ;;
        --phases=*) PHASES=${1#--phases=} ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if [[ $QUICK -eq 1 ]]; then
    : "${DURATION:=3}" "${WARMUP:=1}" "${WAITERS:=1000}" "${ROUNDS:=200}" "${PENDING:=10000}"
fi
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-64}
WRK_THREADS=${WRK_THREADS:-2}
THREADS=${THREADS:-$NPROC}
WAITERS=${WAITERS:-10000}
ROUNDS=${ROUNDS:-2000}
PENDING=${PENDING:-100000}
PENDING_DEPTH=${PENDING_DEPTH:-4}
POST_CLIENTS=${POST_CLIENTS:-8}
BASE_PORT=${BASE_PORT:-18080}
BASELINE_IDLE_RSS=${BASELINE_IDLE_RSS:-1}
BASELINE_MEMORY_LIMIT=${BASELINE_MEMORY_LIMIT:-0}
LOG_LEVEL=${LOG_LEVEL:-info}
BASELINE_PORT=$BASE_PORT
ALERTD_PORT=$((BASE_PORT + 1))

STAMP=$(date +%Y%m%d-%H%M%S)
OUT="$HERE/out/$STAMP"
mkdir -p "$OUT"
ln -sfn "$STAMP" "$HERE/out/latest"

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$OUT/run.log" >&2; }
die() { say "ERROR: $*"; exit 1; }

# ---- process bookkeeping: we only ever stop PIDs we started ----------------------
declare -a STARTED=()
declare -a TMPDIRS=()
# running PID: exists and is not a zombie
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
forget() { local p keep=(); for p in "${STARTED[@]}"; do [[ "$p" != "$1" ]] && keep+=("$p"); done; STARTED=("${keep[@]}"); }
cleanup() {
    local pid
    for pid in "${STARTED[@]}"; do
        if running "$pid"; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
            if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
        fi
    done
    local d
    for d in "${TMPDIRS[@]}"; do [[ -n "$d" && -d "$d" ]] && rm -rf -- "$d"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# stop_pid PID NAME: SIGTERM, wait up to 30 s, then SIGKILL (noted in the log)
stop_pid() {
    local pid=$1 name=$2 i
    if running "$pid"; then
        kill -TERM "$pid"
        for i in $(seq 1 300); do running "$pid" || break; sleep 0.1; done
        if running "$pid"; then
            say "WARNING: $name (PID $pid) still running 30 s after SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
    else
        say "$name (PID $pid) had already exited"
    fi
    wait "$pid" 2>/dev/null || true
    forget "$pid"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_http URL SECONDS [STATUS]: poll every 50 ms until URL answers STATUS (200)
wait_http() {
    local url=$1 secs=$2 want=${3:-200} i code
    for i in $(seq 1 $((secs * 20))); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)
        [[ "$code" == "$want" ]] && return 0
        sleep 0.05
    done
    return 1
}

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo "?"; }

# ---- limits and machine info ---------------------------------------------------------
HARD_NOFILE=$(ulimit -Hn)
if [[ "$HARD_NOFILE" != unlimited ]] && (( HARD_NOFILE < WAITERS + 1000 )); then
    say "WARNING: hard open-file limit $HARD_NOFILE < WAITERS+1000 ($((WAITERS + 1000))); raise it (ulimit -Hn as root)"
fi
ulimit -n "$HARD_NOFILE" 2>/dev/null || say "WARNING: could not raise ulimit -n to $HARD_NOFILE"

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command: bench/run.sh $ARGS_GIVEN"
    echo "settings: DURATION=$DURATION WARMUP=$WARMUP CONNS=$CONNS WRK_THREADS=$WRK_THREADS THREADS=$THREADS" \
         "WAITERS=$WAITERS ROUNDS=$ROUNDS PENDING=$PENDING PENDING_DEPTH=$PENDING_DEPTH POST_CLIENTS=$POST_CLIENTS" \
         "QUICK=$QUICK PHASES=$PHASES LOG_LEVEL=$LOG_LEVEL BASELINE_MEMORY_LIMIT=$BASELINE_MEMORY_LIMIT"
    echo "nproc: $NPROC"
    echo "cpu: $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "memory: $(awk '/^MemTotal/ {print $2, $3}' /proc/meminfo)"
    echo "kernel: $(uname -srm)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "libmicrohttpd: $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?')"
    echo "wrk: $(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//')"
    echo "cc: $(cc --version | head -1)"
    echo "python: $(python3 --version 2>&1)"
    echo "swift: $(swift --version 2>/dev/null | head -1 || echo 'not found')"
    echo "git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no commit') $(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo '(dirty tree)')"
    echo "ulimit -n: $(ulimit -n) (hard $HARD_NOFILE)"
    echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

# ---- (a) build the baseline ----------------------------------------------------------------
BASELINE_BIN="$HERE/baseline/mhd-baseline"
say "building the C baseline"
# shellcheck disable=SC2046
cc -O2 -Wall -Wextra -o "$BASELINE_BIN" "$HERE/baseline/mhd_baseline.c" \
    $(pkg-config --cflags --libs libmicrohttpd) -lpthread

# ---- (b) build alertd (release) ------------------------------------------------------------
if [[ $BASELINE_ONLY -eq 0 ]]; then
    if [[ -n "${ALERTD:-}" ]]; then
        say "using ALERTD=$ALERTD (no build)"
    elif [[ $SKIP_BUILD -eq 1 ]]; then
        ALERTD="$ROOT/.build/release/alertd"
        say "--skip-build: using $ALERTD"
    else
        say "building alertd: swift build -c release --product alertd"
        (cd "$ROOT" && swift build -c release --product alertd) > "$OUT/swift-build.log" 2>&1 \
            || { tail -30 "$OUT/swift-build.log" >&2; die "swift build failed (log: $OUT/swift-build.log)"; }
        ALERTD="$(cd "$ROOT" && swift build -c release --show-bin-path)/alertd"
    fi
    [[ -x "$ALERTD" ]] || die "no alertd binary at $ALERTD"
    echo "alertd: $ALERTD ($(stat -c '%y' "$ALERTD"), sha256 $(sha256sum "$ALERTD" | cut -c1-16))" >> "$OUT/machine.txt"
fi

# busy_check NAME: how busy the machine is (1 s sample while the bench itself is idle), to cpubusy.txt
busy=0
busy_check() {
    busy=$(python3 "$HERE/tools/cpubusy.py" 1)
    echo "$1 busy_before=$busy" >> "$OUT/cpubusy.txt"
    if (( busy > 10 )); then say "WARNING: the machine is ${busy}% busy before $1: figures are indicative only"; fi
}

# ---- wrk ---------------------------------------------------------------------------------
# run_wrk NAME URL SERVER_PID SCRIPT [SCRIPT ARGS...]: warm-up, then the measured run into
# $OUT/NAME.txt, wrapped in cpubusy.py, which logs the CPU share of the server, of wrk and of
# everything else during the run to cpubusy.txt
run_wrk() {
    local name=$1 url=$2 spid=$3 script=$4; shift 4
    local extra=()
    [[ $# -gt 0 ]] && extra=(-- "$@")
    timeout $((WARMUP + 30)) wrk -t"$WRK_THREADS" -c"$CONNS" -d"${WARMUP}s" -s "$script" "$url" "${extra[@]}" \
        > "$OUT/$name.warmup.txt" 2>&1 || say "WARNING: wrk warm-up for $name exited with $?"
    python3 "$HERE/tools/cpubusy.py" --pid "$spid" --label "$name" --out "$OUT/cpubusy.txt" -- \
        timeout $((DURATION + 30)) wrk -t"$WRK_THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$script" "$url" \
        "${extra[@]}" > "$OUT/$name.txt" 2> "$OUT/$name.stderr" || say "WARNING: wrk for $name exited with $?"
    say "$name: $(grep '^RESULT' "$OUT/$name.txt" | cut -d' ' -f2- || echo 'no RESULT line')"
    say "$name: CPU share during the run (% of all cores): $(tail -1 "$OUT/cpubusy.txt" | cut -d' ' -f2-)"
    local other steal
    other=$(tail -1 "$OUT/cpubusy.txt" | sed -n 's/.* other=\([0-9]*\).*/\1/p')
    steal=$(tail -1 "$OUT/cpubusy.txt" | sed -n 's/.* steal=\([0-9]*\).*/\1/p')
    other=$(( ${other:-0} + ${steal:-0} ))
    if (( other > 10 )); then
        say "WARNING: other work (or steal) took ${other}% of the machine during $name: figures are indicative only"
    fi
}

# ---- alertd helpers -------------------------------------------------------------------------
APID=""
ASTATE=""
CONFIG="$OUT/alertd.yaml"
A="http://127.0.0.1:$ALERTD_PORT"
# start_alertd PHASE: fresh state directory, wait for /readyz
start_alertd() {
    local phase=$1
    ASTATE=$(mktemp -d "${TMPDIR:-/tmp}/alertd-bench.XXXXXX")
    TMPDIRS+=("$ASTATE")
    port_in_use "$ALERTD_PORT" && die "port $ALERTD_PORT is in use (set BASE_PORT)"
    "$ALERTD" --config "$CONFIG" --listen "127.0.0.1:$ALERTD_PORT" --state-dir "$ASTATE" \
        > "$OUT/alertd-$phase.log" 2>&1 &
    APID=$!
    STARTED+=("$APID")
    if ! wait_http "$A/readyz" 60; then
        tail -20 "$OUT/alertd-$phase.log" >&2 || true
        die "alertd did not become ready within 60 s (log: $OUT/alertd-$phase.log)"
    fi
    say "alertd ($phase) ready: PID $APID, state $ASTATE, VmRSS $(rss_kib "$APID") KiB"
}
stop_alertd() {
    local phase=$1
    say "alertd ($phase): VmRSS $(rss_kib "$APID") KiB before stop"
    stop_pid "$APID" "alertd ($phase)"
    rm -rf -- "$ASTATE"
}
has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

ALERT_JSON='{"title":"Deploy build 4711 to production?","message":"All 1342 checks passed.","buttons":[{"title":"Deploy","style":"default"},{"title":"Cancel","style":"cancel"}],"metadata":{"service":"checkout"}}'

if [[ $BASELINE_ONLY -eq 0 ]]; then
    cat > "$CONFIG" <<EOF
# generated by bench/run.sh; --listen and --state-dir come from the command line
listen: "127.0.0.1:$ALERTD_PORT"
durability: ${DURABILITY:-full}
log:
  level: $LOG_LEVEL
limits:
  max_wait_seconds: 60
  max_waiters: 200000
  max_connections: 30000
  max_pending_per_client: 200000
  max_pending_total: 5000000
EOF
fi

# ---- (c, d) the baseline and alertd under wrk, interleaved ---------------------------------
# Both servers run at once (an idle one costs nothing) so that each alertd run directly
# follows the matching baseline run: background load drifts less between the two.
port_in_use "$BASELINE_PORT" && die "port $BASELINE_PORT is in use (set BASE_PORT)"
say "starting the baseline on 127.0.0.1:$BASELINE_PORT with $THREADS threads"
"$BASELINE_BIN" "$BASELINE_PORT" "$THREADS" 30000 "$BASELINE_MEMORY_LIMIT" 2> "$OUT/baseline.log" &
BPID=$!
STARTED+=("$BPID")
wait_http "http://127.0.0.1:$BASELINE_PORT/readyz" 10 || die "baseline did not start (see $OUT/baseline.log)"
HTTP_ALERTD=0
if [[ $BASELINE_ONLY -eq 0 ]] && has_phase http; then
    HTTP_ALERTD=1
    start_alertd http
    code=$(curl -s -o "$OUT/warm_post.json" -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
        -d "$ALERT_JSON" "$A/v1/clients/bench/alerts" || true)
    [[ "$code" == 201 ]] || say "WARNING: warm-up POST answered $code: $(head -c 300 "$OUT/warm_post.json")"
    wait_http "$A/v1/clients/bench/alerts/current" 5 || say "WARNING: /v1/clients/bench/alerts/current is not 200"
fi
run_wrk baseline_get "http://127.0.0.1:$BASELINE_PORT/v1/clients/bench/alerts/current" "$BPID" "$HERE/wrk/report.lua"
if [[ $HTTP_ALERTD -eq 1 ]]; then
    run_wrk alertd_get "$A/v1/clients/bench/alerts/current" "$APID" "$HERE/wrk/report.lua"
    # One alert by id: a read through the store port (its committed version and position),
    # where /current answers from the published display.
    ONE_ID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT/warm_post.json" 2>/dev/null || true)
    if [[ -n "$ONE_ID" ]]; then
        run_wrk alertd_get_one "$A/v1/clients/bench/alerts/$ONE_ID" "$APID" "$HERE/wrk/report.lua"
    else
        say "WARNING: no alert id in the warm-up POST's answer: GET one alert not measured"
    fi
fi
run_wrk baseline_post "http://127.0.0.1:$BASELINE_PORT" "$BPID" "$HERE/wrk/post_alert.lua" "$POST_CLIENTS" bench
if [[ $HTTP_ALERTD -eq 1 ]]; then
    run_wrk alertd_post "$A" "$APID" "$HERE/wrk/post_alert.lua" "$POST_CLIENTS" bench
    stop_alertd http
fi
if [[ $BASELINE_IDLE_RSS -eq 1 ]]; then
    say "baseline: RSS per idle keep-alive connection ($WAITERS connections; the baseline answers at once)"
    timeout 300 python3 "$HERE/tools/waiters.py" rss --port "$BASELINE_PORT" --pid "$BPID" \
        --waiters "$WAITERS" --settle-timeout 15 --json "$OUT/baseline_idle_rss.json" \
        > /dev/null 2> "$OUT/baseline_idle_rss.log" || say "WARNING: baseline idle RSS run failed"
fi
stop_pid "$BPID" baseline

# ---- (e) alertd: waiters and pending alerts, each phase on a fresh state directory ----------
if [[ $BASELINE_ONLY -eq 0 ]]; then
    if has_phase latency; then
        start_alertd latency
        busy_check latency
        say "latency: $WAITERS background waiters, up to $ROUNDS choice rounds"
        timeout 600 python3 "$HERE/tools/waiters.py" latency --port "$ALERTD_PORT" --pid "$APID" \
            --waiters "$WAITERS" --rounds "$ROUNDS" --json "$OUT/latency.json" \
            > /dev/null 2> >(tee "$OUT/latency.log" >&2) || say "WARNING: waiters.py latency failed ($?)"
        stop_alertd latency
    fi
    if has_phase rss; then
        start_alertd rss
        say "rss: parking $WAITERS waiters"
        timeout 600 python3 "$HERE/tools/waiters.py" rss --port "$ALERTD_PORT" --pid "$APID" \
            --waiters "$WAITERS" --json "$OUT/waiters_rss.json" \
            > /dev/null 2> >(tee "$OUT/waiters_rss.log" >&2) || say "WARNING: waiters.py rss failed ($?)"
        stop_alertd rss
    fi
    if has_phase pending; then
        start_alertd pending
        busy_check pending
        say "pending: posting $PENDING alerts"
        timeout 900 python3 "$HERE/tools/pending.py" load --port "$ALERTD_PORT" --pid "$APID" \
            --count "$PENDING" --clients 4 --prefix pend --depth "$PENDING_DEPTH" --json "$OUT/pending_load.json" \
            > /dev/null 2> >(tee "$OUT/pending_load.log" >&2) || say "WARNING: pending.py load failed ($?)"
        expected=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pending_expected", ""))' \
            "$OUT/pending_load.json" 2>/dev/null || true)
        say "pending: restarting alertd with ${expected:-?} pending alerts"
        timeout 300 python3 "$HERE/tools/pending.py" restart --port "$ALERTD_PORT" --old-pid "$APID" \
            --pid-file "$OUT/alertd-restart.pid" --log "$OUT/alertd-restart.log" --client pend-0 \
            ${expected:+--expect-pending "$expected"} --json "$OUT/pending_restart.json" \
            -- "$ALERTD" --config "$CONFIG" --listen "127.0.0.1:$ALERTD_PORT" --state-dir "$ASTATE" \
            > /dev/null 2> >(tee "$OUT/pending_restart.log" >&2) || say "WARNING: pending.py restart failed ($?)"
        wait "$APID" 2>/dev/null || true   # reap the first instance (pending.py stopped it)
        forget "$APID"
        if [[ -s "$OUT/alertd-restart.pid" ]]; then
            APID=$(cat "$OUT/alertd-restart.pid")
            STARTED+=("$APID")
            stop_alertd pending-restarted
        fi
    fi
fi

echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/machine.txt"
echo
python3 "$HERE/tools/summary.py" "$OUT"
if [[ $BASELINE_ONLY -eq 1 ]]; then
    echo "(baseline only: alertd not run)"
fi
[[ $QUICK -eq 1 ]] && echo "(--quick: too small to judge the targets)"
echo "raw results: $OUT"
