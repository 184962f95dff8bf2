#!/usr/bin/env bash
# The in-process Swift tests under ThreadSanitizer, then under AddressSanitizer (with
# LeakSanitizer). By default alertd's own Swift targets are rebuilt instrumented on top of
# the ordinary debug build (.build; ALERTD_SANITIZE in Package.swift says what that covers),
# the dependencies reused as they are: a few minutes a sanitizer, which CI can afford.
# SANITIZE_DEPENDENCIES=1 instruments everything instead, each sanitizer in a build directory
# of its own (.build-tsan, .build-asan; `swift test --sanitize=X`, ~25 min of two cores from
# clean each).
#
# What runs is what the in-process tests reach (every target but AlertdEndToEndTests): the
# end-to-end tier runs the shipped, optimised binaries in make test, and a second run of it
# here, on instrumented debug binaries, cost CI more than ten minutes. A test of these
# targets that still starts alertd or alertctl (`alertd token new`, check-config) runs the
# binary ALERTD_BINARY names (make test-sanitizers passes the shipped one).
#
# Each pass proves it ran instrumented: before its tests it checks that alertd's objects
# call the sanitizer's runtime (__tsan_/__asan_ symbols), and fails otherwise. Every report
# lands in one directory, and any report fails the run; so does a pass that overruns
# SANITIZER_MINUTES (default 20: CI's budget), with its summary printed all the same. The
# next plain build rebuilds alertd's modules without the instrumentation.
#
#   scripts/test-sanitizers.sh [thread|address]...     (default: both)
#
# Extra arguments for swift test go in SWIFT_TEST_ARGS (e.g. "--filter AlertdWireTests").
#
# At most SANITIZER_PARALLELISM (6) tests run at once: instrumented code runs several
# times slower, and with every test at once on two cores the tests' own clocks (a
# buttonless alert's 2-s dismissal, a read timeout, a retry's max_age) ran out before the
# test got its turn.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=("$@")
[ ${#sanitizers[@]} -gt 0 ] || sanitizers=(thread address)
status=0
summary=()
# Whether alertd's objects of this build call the sanitizer's runtime: the instrumentation
# went in (a build that silently dropped the flag would pass having checked nothing).
instrumented() {
    local prefix bin
    case $1 in thread) prefix=__tsan_func_entry ;; address) prefix=__asan_report ;; *) return 0 ;; esac
    shift
    bin=$(swift build "$@" --show-bin-path)
    # grep -c reads all of nm's output: `grep -q` stops at the first match, nm dies of SIGPIPE,
    # and under pipefail that read as "not instrumented" (it failed CI's pass that way).
    [ "$(nm -u "$bin"/AlertdCore.build/*.o 2>/dev/null | grep -c "$prefix")" -gt 0 ]
}
for sanitizer in "${sanitizers[@]}"; do
    case $sanitizer in thread) scratch=.build-tsan ;; address) scratch=.build-asan ;; *) scratch=".build-$sanitizer" ;; esac
    reports=$(mktemp -d "/tmp/alertd-$sanitizer-XXXXXX")
    export TSAN_OPTIONS="log_path=$reports/report:halt_on_error=0:second_deadlock_stack=1"
    # detect_stack_use_after_return=0: stack-use-after-return checks off (the runtime turns them on by default), as
    # this pass always ran; whether the suite can afford them on is being measured (issue 48).
    export ASAN_OPTIONS="log_path=$reports/report:detect_leaks=1:detect_stack_use_after_return=0"
    export UBSAN_OPTIONS="log_path=$reports/report"
    # Leaks that are not alertd's, each with its reason: scripts/lsan.supp.
    export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
    start=$SECONDS
    echo "== swift test under $sanitizer (reports: $reports)"
    if [ "${SANITIZE_DEPENDENCIES:-0}" = 1 ]; then
        build=(--sanitize="$sanitizer" --scratch-path "$scratch")
    else
        build=()
        export ALERTD_SANITIZE=$sanitizer
    fi
    rc=0
    # shellcheck disable=SC2086
    if ! swift build --build-tests ${build[@]+"${build[@]}"} 2>&1 | tail -5; then
        rc=1
    elif ! instrumented "$sanitizer" "${build[@]+"${build[@]}"}"; then
        echo "== $sanitizer: alertd's objects do not call the sanitizer's runtime: this pass would check nothing" >&2
        rc=1
    else
        # shellcheck disable=SC2086
        timeout --kill-after=30 "${SANITIZER_MINUTES:-20}m" swift test --skip-build ${build[@]+"${build[@]}"} \
            --skip AlertdEndToEndTests \
            --experimental-maximum-parallelization-width "${SANITIZER_PARALLELISM:-6}" ${SWIFT_TEST_ARGS:-} 2>&1 |
            tee "$reports.log" || rc=${PIPESTATUS[0]}
    fi
    unset ALERTD_SANITIZE
    echo "== $sanitizer: swift test exited $rc after $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
    verdict="swift test exited $rc"
    [ "$rc" -lt 124 ] || verdict+=" (stopped after ${SANITIZER_MINUTES:-20} minutes: a hang, or too slow for CI)"
    if compgen -G "$reports/report*" >/dev/null; then
        processes=$(find "$reports" -name 'report*' | wc -l)
        echo "== $sanitizer: $processes process(es) reported:"
        for file in "$reports"/report*; do
            echo "---- $file"
            head -80 "$file"
        done
        # A report without a SUMMARY: line (a crash of the runtime itself, a report cut short)
        # is still a report: named by its first line, never dropped.
        summaries=$(for file in "$reports"/report*; do
            grep -m1 '^SUMMARY:' "$file" || echo "no SUMMARY: $(grep -m1 -v '^=*$' "$file" | cut -c1-120)"
        done | sort | uniq -c | tr -s ' ' | paste -sd ';' -)
        verdict+=", $processes process(es) reported: $summaries"
        status=1
    fi
    [ $rc -eq 0 ] || status=1
    failed=$(sed -n 's/^✘ Test \(.*\) failed after .*/\1/p' "$reports.log" | sort -u | paste -sd ';' -)
    [ -z "$failed" ] || verdict+=", failed tests: $failed"
    summary+=("$sanitizer: $verdict")
    # What each failed test recorded, in the summary CI keeps (its name alone said too little).
    while IFS= read -r issue; do
        summary+=("   $(cut -c1-400 <<<"$issue")")
    done < <(grep -a '^✘ Test .* recorded an issue' "$reports.log" | head -10)
done
# The end of the output is what CI keeps: say there what failed, and why.
echo "== sanitizers:"
printf '   %s\n' "${summary[@]}"
[ $status -eq 0 ] || echo "== sanitizers: FAILED (each report in full above, under its sanitizer's pass)"
exit $status
