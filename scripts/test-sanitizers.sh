#!/usr/bin/env bash
# The whole Swift test suite under ThreadSanitizer, then under AddressSanitizer
# (with LeakSanitizer). By default alertd's own Swift targets are rebuilt
# instrumented on top of the ordinary debug build (.build; ALERTD_SANITIZE in
# Package.swift says what that covers), the dependencies reused as they are: a few
# minutes a sanitizer, which CI can afford. SANITIZE_DEPENDENCIES=1 instruments
# everything instead, each sanitizer in a build directory of its own (.build-tsan,
# .build-asan; `swift test --sanitize=X`, ~25 min of two cores from clean each).
# Either way alertd and alertctl, which the end-to-end tier starts from the build
# directory, are instrumented too; they inherit the options below, so a report in a
# child process is not lost in its captured stderr. Every report of every process
# lands in one directory, and any report fails the run. The next plain build
# rebuilds alertd's modules without the instrumentation.
#
#   scripts/test-sanitizers.sh [thread|address]...     (default: both)
#
# Extra arguments for swift test go in SWIFT_TEST_ARGS (e.g. "--filter AlertdWireTests").
#
# At most SANITIZER_PARALLELISM (6) tests run at once: instrumented code runs several
# times slower, and with every test at once on two cores the end-to-end tests' own
# clocks (a buttonless alert's 2-s dismissal, a read timeout, a retry's max_age) ran
# out before the test got its turn. Each of those passes alone under both sanitizers.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=("$@")
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(thread address)
status=0
summary=()
for sanitizer in "${sanitizers[@]}"; do
    case $sanitizer in thread) scratch=.build-tsan ;; address) scratch=.build-asan ;; *) scratch=".build-$sanitizer" ;; esac
    reports=$(mktemp -d "/tmp/alertd-$sanitizer-XXXXXX")
    export TSAN_OPTIONS="log_path=$reports/report:halt_on_error=0:second_deadlock_stack=1"
    export ASAN_OPTIONS="log_path=$reports/report:detect_leaks=1:detect_stack_use_after_return=0"
    export UBSAN_OPTIONS="log_path=$reports/report"
    # Leaks that are not alertd's, each with its reason: scripts/lsan.supp.
    export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
    start=$SECONDS
    echo "== swift test under $sanitizer (reports: $reports)"
    rc=0
    if [ "${SANITIZE_DEPENDENCIES:-0}" = 1 ]; then
        build=(--sanitize="$sanitizer" --scratch-path "$scratch")
    else
        build=()
        export ALERTD_SANITIZE=$sanitizer
    fi
    # shellcheck disable=SC2086
    timeout --kill-after=30 120m swift test ${build[@]+"${build[@]}"} \
        --experimental-maximum-parallelization-width "${SANITIZER_PARALLELISM:-6}" ${SWIFT_TEST_ARGS:-} 2>&1 |
        tee "$reports.log" || rc=${PIPESTATUS[0]}
    unset ALERTD_SANITIZE
    echo "== $sanitizer: swift test exited $rc after $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
    verdict="swift test exited $rc"
    if compgen -G "$reports/report*" >/dev/null; then
        processes=$(ls "$reports" | wc -l)
        echo "== $sanitizer: $processes process(es) reported:"
        for file in "$reports"/report*; do
            echo "---- $file"
            head -80 "$file"
        done
        verdict+=", $processes process(es) reported: $(grep -h '^SUMMARY:' "$reports"/report* | sort | uniq -c | tr -s ' ' | paste -sd ';' -)"
        status=1
    fi
    [ $rc -eq 0 ] || status=1
    failed=$(sed -n 's/^✘ Test \(.*\) failed after .*/\1/p' "$reports.log" | sort -u | paste -sd ';' -)
    [ -z "$failed" ] || verdict+=", failed tests: $failed"
    summary+=("$sanitizer: $verdict")
done
# The end of the output is what CI keeps: say there what failed, and why.
echo "== sanitizers:"
printf '   %s\n' "${summary[@]}"
[ $status -eq 0 ] || echo "== sanitizers: FAILED (each report in full above, under its sanitizer's pass)"
exit $status
