#!/usr/bin/env bash
# Builds the binaries envtest and `make run` need (kube-apiserver, etcd, kubectl) from the Go module
# proxy, because setup-envtest downloads from a host these machines cannot reach. The binaries go to
# a cache OUTSIDE the clone, keyed by version, so a fresh clone on the same machine (CI) reuses them.
# Prints the directory holding the binaries (use it as KUBEBUILDER_ASSETS).
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE_ROOT="${DNSPOLICY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dnspolicy-controller}"
ASSETS="$CACHE_ROOT/envtest/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$ASSETS"

log() { echo "hack/envtest-bins: $*" >&2; }

# have_version binary expected [args...]: the binary exists and its version output holds expected.
# The output is captured first: with pipefail, `bin --version | grep -q` fails when grep exits early
# and the binary dies of SIGPIPE, which would rebuild a good binary.
have_version() {
  local bin=$1 want=$2 out
  shift 2
  [ -x "$bin" ] || return 1
  out=$("$bin" "${@:---version}" 2>/dev/null) || return 1
  [[ "$out" == *"$want"* ]]
}

build_etcd() {
  if have_version "$ASSETS/etcd" "etcd Version: ${ETCD_VERSION#v}"; then return; fi
  log "building etcd $ETCD_VERSION (about 30 s, once)"
  local w; w=$(mktemp -d)
  cat >"$w/go.mod" <<MOD
module etcdwrapper

go 1.26
MOD
  cat >"$w/main.go" <<'SRC'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
SRC
  (cd "$w" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >&2 && go mod tidy >&2 &&
    go build -trimpath -o "$ASSETS/etcd.tmp.$$" . >&2)
  mv -f "$ASSETS/etcd.tmp.$$" "$ASSETS/etcd"
  rm -rf "$w"
}

build_kube() {
  if have_version "$ASSETS/kube-apiserver" "Kubernetes $K8S_VERSION" &&
     have_version "$ASSETS/kubectl" "Client Version: $K8S_VERSION" version --client; then
    return
  fi
  log "building kube-apiserver and kubectl $K8S_VERSION (about 6 minutes and 2.5 GB of memory, once)"
  local w; w=$(mktemp -d)
  cat >"$w/go.mod" <<MOD
module kubewrapper

go 1.26

require k8s.io/kubernetes $K8S_VERSION
MOD
  # k8s.io/kubernetes replaces its staging modules with local folders; point each at its release.
  local gomod
  gomod=$(cd "$w" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  grep -oE '^\s*k8s.io/[a-z0-9-]+ => \./staging' "$gomod" | awk '{print $1}' |
    grep -vE '^k8s.io/(sample-cli-plugin|sample-controller)$' | sort -u |
    while read -r m; do echo "replace $m => $m $STAGING_VERSION" >>"$w/go.mod"; done
  cat >"$w/tools.go" <<'SRC'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
SRC
  local minor; minor=$(echo "$K8S_VERSION" | cut -d. -f2)
  local ld="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (cd "$w" && go mod tidy >&2 &&
    go build -trimpath -ldflags "$ld" -o "$ASSETS/kube-apiserver.tmp.$$" k8s.io/kubernetes/cmd/kube-apiserver >&2 &&
    go build -trimpath -ldflags "$ld" -o "$ASSETS/kubectl.tmp.$$" k8s.io/kubernetes/cmd/kubectl >&2)
  mv -f "$ASSETS/kube-apiserver.tmp.$$" "$ASSETS/kube-apiserver"
  mv -f "$ASSETS/kubectl.tmp.$$" "$ASSETS/kubectl"
  rm -rf "$w"
}

build_etcd
build_kube
echo "$ASSETS"
