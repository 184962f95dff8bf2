#!/usr/bin/env bash
# Builds and runs the libFuzzer harnesses of fuzz/Sources (see fuzz/README.md).
#
#   fuzz/run.sh build                 build every harness (Package.swift, ALERTD_FUZZ: alertd's
#                                     modules with libFuzzer coverage and AddressSanitizer)
#   fuzz/run.sh regress               run each harness once over its corpus and fuzz/regressions/NAME/
#   fuzz/run.sh run NAME [LIBFUZZER-OPTIONS...]   fuzz one harness, e.g. -max_total_time=60 or -runs=10000000
#   fuzz/run.sh all [LIBFUZZER-OPTIONS...]        build, regress, then fuzz every harness in turn
#   fuzz/run.sh ci                    build, regress, then fuzz every harness for FUZZ_CI_SECONDS
#                                     (60), FUZZ_CI_JOBS at once (all of them; CI runs this)
#
# New inputs go to fuzz/.work/NAME (not committed); the committed corpus in
# fuzz/corpus/NAME is read, never written. A crash, leak or timeout leaves its
# input in fuzz/.work/artifacts/ and fails the run: add it to fuzz/regressions/NAME/
# with the fix. The last line of each run, "#N DONE cov: ... corp: ..." (with -fork=N,
# the last "#N: cov: ..." line), and the final stats go to fuzz/.work/logs/NAME.log.
set -euo pipefail
cd "$(dirname "$0")"

HARNESSES=(FuzzJSON FuzzAlertValidation FuzzAlertmanager FuzzRouter FuzzConfig FuzzWebhookVerifier)
export ALERTD_FUZZ=1
# FUZZ_BUILD=release: the same harnesses on an optimised build of everything, in a
# scratch path of its own (~10 min from clean instead of ~1.5): more executions per
# second where the time goes into dependencies (Yams, swift-crypto; RESULTS.md).
case "${FUZZ_BUILD:-debug}" in
debug) BUILD=() ;;
release) BUILD=(-c release --scratch-path .build-fuzzrel) ;;
*)
    echo "fuzz: FUZZ_BUILD is debug or release" >&2
    exit 64
    ;;
esac
BIN=$(cd .. && swift build "${BUILD[@]}" --show-bin-path)

declare -A DICT=([FuzzJSON]=json [FuzzAlertValidation]=json [FuzzAlertmanager]=alertmanager [FuzzRouter]=router [FuzzConfig]=config [FuzzWebhookVerifier]=webhook)
# Inputs as large as a seed needs: a config file (the example is ~9.5 KiB), a JSON body.
declare -A MAXLEN=([FuzzJSON]=4096 [FuzzAlertValidation]=8192 [FuzzAlertmanager]=8192 [FuzzRouter]=1024 [FuzzConfig]=12288 [FuzzWebhookVerifier]=2048)

# LeakSanitizer on; an input that takes over 10 s, or a process over 2 GiB, fails the run.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
COMMON=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=.work/artifacts/)

# The package's own debug build with the harnesses added: alertd's modules are
# rebuilt instrumented, the dependencies are reused (Package.swift says why).
build() {
    for name in "${HARNESSES[@]}"; do (cd .. && swift build "${BUILD[@]}" --product "$name"); done
}

regress() {
    for name in "${HARNESSES[@]}"; do
        local inputs=(corpus/"$name"/*)
        if compgen -G "regressions/$name/*" >/dev/null; then inputs+=(regressions/"$name"/*); fi
        echo "== $name: ${#inputs[@]} seeds and regressions"
        "$BIN/$name" "${COMMON[@]}" "${inputs[@]}" >".work/logs/$name.regress.log" 2>&1 || {
            tail -40 ".work/logs/$name.regress.log"
            echo "fuzz: $name failed on a seed or regression input" >&2
            return 1
        }
    done
}

run() {
    local name=$1
    shift
    mkdir -p ".work/$name"
    echo "== $name $*"
    local start=$SECONDS
    if "$BIN/$name" "${COMMON[@]}" -dict="dict/${DICT[$name]}.dict" -max_len="${MAXLEN[$name]}" "$@" \
        ".work/$name" "corpus/$name" >".work/logs/$name.log" 2>&1; then
        local line
        # The last "#N" line: DONE (libFuzzer separates the count from it with a tab),
        # or with -fork=N, which prints no DONE, the last stats line. Without a match the
        # failing grep would end the script here (set -e, pipefail) with status 1.
        line=$(grep -E '^#[0-9]+([[:space:]]+DONE|:)' ".work/logs/$name.log" | tail -1) || true
        echo "$name: ${line:-no stats line} ($((SECONDS - start)) s)"
    else
        tail -60 ".work/logs/$name.log"
        echo "fuzz: $name found a crash, leak or timeout (log: fuzz/.work/logs/$name.log, input: fuzz/.work/artifacts/)" >&2
        return 1
    fi
}

# Every harness for FUZZ_CI_SECONDS, FUZZ_CI_JOBS at once (by default all of them, so
# CI pays the seconds once: on two cores each gets a third of one); any finding fails
# it, after every harness has run.
ci() {
    local seconds=${FUZZ_CI_SECONDS:-60} jobs=${FUZZ_CI_JOBS:-${#HARNESSES[@]}}
    local pids=() names=() failed=()
    for name in "${HARNESSES[@]}"; do
        run "$name" -max_total_time="$seconds" &
        pids+=($!)
        names+=("$name")
        if [ ${#pids[@]} -ge "$jobs" ]; then
            wait "${pids[0]}" || failed+=("${names[0]}")
            pids=("${pids[@]:1}")
            names=("${names[@]:1}")
        fi
    done
    for i in "${!pids[@]}"; do wait "${pids[$i]}" || failed+=("${names[$i]}"); done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "fuzz: findings in ${failed[*]}" >&2
        return 1
    fi
}

mkdir -p .work/logs .work/artifacts
command=${1:-all}
shift || true
case "$command" in
build) build ;;
regress) regress ;;
run) run "$@" ;;
all)
    build
    regress
    for name in "${HARNESSES[@]}"; do run "$name" "$@"; done
    ;;
ci)
    build
    regress
    ci
    ;;
*)
    echo "usage: fuzz/run.sh build | regress | run NAME [options] | all [options] | ci" >&2
    exit 64
    ;;
esac
