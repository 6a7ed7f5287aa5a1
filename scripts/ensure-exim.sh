#!/usr/bin/env bash
# Unpacks Debian's Exim 4 for the interop tests (test/interop/exim.test.ts) into .cache/exim/root
# when it is missing and this machine can (root, apt-get). Not installed: Debian's exim4 packages
# conflict with postfix (both are the mail-transport-agent), so the packages are fetched with
# `apt-get download` and unpacked with `dpkg -x`, with the shared libraries the binary needs that
# the machine lacks. The tests run private instances (their own config file, spool and log
# directories, non-standard loopback ports); no system instance is ever started. Never fails:
# without it the Exim tests are skipped with one line.
set -u
cd "$(dirname "$0")/.."
CACHE=.cache/exim
ROOT="$CACHE/root"
EXIM="$ROOT/usr/sbin/exim4"

libdirs() { find "$PWD/$ROOT" -maxdepth 3 -type d -path '*lib/*-linux-gnu*' 2>/dev/null | paste -sd:; }
missing_libs() { LD_LIBRARY_PATH="$(libdirs)" ldd "$EXIM" 2>/dev/null | awk '/not found/ { print $1 }'; }
# The binary looks its compiled-in user up before it reads any configuration (exim4-base's
# postinst creates it the same way).
has_user() { getent passwd Debian-exim >/dev/null; }
ready() { [ -x "$EXIM" ] && [ -z "$(missing_libs)" ] && has_user; }

ready && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && command -v dpkg >/dev/null; then
  echo "unpacking Debian's Exim 4 for the interop tests into $CACHE (apt-get download, dpkg -x; not installed)"
  rm -rf "$CACHE" && mkdir -p "$CACHE/debs"
  download() { (cd "$CACHE/debs" && apt-get download -qq "$@") >/dev/null 2>&1; }
  download exim4-daemon-light exim4-base || { apt-get update -qq >/dev/null 2>&1 && download exim4-daemon-light exim4-base; }
  # The run-time libraries among the daemon's dependencies that are not installed here.
  for lib in $(apt-cache depends exim4-daemon-light 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^lib/ { print $2 }'); do
    dpkg-query -W -f='${Status}' "$lib" 2>/dev/null | grep -q 'ok installed' || download "$lib"
  done
  for deb in "$CACHE"/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" "$ROOT"; done
  # A private copy, run by root: no setuid bit, so that the processes Exim re-executes as its own
  # user (bounces, queue runs) keep LD_LIBRARY_PATH for the unpacked libraries.
  [ -f "$EXIM" ] && chmod u-s "$EXIM"
  has_user || useradd --system --user-group --no-create-home --home-dir /var/spool/exim4 \
    --shell /usr/sbin/nologin Debian-exim >/dev/null 2>&1 || true
fi
if ! ready; then
  echo "Exim not available (not root, no apt-get or network, or a library missing: $(missing_libs | paste -sd' ')): Exim interop tests will be skipped"
fi
exit 0
