#!/usr/bin/env bash
# Builds a real kube-apiserver offline from Debian's `kubernetes` source package (v1.20.2) into
# a cache outside the checkout (default /var/cache/mbx-k8s), once; later runs reuse it.
# About 9 minutes on 2 cores. Used by the operator's integration tests (issue: Kubernetes-native).
set -euo pipefail
CACHE=${MBX_K8S_CACHE:-/var/cache/mbx-k8s}
OUT="$CACHE/bin/kube-apiserver"
[ -x "$OUT" ] && { echo "$OUT"; exit 0; }
mkdir -p "$CACHE" && cd "$CACHE"
if [ ! -f /etc/apt/sources.list.d/debian-src.sources ]; then
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > /etc/apt/sources.list.d/debian-src.sources
fi
if ! command -v go >/dev/null || ! command -v etcd >/dev/null || [ ! -d /usr/share/gocode/src/github.com/modern-go/reflect2 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go etcd-server rsync golang-github-modern-go-reflect2-dev dpkg-dev
fi
SRC=$(ls -d "$CACHE"/kubernetes-*/ 2>/dev/null | head -1 || true)
if [ -z "$SRC" ]; then apt-get source -qq kubernetes; SRC=$(ls -d "$CACHE"/kubernetes-*/ | head -1); fi
SRC=${SRC%/}
# Go 1.19 needs reflect2 1.0.2 (Debian's) instead of the vendored copy, or the server crashes.
rm -rf "$SRC/vendor/github.com/modern-go/reflect2"
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$SRC/vendor/github.com/modern-go/reflect2"
mkdir -p "$CACHE/.go/src/k8s.io"
ln -sfn "$SRC" "$CACHE/.go/src/k8s.io/kubernetes"
cd "$CACHE/.go/src/k8s.io/kubernetes"
GOPATH="$CACHE/.go" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=-mod=vendor make WHAT=cmd/kube-apiserver
mkdir -p "$CACHE/bin"
cp "$(find "$SRC/_output" -type f -name kube-apiserver | head -1)" "$OUT"
echo "$OUT"
