#!/usr/bin/env bash
# bench/tools/instructions.sh get|post|answer BINARY...: instructions per keep-alive request
# (valgrind's callgrind: counted, not timed, so repeatable on a noisy machine, to about
# ±5 000 a POST). `get`: `GET …/alerts/current` of a client with an alert displayed;
# `post`: a POST of an alert (two buttons, durability `normal`), each into the one queue;
# `answer`: a decision, the POST of an alert and its choice (with receipts, SPEC §14: its
# receipt's draft, signature and row).
# For each binary: one run of 1000 requests and one of 3000 on one connection;
# (I(3000) - I(1000)) / 2000 is the per-request cost with start-up cancelled out.
# With CALLGRIND_KEEP=DIR the two runs' profiles are kept there (DIR/<name>-1000.out,
# -3000.out), for callgrind_annotate: the difference of a function's counts between
# them, over 2000, is its share of a request.
# Release binaries need their debug info stripped first (valgrind 3.19 cannot read
# Swift's DWARF): this does it on a copy.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MODE=${1:?"usage: bench/tools/instructions.sh get|post|answer BINARY..."}
shift
case $MODE in get | post | answer) ;; *) echo "mode: get, post or answer, not $MODE" >&2; exit 2 ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/alertd-cg.XXXXXX")
PID=""
trap '[[ -n "$PID" ]] && kill "$PID" 2> /dev/null; rm -rf -- "$WORK"' EXIT
command -v valgrind > /dev/null || { echo "valgrind is missing (apt-get install valgrind)" >&2; exit 2; }
printf 'log:\n  level: warning\nlimits:\n  max_pending_per_client: 100000\n' > "$WORK/alertd.yaml"
port=19400
run() {  # run BINARY COUNT NAME -> total instructions
    local bin=$1 count=$2 name=$3
    port=$((port + 1))
    valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$bin" --config "$WORK/alertd.yaml" \
        --listen "127.0.0.1:$port" --state-dir "$WORK/state-$port" > /dev/null 2> "$WORK/valgrind.log" &
    PID=$!
    # One request first, once it listens; for `get`, the post whose alert it then reads; for
    # `answer`, a whole decision (an alert left displayed would queue every later one).
    python3 "$HERE/get_load.py" "$port" 1 "$([ "$MODE" = answer ] && echo answer || echo post)"
    python3 "$HERE/get_load.py" "$port" "$count" "$MODE"
    kill -INT "$PID"
    wait "$PID" || true
    PID=""
    [ -z "${CALLGRIND_KEEP:-}" ] || cp "$WORK/out" "$CALLGRIND_KEEP/$name-$count.out"
    sed -n 's/^summary: //p' "$WORK/out"
}
[ -z "${CALLGRIND_KEEP:-}" ] || mkdir -p "$CALLGRIND_KEEP"
for bin in "$@"; do
    name=$(basename "$bin")
    strip --strip-debug -o "$WORK/alertd" "$bin"
    small=$(run "$WORK/alertd" 1000 "$name")
    large=$(run "$WORK/alertd" 3000 "$name")
    echo "$bin: $(( (large - small) / 2000 )) instructions per $([ "$MODE" = answer ] && echo decision || echo "$MODE" | tr a-z A-Z)"
done
