#!/usr/bin/env bash
# Installs Debian's Postfix for the interop tests (test/interop) when it is missing and this machine
# can (root, apt-get). The tests run private instances (their own config and queue directories,
# non-standard loopback ports); the package's own instance is never started. Never fails: without
# Postfix, or without root to start it, the interop tests are skipped with one line.
set -u
command -v postfix >/dev/null && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Postfix for the interop tests (apt-get install postfix)"
  export DEBIAN_FRONTEND=noninteractive
  echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections 2>/dev/null || true
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends postfix; } >/dev/null 2>&1 || true
fi
command -v postfix >/dev/null || echo "Postfix not installed (not root, no apt-get, or no package): interop tests will be skipped"
exit 0
