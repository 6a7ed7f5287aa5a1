#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (vitest project `browser`) when it is missing
# and this machine can (root, apt-get, a `chromium` package). Never fails: without Chromium the
# browser tests are skipped with one line.
set -u
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing Chromium for the browser tests (apt-get install chromium)"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >/dev/null 2>&1 || true
fi
[ -x "$CHROMIUM" ] || echo "Chromium not installed (not root, no apt-get, or no package): browser tests will be skipped"
exit 0
