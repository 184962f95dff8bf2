# The few commands a newcomer needs.
.PHONY: deps test-deps venv run test test-browser test-openapi test-mcp test-push test-receipts test-debian deb deb-deps release-static test-sanitizers fuzz fuzz-ci wirefuzz bench format

# The version, written in one place: Sources/AlertdVersion/Version.swift.
VERSION := $(shell sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/AlertdVersion/Version.swift)
# The installable build: release, the Swift runtime linked statically, in a
# scratch path of its own so it never invalidates the debug build or `make run`'s.
STATIC := .build-deb
# The optimised builds allocate with mimalloc (Debian's libmimalloc2.0), named before libc so
# that its malloc and free are every library's. glibc's malloc misses its per-thread cache
# whenever a block is freed on another thread than the one that took it, which is how a
# request's memory goes (connection thread, store writer, tasks): POST on SQLite +31 % to +34 %
# with mimalloc, jemalloc or tcmalloc alike; a parked long-poll 10.4 KiB against 6.8, a pending
# alert the same 1.15 KiB (bench/RESULTS.md, issue 46). Debug and sanitizer builds keep glibc's.
ALLOCATOR_FLAGS := -Xlinker -l:libmimalloc.so.2
DEB := dist/alertd_$(VERSION)_amd64.deb
# The package test-debian tests: make deb's unless told otherwise (PACKAGE=file).
PACKAGE ?= $(DEB)

deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libmicrohttpd-dev libsqlite3-dev pkg-config libmimalloc2.0

# What the tests use besides the build: python3 (a fake daemon, a TLS client, the
# README's Python example), python3-venv (the OpenAPI checks' .venv), systemd (systemd-analyze), openssl (certificates), prometheus (promtool),
# chromium, chromium-driver and python3-selenium (the dashboard in a browser), tmux;
# for the package: dpkg-dev and binutils (make deb), lintian, and
# systemd-container, debootstrap and man-db (the package under a real systemd);
# postgresql (a throwaway cluster per test run), nginx-light (a load balancer
# in front of two instances) and prometheus-alertmanager (the real Alertmanager
# the integration's tests start, and amtool).
test-deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
		libmicrohttpd-dev libsqlite3-dev pkg-config libmimalloc2.0 python3 python3-venv systemd openssl prometheus \
		chromium chromium-driver python3-selenium python3-websocket python3-cryptography tmux \
		dpkg-dev binutils libcurl4 libcurl4-openssl-dev lintian systemd-container debootstrap man-db postgresql nginx-light \
		prometheus-alertmanager

# The Python tiers' packages from PyPI, every version pinned: the OpenAPI checks'
# (schemathesis, openapi-spec-validator, PyYAML: openapi/requirements.txt) and the MCP
# tier's (the official MCP SDK: Tests/MCP/requirements.txt), with what they pull in, in
# the git-ignored .venv/; installed together (so pip checks they agree), and again only
# when a requirements file changes.
VENV := .venv
VENV_REQUIREMENTS := openapi/requirements.txt Tests/MCP/requirements.txt Tests/Push/requirements.txt Tests/Receipts/requirements.txt
$(VENV)/.installed: $(VENV_REQUIREMENTS)
	rm -rf $(VENV)
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check $(addprefix -r ,$(VENV_REQUIREMENTS))
	touch $@

venv: $(VENV)/.installed

run: deps
	swift run -c release $(ALLOCATOR_FLAGS) alertd

# What ships is what is tested (issue 48): make test first builds the package as `make deb`
# does (alertd and alertctl optimised, the Swift runtime linked in), and every tier that starts
# alertd or alertctl as a process runs those binaries (SHIPPED: ALERTD_TEST_SHIPPED=1 makes the
# tiers refuse a debug build or a binary they were not given). The debug build keeps the
# in-process tiers. Then: swift test; the contract tier again on PostgreSQL (a throwaway cluster
# the tests start; a filter that matches no test fails, see scripts/swift-test-nonempty.sh), and
# through two alertd processes on one database behind nginx round-robin (ALERTD_TEST_MODE=balanced,
# SPEC §9); the dashboard in Chromium (Debian's python3, for python3-selenium); the OpenAPI
# document against a live alertd; `alertctl mcp` through the official Python MCP SDK; Web Push
# against a stand-in push service (Tests/Push); signed receipts against Python's cryptography and
# rfc8785 (Tests/Receipts); the package
# itself (Tests/Debian; under a real systemd when root). A Python tier fails unless it ran every
# test it holds (scripts/python-tier.py). Each tier is bounded, so a hang fails the run with a
# message instead of stalling it; a Swift tier that hangs names the tests that started and did not
# finish just above that message (scripts/swift-test-unfinished.py).
test: test-deps venv
	@$(MAKE) --no-print-directory deb
	@$(SHIPPED) scripts/swift-test-nonempty.sh --limit 25m || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: swift test stopped after 25 minutes (a hang)" >&2; exit $$rc; }
	@$(SHIPPED) ALERTD_TEST_STORE=postgres scripts/swift-test-nonempty.sh --limit 10m --skip-build --filter AlertdAPIContractTests || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the contract tier on PostgreSQL stopped after 10 minutes (a hang)" >&2; exit $$rc; }
	@$(SHIPPED) ALERTD_TEST_MODE=balanced ALERTD_TEST_STORE=postgres scripts/swift-test-nonempty.sh --limit 10m --skip-build --filter AlertdAPIContractTests || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the contract tier through two instances behind nginx stopped after 10 minutes (a hang)" >&2; exit $$rc; }
	@$(SHIPPED) timeout --kill-after=30 10m /usr/bin/python3 scripts/python-tier.py Tests/Browser || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the browser tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }
	@$(SHIPPED) $(MAKE) --no-print-directory test-openapi
	@$(SHIPPED) $(MAKE) --no-print-directory test-mcp
	@$(SHIPPED) $(MAKE) --no-print-directory test-push
	@$(SHIPPED) $(MAKE) --no-print-directory test-receipts
	@$(MAKE) --no-print-directory test-debian PACKAGE=$(DEB)

# The shipped binaries, as every process tier of make test runs them (see test).
SHIPPED_BIN := $(CURDIR)/$(STATIC)/release
SHIPPED := ALERTD_TEST_SHIPPED=1 ALERTD_BINARY=$(SHIPPED_BIN)/alertd ALERTCTL_BINARY=$(SHIPPED_BIN)/alertctl \
	ALERTD_BIN=$(SHIPPED_BIN)/alertd ALERTCTL_BIN=$(SHIPPED_BIN)/alertctl

# The package's tests only, on the .deb as it is (make deb first, or PACKAGE=file): its version,
# files, lintian, libraries; then, as root with systemd-nspawn, under a real systemd.
test-debian:
	@ALERTD_DEB=$(PACKAGE) timeout --kill-after=30 15m /usr/bin/python3 scripts/python-tier.py Tests/Debian \
		|| { rc=$$?; [ $$rc -lt 124 ] || echo "make test: the Debian tests stopped after 15 minutes (a hang)" >&2; exit $$rc; }

# What make deb needs besides the build's libraries: dpkg-shlibdeps, strip, and libcurl's
# development files (the static link of FoundationNetworking asks for -lcurl, the unversioned
# libcurl.so that only libcurl4-openssl-dev installs; libcurl4 alone fails: cannot find -lcurl).
deb-deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
		libmicrohttpd-dev libsqlite3-dev pkg-config libmimalloc2.0 dpkg-dev binutils libcurl4 libcurl4-openssl-dev

# dist/alertd_<version>_amd64.deb: install it with `apt install ./dist/alertd_…deb`.
deb: deb-deps
	@$(MAKE) --no-print-directory $(DEB)

# alertd and alertctl as installed: the Swift runtime linked in, no RUNPATH, full
# RELRO with immediate binding (Debian's hardening flags). generate-manual
# (swift-argument-parser's, already in the package graph) writes the man pages.
# alertctl links FoundationNetworking (the MCP SDK's HTTP transport imports it, though
# alertctl mcp speaks stdio only): linked statically, its libcurl shim and libcurl itself
# must be named, and the package then depends on libcurl4.
CURL_FLAGS := -Xlinker -l_CFURLSessionInterface -Xlinker -l:libcurl.so.4
STATIC_FLAGS := -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now $(CURL_FLAGS) $(ALLOCATOR_FLAGS) \
	--scratch-path $(STATIC)
release-static:
	swift build $(STATIC_FLAGS) --product alertd
	swift build $(STATIC_FLAGS) --product alertctl
	swift build --package-path $(STATIC)/checkouts/swift-argument-parser --scratch-path $(STATIC)/generate-manual \
		--product generate-manual

$(DEB): release-static
	packaging/deb/build.sh $(VERSION) $(STATIC)/release $(STATIC)/generate-manual/debug/generate-manual dist

# openapi/alertd.yaml: valid OpenAPI 3.1, served as is, and schemathesis against a live alertd
# (every phase and check, bounded: see Tests/OpenAPI/test_openapi.py).
# ALERTD_BIN names the alertd to test (make test: the shipped one); else the debug build.
test-openapi: venv
	@[ -n "$$ALERTD_BIN" ] || swift build --product alertd >/dev/null
	@ALERTD_BIN="$${ALERTD_BIN:-$$(swift build --show-bin-path)/alertd}" timeout --kill-after=30 10m \
		$(VENV)/bin/python scripts/python-tier.py Tests/OpenAPI || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the OpenAPI tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }

# `alertctl mcp` driven by the official Python MCP SDK (Tests/MCP), against a live alertd.
test-mcp: venv
	@[ -n "$$ALERTD_BIN" ] || swift build --product alertd >/dev/null
	@[ -n "$$ALERTCTL_BIN" ] || swift build --product alertctl >/dev/null
	@ALERTD_BIN="$${ALERTD_BIN:-$$(swift build --show-bin-path)/alertd}" ALERTCTL_BIN="$${ALERTCTL_BIN:-$$(swift build --show-bin-path)/alertctl}" \
		timeout --kill-after=30 5m $(VENV)/bin/python scripts/python-tier.py Tests/MCP --needs-alertctl || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the MCP tests stopped after 5 minutes (a hang)" >&2; exit $$rc; }

# Web Push against a stand-in push service that checks what a real one checks (VAPID, RFC 8030's
# headers) and decrypts with Mozilla's http_ece (Tests/Push), on SQLite and two instances on PostgreSQL.
test-push: venv
	@[ -n "$$ALERTD_BIN" ] || swift build --product alertd >/dev/null
	@ALERTD_BIN="$${ALERTD_BIN:-$$(swift build --show-bin-path)/alertd}" timeout --kill-after=30 10m \
		$(VENV)/bin/python scripts/python-tier.py Tests/Push || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the push tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }

# Signed receipts (SPEC §14) checked by another implementation: Python's cryptography (Ed25519)
# and the rfc8785 package (JCS) verify receipts alertd's receipt code signed (the receipts-sample
# executable, a debug build: it is not shipped), the keys alertd lists at /v1/keys and
# `alertd receipts keygen` writes, and hold `alertctl audit verify` to the same answers (Tests/Receipts).
test-receipts: venv
	@[ -n "$$ALERTD_BIN" ] || swift build --product alertd >/dev/null
	@[ -n "$$ALERTCTL_BIN" ] || swift build --product alertctl >/dev/null
	@swift build --product receipts-sample >/dev/null
	@ALERTD_BIN="$${ALERTD_BIN:-$$(swift build --show-bin-path)/alertd}" ALERTCTL_BIN="$${ALERTCTL_BIN:-$$(swift build --show-bin-path)/alertctl}" \
		RECEIPTS_SAMPLE_BIN="$$(swift build --show-bin-path)/receipts-sample" timeout --kill-after=30 5m \
		$(VENV)/bin/python scripts/python-tier.py Tests/Receipts --needs-alertctl || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the receipts tests stopped after 5 minutes (a hang)" >&2; exit $$rc; }

# The dashboard in headless Chromium only; ALERTD_SCREENSHOTS=1 also rewrites docs/images/.
test-browser:
	[ -n "$$ALERTD_BIN" ] || swift build --product alertd
	ALERTD_BIN="$${ALERTD_BIN:-$$(swift build --show-bin-path)/alertd}" /usr/bin/python3 scripts/python-tier.py Tests/Browser

# The in-process Swift tests under ThreadSanitizer, then AddressSanitizer (+ LeakSanitizer);
# any report fails it. What they start as a process is the shipped build (make test built it).
test-sanitizers: test-deps release-static
	$(SHIPPED) scripts/test-sanitizers.sh

# The libFuzzer harnesses of fuzz/: build (alertd's modules instrumented, on top of the
# debug build; the next plain `swift build` rebuilds them plain, ~2 min), replay the
# corpus and past findings, then fuzz each for FUZZ_SECONDS (default 600), or FUZZ_RUNS executions.
FUZZ_SECONDS ?= 600
fuzz: deps
	fuzz/run.sh all $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))

# What CI runs after `make test`: the wire fuzzer for 60 s against the shipped alertd (make
# deb's, which make test built), then every harness for 60 s (all at once), starting from the
# committed corpus.
fuzz-ci: deps release-static
	/usr/bin/python3 fuzz/wire/wirefuzz.py --binary "$(SHIPPED_BIN)/alertd" --seconds 60
	fuzz/run.sh ci

# Random and mutated HTTP/1.1 against the real binary (WIRE_BINARY, default the debug build).
WIRE_SECONDS ?= 600
wirefuzz:
	swift build --product alertd
	/usr/bin/python3 fuzz/wire/wirefuzz.py --binary "$${WIRE_BINARY:-$$(swift build --show-bin-path)/alertd}" --seconds $(WIRE_SECONDS)

bench:
	bench/run.sh

format:
	swift format --in-place --recursive Sources Tests Package.swift examples fuzz/Sources
