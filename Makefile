# The few commands a newcomer needs.
.PHONY: deps test-deps venv run test test-browser test-openapi bench format

deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libmicrohttpd-dev libsqlite3-dev pkg-config

# What the tests use besides the build: python3 (a fake daemon, a TLS client, the
# README's Python example), python3-venv (the OpenAPI checks' .venv), systemd
# (systemd-analyze), openssl (certificates), prometheus (promtool), chromium,
# chromium-driver and python3-selenium (the dashboard in a browser), tmux.
test-deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
		libmicrohttpd-dev libsqlite3-dev pkg-config python3 python3-venv systemd openssl prometheus \
		chromium chromium-driver python3-selenium tmux

# The OpenAPI checks' packages from PyPI (schemathesis, openapi-spec-validator, PyYAML and
# what they pull in, every version pinned in openapi/requirements.txt), in the git-ignored
# .venv/; installed again only when the requirements change.
VENV := .venv
$(VENV)/.installed: openapi/requirements.txt
	rm -rf $(VENV)
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r openapi/requirements.txt
	touch $@

venv: $(VENV)/.installed

run: deps
	swift run -c release alertd

# swift test builds alertd; the browser tests then run it (Debian's python3, for python3-selenium).
# Each tier is bounded, so a hang fails the run with a message instead of stalling it:
# the tests started and not finished above the message are the ones to look at.
test: test-deps venv
	@timeout --kill-after=30 25m swift test || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: swift test stopped after 25 minutes (a hang)" >&2; exit $$rc; }
	@ALERTD_BIN="$$(swift build --show-bin-path)/alertd" timeout --kill-after=30 10m \
		/usr/bin/python3 -m unittest discover -s Tests/Browser -v || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the browser tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }
	@$(MAKE) --no-print-directory test-openapi

# openapi/alertd.yaml: valid OpenAPI 3.1, served as is, and schemathesis against a live alertd
# (every phase and check, bounded: see Tests/OpenAPI/test_openapi.py).
test-openapi: venv
	@swift build --product alertd >/dev/null
	@ALERTD_BIN="$$(swift build --show-bin-path)/alertd" timeout --kill-after=30 10m \
		$(VENV)/bin/python -m unittest discover -s Tests/OpenAPI -v || { rc=$$?; \
		[ $$rc -lt 124 ] || echo "make test: the OpenAPI tests stopped after 10 minutes (a hang)" >&2; exit $$rc; }

# The dashboard in headless Chromium only; ALERTD_SCREENSHOTS=1 also rewrites docs/images/.
test-browser:
	swift build
	ALERTD_BIN="$$(swift build --show-bin-path)/alertd" /usr/bin/python3 -m unittest discover -s Tests/Browser -v

bench:
	bench/run.sh

format:
	swift format --in-place --recursive Sources Tests Package.swift examples
