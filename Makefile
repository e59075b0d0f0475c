# Relevo — the two commands: `make run` and `make test`.
SHELL := /bin/bash
APP ?= demo
PORT ?= 8080
ROUTING ?= per-method
CARGO ?= cargo

.PHONY: run test unit lint fmt conformance clients release-size clean

## run: the server on http://127.0.0.1:$(PORT)/mcp (APP=demo|conformance, ROUTING=per-method|single)
run:
	RELEVO_APP=$(APP) $(CARGO) run --quiet -p relevo-gateway -- --port $(PORT) --routing $(ROUTING)

## test: lint, unit + in-process + property tests, the conformance suite, the Python SDK client
test: lint unit conformance clients

unit:
	$(CARGO) test --workspace --quiet

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

fmt:
	$(CARGO) fmt --all

## conformance: the official suite, 2026-07-28 requirement set, per-method and single routing
conformance:
	infra/scripts/conformance.sh

## clients: the official Python SDK client (mcp 2.3) against the demo app
clients:
	infra/scripts/python-client.sh

## release-size: release build of one function binary, and its size
release-size:
	$(CARGO) build --release --quiet -p tools-call
	@stat -c '%s bytes  target/release/tools-call' target/release/tools-call

clean:
	$(CARGO) clean
	rm -rf .tools .venv
