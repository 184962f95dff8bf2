# The few commands a newcomer needs.
.PHONY: deps test-deps run test test-browser test-sanitizers fuzz fuzz-ci wirefuzz bench format

deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libmicrohttpd-dev libsqlite3-dev pkg-config

# What the tests use besides the build: python3 (a fake daemon, a TLS client),
# systemd (systemd-analyze), openssl (certificates), prometheus (promtool),
# chromium, chromium-driver and python3-selenium (the dashboard in a browser), tmux.
test-deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
		libmicrohttpd-dev libsqlite3-dev pkg-config python3 systemd openssl prometheus \
		chromium chromium-driver python3-selenium tmux

run: deps
	swift run -c release alertd

# swift test builds alertd; the browser tests then run it (Debian's python3, for python3-selenium).
# Each tier is bounded, so a hang fails the run with a message instead of stalling it:
# the tests started and not finished above the message are the ones to look at.
test: test-deps
	@timeout --kill-after=30 25m swift test || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: swift test stopped after 25 minutes (a hang)" >&2; exit $$rc; }
	@ALERTD_BIN="$$(swift build --show-bin-path)/alertd" timeout --kill-after=30 10m \
		/usr/bin/python3 -m unittest discover -s Tests/Browser -v || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the browser tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }

# The dashboard in headless Chromium only; ALERTD_SCREENSHOTS=1 also rewrites docs/images/.
test-browser:
	swift build
	ALERTD_BIN="$$(swift build --show-bin-path)/alertd" /usr/bin/python3 -m unittest discover -s Tests/Browser -v

# The Swift tests under ThreadSanitizer, then AddressSanitizer (+ LeakSanitizer), the
# alertd they start built the same way; any report from any process fails it.
test-sanitizers: test-deps
	scripts/test-sanitizers.sh

# The libFuzzer harnesses of fuzz/ (their own package): build, replay seeds and past
# findings, then fuzz each for FUZZ_SECONDS (default 600), or FUZZ_RUNS executions.
FUZZ_SECONDS ?= 600
fuzz: deps
	fuzz/run.sh all $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))

# What CI runs: every harness for 60 s, and the wire fuzzer for 60 s against the debug alertd.
fuzz-ci: deps
	fuzz/run.sh all -max_total_time=60
	swift build --product alertd
	/usr/bin/python3 fuzz/wire/wirefuzz.py --binary "$$(swift build --show-bin-path)/alertd" --seconds 60

# Random and mutated HTTP/1.1 against the real binary (WIRE_BINARY, default the debug build).
WIRE_SECONDS ?= 600
wirefuzz:
	swift build --product alertd
	/usr/bin/python3 fuzz/wire/wirefuzz.py --binary "$${WIRE_BINARY:-$$(swift build --show-bin-path)/alertd}" --seconds $(WIRE_SECONDS)

bench:
	bench/run.sh

format:
	swift format --in-place --recursive Sources Tests Package.swift examples
