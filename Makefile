# Relevo — the two commands: `make run` and `make test` (and `make check`, the inner loop).
SHELL := /bin/bash
APP ?= shop
PORT ?= 8080
ROUTING ?= per-method
AUTH ?= dev
TENANT ?= dev
SUB ?= developer
SCOPES ?= notes:read notes:write
CARGO ?= cargo

.PHONY: new-app starter run run-lambda build sam-build deploy logs token test tools check unit lint fmt package validate conformance clients browser bench bench-smoke bench-durable release-size size size-test clean

## run: the server on http://127.0.0.1:$(PORT)/mcp (APP=shop|conformance, ROUTING=per-method|single, AUTH=dev|required|off)
GATEWAY_PACKAGE = $(if $(filter conformance,$(APP)),-p relevo-conformance --bin relevo-conformance-gateway,-p relevo-gateway --bin relevo-gateway)
run:
	@echo "Approval page (inventory changes a person must decide):"
	@echo "  agent token:    make token SUB=agent SCOPES='inventory:read inventory:write'"
	@echo "  approver token: make token SUB=manager SCOPES='inventory:read inventory:approve'"
	@echo "  open http://127.0.0.1:$(PORT)/approvals/login, paste the approver token, then open the"
	@echo "  approvalUrl that inventory_propose returns (http://127.0.0.1:$(PORT)/approvals/<operationId>)"
	RELEVO_AUTH=$(AUTH) $(CARGO) run --quiet $(GATEWAY_PACKAGE) -- --port $(PORT) --routing $(ROUTING)

## run-lambda: the stack of template.yaml on one machine (FRONT_DOOR=a: custom domain, routing rules, REST APIs;
## b: the HTTP API; c: the Function URL, streamed): the real function binaries under a local Lambda Runtime API, DynamoDB/SQS/Secrets Manager on moto
FRONT_DOOR ?= a
run-lambda:
	CARGO="$(CARGO)" infra/scripts/bins.sh
	infra/scripts/with-moto.sh bash -c 'source infra/scripts/lib.sh && AWS_ENDPOINT_URL=$$RELEVO_TEST_AWS_ENDPOINT RELEVO_DEV_ISSUER_FILE=.relevo/dev-issuer.json target/debug/relevo-lambda-local --template "$$(translated)" --front-door $(FRONT_DOOR) --port $(PORT)'

## token: a bearer token from the dev issuer of a running `make run` (TENANT=, SUB=, SCOPES=)
token:
	@$(CARGO) run --quiet -p relevo-gateway --bin relevo-token -- --tenant "$(TENANT)" --sub "$(SUB)" --scopes "$(SCOPES)"

## test: lint, the publishable crates' metadata and packages, template checks, every cargo test (DynamoDB/SQS on the moto emulator), the conformance suite, the Python and TypeScript SDK clients, the approval page and the approval app in Chromium, the benchmark harness in its short mode, every function under 8,000,000 bytes as `sam build` builds it for the template's architecture
## Its stages run in this order, each through infra/scripts/stages.sh, which prints each one's duration as
## it ends ("make test: stage unit took 612 s") and a table of them all and the total; the first to fail stops it.
## `lint+tools` runs `make tools` beside lint, so that a fresh machine installs while lint compiles.
## Every rustc runs through the per-user compile cache (infra/scripts/compile-cache.sh: sccache; RELEVO_COMPILE_CACHE=off
## compiles without it), so a second clone compiles only this workspace's own crates.
TEST_STAGES = lint+tools package validate unit conformance clients browser iam-report starter bench-smoke size-test
test:
	@infra/scripts/compile-cache.sh infra/scripts/stages.sh "make test" $(MAKE) $(TEST_STAGES)

## tools: every pinned tool make test uses (infra/scripts/tools.sh: the SAM CLI, cfn-lint, cargo-lambda, moto, the
## conformance suite, the Python and TypeScript SDK clients, the Inspector, Chromium and playwright-core, wrk), installed
## once per user into the tools cache (Debian's packages once per machine) and linked into .tools/ and .venv/
tools:
	infra/scripts/tools.sh

## check: the inner loop: cargo fmt --check, clippy -D warnings over the workspace, and the cargo tests of
## the workspace crates changed relative to origin/main (or main; CHECK_BASE=ref), with the moto emulator
check:
	CARGO="$(CARGO)" infra/scripts/check.sh

## new-app: `cargo relevo new DIR` with this checkout's cargo-relevo (README "Your first tool"); the
## project depends on relevo by version, not on this checkout
new-app:
	@test -n "$(DIR)" || { echo "usage: make new-app DIR=../my-tools [NAME=my-tools]"; exit 2; }
	$(CARGO) run --quiet -p cargo-relevo -- relevo new "$(DIR)" $(if $(NAME),--name $(NAME))

## starter: the newcomer's path in a temporary folder outside the checkout: `cargo install --path infra/cli
## --locked`, `cargo relevo new`, the project's `make test` as generated, `cargo relevo dev` + `cargo relevo
## token` + a curl'd tools/call
starter:
	infra/scripts/starter.sh

## iam-report: what every function called in the local Lambda mode runs of `make test`, against its policy in
## template.yaml: fails on any refused call, lists the granted actions no run used
iam-report:
	CARGO="$(CARGO)" infra/scripts/bins.sh
	target/debug/relevo-iam-report target/iam/*.log

## unit: every cargo test (`cargo test --workspace`, its test binaries run RELEVO_TEST_JOBS at a time, 3 unless
## set: infra/scripts/run_tests.py), with the DynamoDB/SQS emulator (moto) running for the AWS adapters
unit:
	CARGO="$(CARGO)" infra/scripts/bins.sh --managed-instances
	CARGO="$(CARGO)" infra/scripts/with-moto.sh python3 infra/scripts/run_tests.py
	.tools/moto/bin/python infra/scripts/test_moto_serial.py
	python3 infra/scripts/test_stages.py

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings
	infra/scripts/docs-check.sh

fmt:
	$(CARGO) fmt --all

## package: the crates.io metadata of every crate not marked publish = false (relevo-package-check), then
## `cargo package` of exactly those crates, each checked (`cargo check`) from its own tarball with the others'
## tarballs as its dependencies (nothing is published)
package:
	infra/scripts/package.sh

# The function binaries template.yaml deploys (the template is the one list; `relevo-xtask functions`
# reads it, so this is expanded only where a recipe uses it).
FUNCTIONS = $(shell infra/scripts/functions.sh)
ARCH ?= arm64

## build: every function as a Lambda zip (release, cargo-lambda from PyPI at .tools/sam, a link into the tools cache), with its size
build:
	infra/scripts/sam-tools.sh
	PATH="$(CURDIR)/.tools/sam/bin:$$PATH" cargo lambda build --release --$(ARCH) --output-format zip $(addprefix --bin ,$(FUNCTIONS))
	@for f in $(FUNCTIONS); do stat -c '%8s bytes  target/lambda/%n' target/lambda/$$f/bootstrap.zip 2>/dev/null | sed "s|target/lambda/target/lambda/|target/lambda/|"; done

## sam-build: sam build of template.yaml (offline, no credentials; cargo-lambda per function,
## reusing what `make build` compiled), artifacts in .aws-sam/build
sam-build:
	infra/scripts/sam-tools.sh
	PATH="$(CURDIR)/.tools/sam/bin:$$PATH" SAM_CLI_TELEMETRY=0 AWS_CONFIG_FILE=/nonexistent \
	  AWS_SHARED_CREDENTIALS_FILE=/nonexistent sam build --region us-east-1 --parameter-overrides Architecture=$(ARCH)
	@find .aws-sam/build -name bootstrap -exec stat -c '%8s bytes  %n' {} \; | sort -k3

## deploy: sam build + sam deploy --guided (needs AWS credentials, SAM CLI and cargo-lambda)
deploy: sam-build
	PATH="$(CURDIR)/.tools/sam/bin:$$PATH" SAM_CLI_TELEMETRY=0 sam deploy --guided

## logs: tail a function's logs (FUNCTION=McpFunction by default)
FUNCTION ?= McpFunction
logs:
	PATH="$(CURDIR)/.tools/sam/bin:$$PATH" SAM_CLI_TELEMETRY=0 sam logs --name $(FUNCTION) --tail

## validate: template.yaml is what [workspace.metadata.relevo] gives (`cargo relevo template --check`), then
## cfn-lint, `sam validate --lint`, the SAM translation and the deploy check (`cargo relevo validate`, tools in .tools/sam)
validate:
	$(CARGO) run --quiet -p cargo-relevo -- relevo template --check
	infra/scripts/validate.sh

## conformance: the official suite, 2026-07-28 and 2025-11-25 requirement sets: per-method and single routing, and the real Lambda binaries (2026-07-28)
conformance:
	infra/scripts/with-moto.sh infra/scripts/conformance.sh

## clients: the official Python SDK client (mcp 2.3, auto and legacy mode), the TypeScript SDK v1 client (1.32, 2025-11-25), the TypeScript SDK v2 client (2.4, pinned 2026-07-28: discover, MRTR checkout, listen) and the MCP Inspector CLI (2.12, modern, tools/list --strict fails on any warning) against the shop, and the curl transcript of docs/protocol.md replayed step by step; all five side by side, each output printed whole when all have ended (infra/scripts/clients.sh)
clients:
	infra/scripts/clients.sh

## browser: the approval page in headless Chromium (Debian package), approve once, then the agent's apply succeeds once;
## the approval as an MCP App in a host page (sandboxed iframe, the ext-apps bridge): approve, decline, replay
browser:
	infra/scripts/with-moto.sh infra/scripts/browser.sh

## bench: every performance figure in one run, as one Markdown table (target/bench/report.md):
## tools/call over HTTP against rmcp and a hyper ceiling (wrk), CPU/request, peak RSS, cold starts,
## binary sizes, criterion in-process costs, the durable path. Release builds; run it on a quiet machine.
bench:
	infra/scripts/bench.sh

## bench-smoke: the same harness in CI mode (debug builds, tiny durations); checks only that it runs
bench-smoke:
	infra/scripts/bench.sh --short

## bench-durable: durable-work throughput and store/queue calls per job alone (JOBS=1000)
JOBS ?= 1000
bench-durable:
	$(CARGO) run --release --quiet -p relevo-bench -- durable $(JOBS)

## size: every function of template.yaml under 8,000,000 bytes as `make build` builds it (release, stripped,
## ARCH=arm64|x86_64): builds mcp and tools-call (for the per-method functions), worker, reconciler, pages and
## well-known, prints each one's bytes, fails naming any at or over the limit (RELEVO_SIZE_LIMIT=bytes)
size:
	infra/scripts/size-check.sh $(ARCH)
## size-test: `make size` for the template's Architecture (what `sam build` deploys), then the same check
## with a limit of 1 byte on the binaries just built, which must fail (the check can see a function over it)
size-test:
	infra/scripts/size-check.sh
	@if RELEVO_SIZE_LIMIT=1 infra/scripts/size-check.sh >/dev/null 2>&1; then \
	  echo "size-test: the check passed binaries over a 1-byte limit" >&2; exit 1; \
	else echo "size-test: the check refuses binaries over its limit"; fi

## release-size: release build of one function binary, and its size
release-size:
	$(CARGO) build --release --quiet -p relevo-functions --bin tools-call
	@stat -c '%s bytes  target/release/tools-call' target/release/tools-call

## clean: cargo clean, and the checkout's links to the tools cache (.tools, .venv); the shared per-user
## caches themselves (${RELEVO_TOOLS_CACHE:-${XDG_CACHE_HOME:-~/.cache}/relevo/tools}, and the compile cache
## ${XDG_CACHE_HOME:-~/.cache}/relevo/sccache, and the target folders kept beside it: package-check-target,
## starter-target, size-target-ARCH, bench-peers-target) stay: remove them by hand
clean:
	$(CARGO) clean
	rm -rf .tools .venv
