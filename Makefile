# Node 24 is pinned as a devDependency (package "node"); putting node_modules/.bin first on PATH
# makes every recipe below, and npm scripts, run on it even where the system Node is older.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
MAILBOX_RESOURCES_DIR ?= ./resources
export MAILBOX_RESOURCES_DIR

.PHONY: install build run test test-postgres test-pglite test-k8s reliability soak bench lint clean services

install: node_modules/.installed

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

build: install dist/.built

dist/.built: $(shell find src bench operator -name '*.ts' 2>/dev/null) tsconfig.json
	tsc -p tsconfig.json
	@touch $@

## make run: install, build, and serve every role from one process on embedded defaults.
run: build
	npm start

## make test: the whole suite on PostgreSQL and on PGlite (starts local PostgreSQL/Redis if down).
test: install services
	vitest run

test-postgres: install services
	MAILBOX_TEST_ENGINE=postgres vitest run

test-k8s: install services
	vitest run --project k8s

## make reliability: the reliability and security proof at full size (kill -9 during 10 000
## submissions, PostgreSQL stopped, outbound faults, fuzzing...); prints a pass/fail table of figures.
reliability: install services
	RELIABILITY=full vitest run --project reliability

## make soak: 30 minutes of mixed HTTP, SMTP and real-time load on PostgreSQL and Redis (not in CI);
## SOAK_MINUTES shortens it.
soak: build services
	node dist/bench/soak/run.js

test-pglite: install
	MAILBOX_TEST_ENGINE=pglite vitest run

bench: build services
	node dist/bench/http/run.js
	node dist/bench/smtp/run.js
	node dist/bench/realtime/run.js

lint: install
	tsc -p tsconfig.json --noEmit

services:
	@bash scripts/ensure-services.sh

clean:
	rm -rf dist node_modules/.installed
