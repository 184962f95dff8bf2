# The few commands a newcomer needs.
.PHONY: deps test-deps run test bench format

deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libmicrohttpd-dev libsqlite3-dev pkg-config

# What the tests use besides the build: python3 (a fake daemon, a TLS client),
# systemd (systemd-analyze), openssl (certificates), prometheus (promtool).
test-deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends \
		libmicrohttpd-dev libsqlite3-dev pkg-config python3 systemd openssl prometheus

run: deps
	swift run -c release alertd

test: test-deps
	swift test

bench:
	bench/run.sh

format:
	swift format --in-place --recursive Sources Tests Package.swift
