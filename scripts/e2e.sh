#!/bin/bash
# make e2e: build the image from the Dockerfile, make it available to the cluster's nodes, then run
# the end-to-end checks (test/e2e/run.ts: fresh namespace, PostgreSQL, Redis, helm install, checks,
# figure table, namespace removed). KUBECONFIG names the cluster.
#
# Image build and load, in this order:
#   E2E_IMAGE_BUILD set      run it (it must leave $E2E_IMAGE on the nodes)
#   E2E_IMAGE_LOAD set       docker build -t $E2E_IMAGE . ; $E2E_IMAGE_LOAD $E2E_IMAGE
#                            (kind: E2E_IMAGE_LOAD="kind load docker-image"; k3s: see README)
#   the k8s-node from ../shared/k8s-node/up.sh is running here (its containerd socket exists)
#                            its node-image.sh builds the unchanged Dockerfile with buildah and imports
#                            it into the node's containerd; PostgreSQL/Redis images from its Debian recipes
# E2E_POSTGRES_IMAGE / E2E_REDIS_IMAGE name the database images (default postgres:15 / redis:7, pulled
# by the nodes). E2E_SKIP_BUILD=1 reuses an image already loaded. E2E_KEEP=1 keeps the namespace.
set -euo pipefail
cd "$(dirname "$0")/.."
export E2E_IMAGE=${E2E_IMAGE:-localhost/mailbox-service:e2e}
log() { printf '%s make e2e: %s\n' "$(date +%T)" "$*" >&2; }
[ -n "${KUBECONFIG:-}" ] || { echo "make e2e: set KUBECONFIG to the cluster to test" >&2; exit 2; }

# The k8s-node's tools, when present: its kubectl (1.20, in skew with the cluster) first on PATH.
K8S_NODE_DIR=${K8S_NODE_DIR:-}
for d in ../shared/k8s-node ../../shared/k8s-node /work/shared/k8s-node; do
  [ -z "$K8S_NODE_DIR" ] && [ -x "$d/node-image.sh" ] && K8S_NODE_DIR=$(readlink -f "$d")
done
K8S_NODE_CACHE=${KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/k8s-node}
on_k8s_node() { [ -n "$K8S_NODE_DIR" ] && [ -S /run/k8s-node/containerd/containerd.sock ]; }
[ -d "$K8S_NODE_CACHE/bin" ] && export PATH="$K8S_NODE_CACHE/bin:$PATH"
command -v kubectl >/dev/null || { echo "make e2e: kubectl not found" >&2; exit 2; }

t0=$(date +%s)
if [ -n "${E2E_SKIP_BUILD:-}" ]; then
  log "E2E_SKIP_BUILD: using $E2E_IMAGE as loaded"
elif [ -n "${E2E_IMAGE_BUILD:-}" ]; then
  log "building with E2E_IMAGE_BUILD"; bash -c "$E2E_IMAGE_BUILD"
elif [ -n "${E2E_IMAGE_LOAD:-}" ]; then
  log "docker build -t $E2E_IMAGE ."; docker build -t "$E2E_IMAGE" .
  log "$E2E_IMAGE_LOAD $E2E_IMAGE"; $E2E_IMAGE_LOAD "$E2E_IMAGE"
elif on_k8s_node; then
  log "k8s-node: $K8S_NODE_DIR/node-image.sh app . $E2E_IMAGE (buildah, unchanged Dockerfile)"
  "$K8S_NODE_DIR/node-image.sh" app . "$E2E_IMAGE"
else
  echo "make e2e: say how the nodes get the image: E2E_IMAGE_LOAD (kind: 'kind load docker-image') or E2E_IMAGE_BUILD" >&2
  exit 2
fi
if on_k8s_node && [ -z "${E2E_POSTGRES_IMAGE:-}" ]; then
  # No registry on the k8s-node: PostgreSQL 15 and Redis 7 from Debian packages, built once.
  ctr="ctr -a /run/k8s-node/containerd/containerd.sock -n k8s.io"
  has() { $ctr images ls -q | grep -xF "$1" >/dev/null; }   # not grep -q: with pipefail, ctr's SIGPIPE fails it
  has localhost/k8s-node/postgres:15 ||
    "$K8S_NODE_DIR/node-image.sh" debian-app localhost/k8s-node/postgres:15 "$K8S_NODE_DIR/images/postgres.Containerfile"
  has localhost/k8s-node/redis:7 ||
    "$K8S_NODE_DIR/node-image.sh" debian-app localhost/k8s-node/redis:7 "$K8S_NODE_DIR/images/redis.Containerfile"
  export E2E_POSTGRES_IMAGE=localhost/k8s-node/postgres:15 E2E_REDIS_IMAGE=localhost/k8s-node/redis:7
fi
log "image ready in $(( $(date +%s) - t0 )) s; running the checks (kubectl $(kubectl version --client --short 2>/dev/null | head -1))"
tsx test/e2e/run.ts
