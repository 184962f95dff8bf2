# The few commands a newcomer needs.
.PHONY: deps run test bench format

deps:
	@if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libmicrohttpd-dev libsqlite3-dev pkg-config

run: deps
	swift run -c release alertd

test:
	swift test

bench:
	bench/run.sh

format:
	swift format --in-place --recursive Sources Tests Package.swift
