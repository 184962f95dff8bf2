#!/usr/bin/env bash
# Runs `swift test ARGS...` and fails when it ran no test at all: a --filter that
# matches nothing (a renamed suite, a typo) makes `swift test` pass having checked
# nothing, and a tier that goes quiet must fail instead. The output is shown as it
# comes; its exit status is swift test's unless that passed with zero tests run.
#
#   scripts/swift-test-nonempty.sh --skip-build --filter AlertdAPIContractTests
set -uo pipefail
log=$(mktemp /tmp/alertd-swift-test-XXXXXX.log)
trap 'rm -f "$log"' EXIT
swift test "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || exit "$rc"
# Swift Testing's summary: "Test run with N tests in M suites passed after …";
# XCTest's: "Executed N tests, with 0 failures …". The suite is Swift Testing.
ran=$(sed -n 's/.*Test run with \([0-9][0-9]*\) tests\{0,1\}\b.*/\1/p' "$log" | tail -1)
if [ -z "$ran" ] || [ "$ran" -eq 0 ]; then
    echo "swift test $*: no test ran (${ran:-no summary line}); a filter that matches nothing checks nothing" >&2
    exit 1
fi
