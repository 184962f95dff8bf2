# bench/tools/yardstick.sh: sourced by floor.sh and alertmanager.sh (issue 46's yardsticks).
# The caller sets HERE (bench/), OUT (the run's directory), ROUNDS, DURATION, WARMUP and
# CONNS_LIST, defines run_one NAME CONNS ROUND TAG, and traps EXIT with yardstick_cleanup.
# One server runs at a time: its pid is SERVER, its scratch directory $OUT/TAG.state.

SERVER=""
say() { echo "[${0##*/}] $*" >&2; }
yardstick_cleanup() {
    if [ -n "$SERVER" ]; then kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
    rm -rf "$OUT"/*.state
}

# A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_ready URL LOG: until URL answers 2xx (at most 30 s), or SERVER has exited.
wait_ready() {
    for _ in $(seq 1 300); do
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        kill -0 "$SERVER" 2>/dev/null || break
        sleep 0.1
    done
    say "not ready: $1 (log $2)"; tail -20 "$2" >&2; exit 1
}

# stop_server TAG: stops SERVER and removes its scratch directory (the logs stay).
stop_server() {
    kill -TERM "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    SERVER=""
    rm -rf "$OUT/$1.state"
}

# alertd_start BIN TAG PORT: alertd as bench/ab.sh's post mode runs it (SQLite, durability: full,
# the same limits, a fresh state directory), and max_pending_bytes out of the way: at the floor's
# pace the default 256 MiB fills within a run, and every post after it is a quick 429.
alertd_start() {
    cat >"$OUT/$2.yaml" <<EOF
log: {level: warning}
state_dir: $OUT/$2.state
durability: full
limits: {max_pending_per_client: 10000000, max_pending_total: 100000000, max_pending_bytes: 17179869184, max_connections: 60000, max_connections_per_ip: 60000}
EOF
    "$1" --config "$OUT/$2.yaml" --listen "127.0.0.1:$3" 2>>"$OUT/$2.log" &
    SERVER=$!
    wait_ready "http://127.0.0.1:$3/readyz" "$OUT/$2.log"
}

# measure NAME CONNS ROUND TAG URL SCRIPT [ARGS...]: wrk -t2 -cCONNS with SCRIPT, its arguments
# ARGS then "warm" for a WARMUP-second warm-up, ARGS then "bench" for the measured DURATION
# (wrapped in cpubusy.py: "other" is the share of the machine that neither SERVER nor wrk used).
# Appends "NAME CONNS ROUND rps p99_ms errors other%" to $OUT/results and prints it.
measure() {
    local name=$1 conns=$2 round=$3 tag=$4 url=$5 script=$6
    shift 6
    wrk -t2 -c"$conns" -d"${WARMUP}s" -s "$script" "$url" -- "$@" warm >/dev/null 2>&1
    python3 "$HERE/tools/cpubusy.py" --pid "$SERVER" --label "$tag" --out "$OUT/cpubusy.txt" -- \
        wrk -t2 -c"$conns" -d"${DURATION}s" --latency -s "$script" "$url" -- "$@" bench >"$OUT/$tag.txt" 2>&1
    local result other field errors=0
    result=$(grep '^RESULT ' "$OUT/$tag.txt") || { say "$tag: wrk printed no RESULT line"; cat "$OUT/$tag.txt" >&2; exit 1; }
    other=$(tail -1 "$OUT/cpubusy.txt" | sed -n 's/.* other=\([0-9.]*\).*/\1/p')
    for field in non2xx err_connect err_read err_write err_timeout; do
        errors=$((errors + $(sed -n "s/.* $field=\([0-9]*\).*/\1/p" <<<"$result")))
    done
    local rps p99
    rps=$(sed -n 's/.* rps=\([0-9.]*\).*/\1/p' <<<"$result")
    p99=$(sed -n 's/.* p99_ms=\([0-9.]*\).*/\1/p' <<<"$result")
    echo "$name $conns $round $rps $p99 $errors ${other:-?}" >>"$OUT/results"
    printf '%-12s %3s conns  round %-2s %10s req/s  p99 %8s ms  errors %s  other CPU %s %%\n' \
        "$name" "$conns" "$round" "$rps" "$p99" "$errors" "${other:-?}"
}

# each_run A B: ROUNDS rounds; in each, for every count in CONNS_LIST, one run of A and one of B
# (run_one), the order alternating round by round as in ab.sh, so drift falls on both alike.
each_run() {
    local round conns name order
    for round in $(seq 1 "$ROUNDS"); do
        order="$1 $2"
        ((round % 2)) || order="$2 $1"
        for conns in $CONNS_LIST; do
            for name in $order; do
                run_one "$name" "$conns" "$round" "$name-c$conns-r$round"
            done
        done
    done
}

# summarise NUM DEN TARGETS [P99_MS]: per connection count, the medians of each and NUM/DEN,
# against TARGETS ("16>1 64>=2": the ratio a count must beat or reach) and NUM's p99 under P99_MS.
summarise() {
    python3 - "$OUT/results" "$@" <<'EOF' | tee "$OUT/summary.txt"
import re, statistics, sys
path, num, den, targets = sys.argv[1:5]
p99_max = float(sys.argv[5]) if len(sys.argv) > 5 else None
goals = {c: (op, float(v)) for c, op, v in re.findall(r"(\d+)(>=|>)([\d.]+)", targets)}
rows = [line.split() for line in open(path)]
for conns in dict.fromkeys(r[1] for r in rows):
    print(f"-- {conns} connections")
    med = {}
    for name in (num, den):
        mine = [r for r in rows if r[0] == name and r[1] == conns]
        rps, p99 = [float(r[3]) for r in mine], [float(r[4]) for r in mine]
        med[name] = statistics.median(rps), statistics.median(p99)
        errors = sum(int(r[5]) for r in mine)
        print(f"  {name:<12} median {med[name][0]:9,.0f} req/s  p99 median {med[name][1]:6.2f} ms"
              f"  (runs: {', '.join(f'{x:,.0f}' for x in rps)}; p99: {', '.join(f'{x:.2f}' for x in p99)})"
              + (f"  {errors} ERRORS: suspect" if errors else ""))
    ratio = med[num][0] / med[den][0]
    line = f"  {num}/{den}: {ratio:.2f}x"
    if conns in goals:
        op, goal = goals[conns]
        ok = ratio > goal if op == ">" else ratio >= goal
        line += f"  (target {op} {goal:.2f}x"
        if p99_max is not None:
            line += f", {num} p99 < {p99_max:g} ms"
            ok = ok and med[num][1] < p99_max
        line += f": {'met' if ok else 'NOT met'})"
    print(line)
EOF
}
