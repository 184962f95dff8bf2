#!/usr/bin/env bash
# Runs `swift test ARGS...` and fails when it ran no test at all: a --filter that
# matches nothing (a renamed suite, a typo) makes `swift test` pass having checked
# nothing, and a tier that goes quiet must fail instead. The output is shown as it
# comes; its exit status is swift test's unless that passed with zero tests run.
#
# With --limit DURATION first (seconds, or minutes as 10m), swift test is stopped when
# it runs longer (exit 124, as timeout's) and what was still running is named last,
# where a log's tail shows it: the tests that started and did not finish, and the
# report of the traced tests' harness (Tests/AlertdTestSupport/HangTrace.swift), which
# says which step each is stuck in. A hang names itself.
#
#   scripts/swift-test-nonempty.sh --limit 10m --skip-build --filter AlertdAPIContractTests
set -uo pipefail
limit=""
if [ "${1:-}" = "--limit" ]; then
    limit=$2
    shift 2
fi
log=$(mktemp /tmp/alertd-swift-test-XXXXXX.log)
trap 'rm -f "$log" "$log.hang"' EXIT
if [ -n "$limit" ]; then
    case $limit in
        *m) seconds=$((${limit%m} * 60)) ;;
        *) seconds=$limit ;;
    esac
    # The report is written 30 s before the end (and every 30 s after), while the hang lasts.
    export ALERTD_TEST_HANG_REPORT="$log.hang" ALERTD_TEST_HANG_AFTER=$((seconds > 60 ? seconds - 30 : seconds / 2))
    timeout --kill-after=30 "$seconds" swift test "$@" 2>&1 | tee "$log"
else
    swift test "$@" 2>&1 | tee "$log"
fi
rc=${PIPESTATUS[0]}
if [ -n "$limit" ] && [ "$rc" -ge 124 ]; then
    echo "swift test $*: stopped after $limit; the tests it showed start and not end (what it had not written out yet may hide some that did):" >&2
    python3 "$(dirname "$0")/swift-test-unfinished.py" "$log" >&2
    echo "where the traced tests were, $ALERTD_TEST_HANG_AFTER s into the run or later:" >&2
    sed 's/^/  /' "$log.hang" >&2 2>/dev/null || echo "  (no report: no traced test ran long enough)" >&2
    exit "$rc"
fi
[ "$rc" -eq 0 ] || exit "$rc"
# Swift Testing's summary: "Test run with N tests in M suites passed after …";
# XCTest's: "Executed N tests, with 0 failures …". The suite is Swift Testing.
ran=$(sed -n 's/.*Test run with \([0-9][0-9]*\) tests\{0,1\}\b.*/\1/p' "$log" | tail -1)
if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then
    echo "swift test $*: no test ran (${ran:-no summary line}); a filter that matches nothing checks nothing" >&2
    exit 1
fi
