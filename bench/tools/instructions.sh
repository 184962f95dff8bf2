#!/usr/bin/env bash
# bench/tools/get_instructions.sh BINARY...: instructions per keep-alive
# `GET …/alerts/current` (valgrind's callgrind: counted, not timed, so
# repeatable on a noisy machine). For each binary: one run of 1000 GETs and one
# of 3000 on one connection; (I(3000) - I(1000)) / 2000 is the per-request
# cost with start-up cancelled out. Release binaries need their debug info
# stripped first (valgrind 3.19 cannot read Swift's DWARF): this does it on a copy.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/alertd-cg.XXXXXX")
PID=""
trap '[[ -n "$PID" ]] && kill "$PID" 2> /dev/null; rm -rf -- "$WORK"' EXIT
command -v valgrind > /dev/null || { echo "valgrind is missing (apt-get install valgrind)" >&2; exit 2; }
printf 'log:\n  level: warning\n' > "$WORK/alertd.yaml"
port=19400
run() {  # run BINARY COUNT -> total instructions
    local bin=$1 count=$2
    port=$((port + 1))
    valgrind --tool=callgrind --callgrind-out-file="$WORK/out" "$bin" --config "$WORK/alertd.yaml" \
        --listen "127.0.0.1:$port" --state-dir "$WORK/state-$port" > /dev/null 2> "$WORK/valgrind.log" &
    PID=$!
    python3 "$HERE/get_load.py" "$port" 1
    curl -s -m 30 -o /dev/null -H 'Content-Type: application/json' \
        -d '{"title":"Deploy?","buttons":[{"title":"OK"}]}' "http://127.0.0.1:$port/v1/clients/bench/alerts"
    python3 "$HERE/get_load.py" "$port" "$count"
    kill -INT "$PID"
    wait "$PID" || true
    PID=""
    sed -n 's/^summary: //p' "$WORK/out"
}
for bin in "$@"; do
    strip --strip-debug -o "$WORK/alertd" "$bin"
    small=$(run "$WORK/alertd" 1000)
    large=$(run "$WORK/alertd" 3000)
    echo "$bin: $(( (large - small) / 2000 )) instructions per GET"
done
