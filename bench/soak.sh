#!/usr/bin/env bash
# bench/soak.sh: alertd answering alerts at full speed for a long time; does the state stay bounded?
#
#   bench/soak.sh                      one hour (the issue-27 soak), release build of alertd
#   bench/soak.sh --duration 600       ten minutes
#   ALERTD=/path/to/alertd bench/soak.sh --duration 600
#
# wrk (bench/wrk/answer_loop.lua) posts an alert and answers it, over and over, on CONNS
# connections, each with a client of its own: every alert ends answered, so terminal
# alerts pile up as fast as alertd takes them. alerts.retention_max (alertd's default
# unless RETENTION_MAX is set) bounds what each client keeps; the purge runs once a
# minute. Every SAMPLE seconds the script records the state directory's size (du), the
# daemon's RSS (/proc) and alertd_store_bytes (/metrics) in samples.csv.
#
# At the end it judges: the state directory stopped growing (its growth over the last
# third of the run below 10 %, once the clients held retention_max alerts each), it is
# under BOUND_MB, and RSS is flat (its growth over the last two thirds below 10 %).
#
# Environment (defaults in brackets):
#   ALERTD        alertd binary [.build-rel/release/alertd, else .build/release/alertd]
#   DURATION      seconds of load [3600]      CONNS [4] connections = wrk threads = clients
#   SAMPLE        seconds between samples [10]
#   RETENTION_MAX alerts.retention_max [alertd's default]
#   BOUND_MB      the state directory's bound, MB [CONNS x 150]
#   DURABILITY    [full]                      PORT [18181]
#
# Everything runs on 127.0.0.1; the daemon is stopped by PID on exit and its state
# directory removed. Output: bench/out/soak-<timestamp>/ (summary.txt, samples.csv,
# wrk.txt, alertd.log).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
DURATION=${DURATION:-3600}
while [[ $# -gt 0 ]]; do
    case "$1" in
        --duration) DURATION=$2; shift ;;
        --duration=*) DURATION=${1#--duration=} ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
CONNS=${CONNS:-4}
SAMPLE=${SAMPLE:-10}
BOUND_MB=${BOUND_MB:-$((CONNS * 150))}
DURABILITY=${DURABILITY:-full}
PORT=${PORT:-18181}
if [[ -z "${ALERTD:-}" ]]; then
    for candidate in "$ROOT/.build-rel/release/alertd" "$ROOT/.build/release/alertd"; do
        [[ -x $candidate ]] && { ALERTD=$candidate; break; }
    done
fi
[[ -x "${ALERTD:-}" ]] || { echo "no alertd binary: build one (swift build -c release) or set ALERTD" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is needed" >&2; exit 2; }

OUT="$HERE/out/soak-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
STATE=$(mktemp -d /tmp/alertd-soak.XXXXXX)
PID=""
WRK_PID=""
cleanup() {
    [[ -n $WRK_PID ]] && kill "$WRK_PID" 2>/dev/null || true
    if [[ -n $PID ]]; then
        kill -TERM "$PID" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$PID" 2>/dev/null || true
    fi
    rm -rf "$STATE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

{
    echo "listen: \"127.0.0.1:$PORT\""
    echo "durability: $DURABILITY"
    echo "log: { level: warning }"
    [[ -n ${RETENTION_MAX:-} ]] && echo "alerts: { retention_max: $RETENTION_MAX }"
} > "$OUT/alertd.yaml"
"$ALERTD" --config "$OUT/alertd.yaml" --state-dir "$STATE/state" 2> "$OUT/alertd.log" &
PID=$!
for _ in $(seq 1 100); do
    curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/readyz" && break
    sleep 0.1
done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/readyz" || { echo "alertd did not start; see $OUT/alertd.log" >&2; exit 1; }

sample() {
    local t=$1 state rss store terminal
    state=$(du -sb "$STATE/state" | cut -f1)
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status")
    local metrics
    metrics=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" || true)
    store=$(awk '/^alertd_store_bytes / {printf "%d", $2}' <<<"$metrics")
    terminal=$(awk '/^alertd_alerts_terminal_total/ {s += $2} END {printf "%d", s}' <<<"$metrics")
    echo "$t,$state,$rss,${store:-},${terminal:-}" >> "$OUT/samples.csv"
}

echo "seconds,state_dir_bytes,rss_kib,alertd_store_bytes,terminal_total" > "$OUT/samples.csv"
echo "soak: $DURATION s, $CONNS connections/clients, alertd $ALERTD (pid $PID), output $OUT"
sample 0
wrk -t"$CONNS" -c"$CONNS" -d"${DURATION}s" --timeout 10s --latency -s "$HERE/wrk/answer_loop.lua" "http://127.0.0.1:$PORT" > "$OUT/wrk.txt" 2>&1 &
WRK_PID=$!
START=$(date +%s)
while kill -0 "$WRK_PID" 2>/dev/null; do
    sleep "$SAMPLE"
    kill -0 "$PID" 2>/dev/null || { echo "alertd exited during the soak; see $OUT/alertd.log" >&2; exit 1; }
    sample $(( $(date +%s) - START ))
done
wait "$WRK_PID" || true
WRK_PID=""
sample $(( $(date +%s) - START ))

python3 - "$OUT" "$DURATION" "$CONNS" "$BOUND_MB" "${RETENTION_MAX:-default}" <<'PY' | tee "$OUT/summary.txt"
import csv, re, sys
out, duration, conns, bound_mb, retention = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rows = [r for r in csv.DictReader(open(f"{out}/samples.csv"))]
t = [float(r["seconds"]) for r in rows]
state = [int(r["state_dir_bytes"]) for r in rows]
rss = [int(r["rss_kib"]) for r in rows]
wrk = open(f"{out}/wrk.txt").read()
answered = int(re.search(r"ANSWERED (\d+)", wrk).group(1)) if "ANSWERED" in wrk else 0
refused = int(re.search(r"REFUSED (\d+)", wrk).group(1)) if "REFUSED" in wrk else 0
def at(fraction):
    """The sample nearest to a fraction of the run."""
    target = t[-1] * fraction
    return min(range(len(t)), key=lambda i: abs(t[i] - target))
third, two_thirds = at(1 / 3), at(2 / 3)
mb = lambda b: b / 1e6
state_growth = (state[-1] - state[two_thirds]) / max(1, state[two_thirds])
rss_growth = (rss[-1] - rss[third]) / max(1, rss[third])
print(f"soak: {t[-1]:.0f} s of load, {conns} connections/clients, retention_max {retention}")
print(f"answered: {answered} alerts ({answered / max(1, duration):.0f}/s), other answers: {refused}")
print(f"state directory: max {mb(max(state)):.1f} MB, at 1/3 {mb(state[third]):.1f} MB, "
      f"at 2/3 {mb(state[two_thirds]):.1f} MB, end {mb(state[-1]):.1f} MB (bound {bound_mb:.0f} MB)")
print(f"RSS: at 1/3 {rss[third] / 1024:.1f} MiB, at 2/3 {rss[two_thirds] / 1024:.1f} MiB, end {rss[-1] / 1024:.1f} MiB, "
      f"max {max(rss) / 1024:.1f} MiB")
verdicts = [
    ("state directory under the bound", mb(max(state)) <= bound_mb),
    (f"state directory flat over the last third (growth {state_growth * 100:+.1f} %)", state_growth < 0.10),
    (f"RSS flat over the last two thirds (growth {rss_growth * 100:+.1f} %)", rss_growth < 0.10),
]
for text, ok in verdicts:
    print(f"{'PASS' if ok else 'FAIL'}: {text}")
PY
