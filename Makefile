# Node 24 is pinned as a devDependency (package "node"); putting node_modules/.bin first on PATH
# makes every recipe below, and npm scripts, run on it even where the system Node is older.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
MAILBOX_RESOURCES_DIR ?= ./resources
export MAILBOX_RESOURCES_DIR

.PHONY: install build run test test-unit chromium postfix exim client db-types test-postgres test-pglite test-k8s e2e reliability soak bench bench-smoke bench-scale bench-scale-drop lint format clean services

install: node_modules/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

build: install dist/.built dist/web/index.html

dist/.built: $(shell find src bench operator -name '*.ts' 2>/dev/null) tsconfig.json
	tsc -p tsconfig.json
	@touch $@

## The web console and the API reference page (web/, Vite + Preact), served by the api role.
dist/web/index.html: $(shell find web -type f 2>/dev/null) package-lock.json
	vite build --config web/vite.config.ts --logLevel warn

## make run: install, build, and serve every role from one process on embedded defaults.
run: build
	MAILBOX_BANNER=true npm start

## make test: the whole suite (starts local PostgreSQL/Redis if down): a file that opens storage on
## PostgreSQL and on PGlite, every other file once, reliability at its short size (vitest.config.ts).
## make test AREA=smtp: only test/smtp/, on the projects its files belong to (any folder of test/).
## It builds first: the ~150 `mailbox` processes the tests start run the build, a second faster each
## than under tsx (test/support/mailbox-command.ts; tsx runs the sources when the build is older).
## A failed run ends with the list of what failed (test-results/failures.txt), after the reliability table.
AREA ?=
test: install services chromium postfix exim build
	@if [ -n "$(AREA)" ] && [ ! -d "test/$(AREA)" ]; then echo "AREA=$(AREA): no folder test/$(AREA)/ (one of: $$(ls -d test/*/ | cut -d/ -f2 | tr '\n' ' '))" >&2; exit 2; fi
	vitest run $(if $(AREA),test/$(AREA)/) || { status=$$?; cat test-results/failures.txt 2>/dev/null; exit $$status; }

## make test-unit: the pure rules of test/unit/ (no storage, no services), in seconds.
test-unit: install
	vitest run --project unit

test-postgres: install services build
	MAILBOX_TEST_ENGINE=postgres vitest run

test-k8s: install services build
	vitest run --project k8s

## make e2e: the image and chart on a real cluster (KUBECONFIG; here ../shared/k8s-node/up.sh, elsewhere kind
## or k3s with E2E_IMAGE_LOAD): PostgreSQL, Redis, helm install, checks through the Services, a table
## of figures, the namespace removed (scripts/e2e.sh, test/e2e/). Not part of make test (10-20 minutes here).
e2e: install
	bash scripts/e2e.sh

## make reliability: the reliability and security proof at full size (kill -9 during 10 000
## submissions, PostgreSQL stopped, outbound faults, fuzzing...); prints a pass/fail table of figures.
reliability: install services build
	RELIABILITY=full vitest run --project reliability

## make soak: 30 minutes of mixed HTTP, SMTP and real-time load on PostgreSQL and Redis (not in CI);
## SOAK_MINUTES shortens it.
soak: build services
	node dist/bench/soak/run.js

## make bench-smoke: every bench of `make bench` at a small size, so none rots unseen: bench/http's
## rows on small mailboxes (2 s a row), bench/smtp (2 s, 4 clients), bench/realtime (200 sockets, 5 s),
## the console (1 000 messages, one load), extraction and memory (3 s idle, 3 s load). Checks that
## every bench runs and answers; its figures are not figures (a few minutes, on any machine).
bench-smoke: build services
	rm -rf bench/results/latest && mkdir -p bench/results && touch bench/results/.smoke-start
	BENCH_SMALL=2000 SEARCH_BENCH_MESSAGES=$${SEARCH_BENCH_MESSAGES:-20000} BENCH_SECONDS=2 BENCH_ROUNDS=1 node dist/bench/http/run.js
	BENCH_SMTP_SECONDS=2 BENCH_SMTP_CLIENTS=4 BENCH_SMTP_BURST_SECONDS=3 node dist/bench/smtp/run.js
	BENCH_RT_CLIENTS=200 BENCH_RT_SECONDS=5 BENCH_RT_CLIENT_PROCS=1 node dist/bench/realtime/run.js
	BENCH_CONSOLE_MESSAGES=1000 BENCH_CONSOLE_RUNS=1 node dist/bench/console/run.js
	node dist/bench/extraction/run.js
	SCREENING_BENCH_ROUNDS=5 node dist/bench/screening/run.js
	BENCH_MCP_SUBS=20 BENCH_MCP_MAILBOXES=10 BENCH_MCP_MESSAGES=20 node dist/bench/mcp-events/run.js
	BENCH_MEMORY_IDLE_SECONDS=3 BENCH_MEMORY_LOAD_SECONDS=3 BENCH_MEMORY_ROLES="api;api,realtime,smtp,worker" node dist/bench/memory/run.js
	BENCH_SMOKE=1 node dist/bench/summary.js
	find bench/results -maxdepth 1 -name '*.json' -newer bench/results/.smoke-start -delete; rm -f bench/results/.smoke-start

## make bench-scale: one PostgreSQL database of 10 000 000 messages (a 5 M mailbox and 500 mailboxes
## of 10 000, interleaved) beside a 10 000-message baseline database, list and get p50/p99 measured
## interleaved; sizes per message and EXPLAIN (ANALYZE, BUFFERS); then a hash-partitioned copy of
## 1 M of its rows (bench/scale/partition.ts) and the search with a GIN index leading with the
## mailbox (bench/scale/search-index.ts). Not part of make bench: the first run seeds for ~25
## minutes here and takes ~17 GB; the database is kept (mbx_scale_10000000) and reused, so a rerun
## takes ~20 minutes. BENCH_SCALE_MESSAGES sets the size. make bench-scale-drop removes it.
bench-scale: build services
	node dist/bench/scale/run.js
	node dist/bench/scale/partition.js
	node dist/bench/scale/search-index.js

bench-scale-drop:
	psql -h 127.0.0.1 -U postgres -c "drop database if exists $${BENCH_SCALE_DB:-mbx_scale_10000000} with (force)"

test-pglite: install
	MAILBOX_TEST_ENGINE=pglite vitest run

bench: build services
	rm -rf bench/results/latest
	node dist/bench/http/run.js
	node dist/bench/smtp/run.js
	node dist/bench/realtime/run.js
	node dist/bench/mcp-events/run.js
	node dist/bench/console/run.js
	node dist/bench/extraction/run.js
	node dist/bench/screening/run.js
	node dist/bench/memory/run.js
	node dist/bench/summary.js

## make lint: type-check src, test, bench and operator; ESLint; the import rules of ARCHITECTURE.md
## (dependency-cruiser, .dependency-cruiser.cjs); the formatter's check.
lint: install
	tsc -p tsconfig.check.json
	tsc -p web/tsconfig.json
	tsc -p clients/typescript/tsconfig.json
	eslint --max-warnings 0 .
	depcruise src operator bench test web --config .dependency-cruiser.cjs --output-type err
	prettier --check --log-level warn .

## make format: rewrite every file the formatter owns.
format: install
	prettier --write --log-level warn .

services:
	@bash scripts/ensure-services.sh

## make client: regenerate the typed TypeScript client's types (clients/typescript) from the routes.
## make db-types: regenerate src/storage/schema.ts (the Kysely DB type) from a scratch PostgreSQL database
## migrated with src/storage/migrations (dropped afterwards); test/storage/schema-consistency.test.ts checks it.
db-types: install services
	tsx scripts/db-types.ts

client: install
	tsx scripts/generate-client.ts
	openapi-typescript clients/typescript/openapi.json -o clients/typescript/schema.d.ts

## Postfix for the interop tests (test/interop: private instances on loopback ports; skipped without it).
postfix:
	@bash scripts/ensure-postfix.sh

## Exim 4 for the interop tests: Debian's packages unpacked, not installed (they conflict with
## postfix), into .cache/exim/ (private instances on loopback ports; skipped without it).
exim:
	@bash scripts/ensure-exim.sh

## Chromium for the browser tests (the `browser` vitest project skips them, with one line, without it).
chromium:
	@bash scripts/ensure-chromium.sh

clean:
	rm -rf dist node_modules/.installed
