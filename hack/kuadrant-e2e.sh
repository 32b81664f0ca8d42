#!/usr/bin/env bash
# Runs Kuadrant's dns-operator e2e suite, unchanged, against our controller, and prints how many of
# its specs pass per backend. A measurement to run by hand (docs/kuadrant-e2e.md), not part of CI:
# the suite lives in Kuadrant's repository, which the Go module proxy does not serve, so it cannot
# be a build dependency, and its code is not ours to copy.
#
#   hack/kuadrant-e2e.sh <path to a dns-operator checkout>
#
# For each backend (BACKENDS, default "coredns endpoint") it starts a fresh local control plane with
# our controller (hack/run, as `make run` does, with its own state directory and free loopback
# ports), creates the namespace and the provider Secrets the suite reads (as Kuadrant's
# `make local-setup` does), stands in for the garbage collector that a control plane without
# kube-controller-manager lacks, runs the suite, and stops everything. Then it prints a table of
# specs passed, failed and skipped, and each failed spec. Exit status: 0 when nothing failed.
#
# Environment:
#   BACKENDS     backends to run the suite for: coredns, endpoint (default both)
#   LABELS       a Ginkgo label filter, e.g. 'single_record && !loadbalanced' (default: every spec)
#   OUT          where the reports and logs are kept (default <cache>/kuadrant-e2e/last-run; emptied
#                at start)
#   GINKGO_ARGS  further arguments for the suite binary, e.g. -ginkgo.focus=wildcard
# The suite binary is built once per dns-operator commit into <cache>/kuadrant-e2e/<commit>
# (<cache> is $DNSPOLICY_CACHE, else $XDG_CACHE_HOME/dnspolicy-controller, else
# ~/.cache/dnspolicy-controller, as for every tool this repository builds).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
[ $# -eq 1 ] || usage
CHECKOUT=$(cd "$1" && pwd) || usage
[ -f "$CHECKOUT/test/e2e/suite_test.go" ] || { echo "kuadrant-e2e: $CHECKOUT holds no test/e2e/suite_test.go: not a dns-operator checkout" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE_ROOT="${DNSPOLICY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dnspolicy-controller}"
BACKENDS=${BACKENDS:-coredns endpoint}
LABELS=${LABELS:-}
OUT=${OUT:-$CACHE_ROOT/kuadrant-e2e/last-run}
NAMESPACE=dnstest # TEST_DNS_NAMESPACES, as in Kuadrant's own setup

log() { echo "kuadrant-e2e: $*" >&2; }

# Everything started here is stopped on any exit: an interrupt, a failure or the end. Long steps run
# in the background and are waited for, so a signal is handled at once, not when the step ends.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kuadrant-e2e.XXXXXX")
RUN_PID="" GC_PID="" STEP_PID=""
stop() { # stop PID SECONDS: SIGTERM, then SIGKILL after SECONDS
  local pid=$1 grace=$2
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq $((grace * 10))); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  log "pid $pid did not stop within ${grace}s: killing it"
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_all() {
  stop "$GC_PID" 10
  GC_PID=""
  # hack/run stops the controller (its manager has 30 s to finish) and then the control plane;
  # its children die with it even if it is killed (a parent-death signal).
  stop "$RUN_PID" 60
  RUN_PID=""
}
cleanup() {
  stop "$STEP_PID" 30 # the suite runs its cleanup nodes when interrupted
  stop_all
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. The suite, built unchanged from the checkout, once per commit. A checkout with local changes
#    is keyed by them too, so an edited suite is never mistaken for the commit's.
COMMIT=$(git -C "$CHECKOUT" rev-parse HEAD)
KEY=$COMMIT
if [ -n "$(git -C "$CHECKOUT" status --porcelain --untracked-files=no)" ]; then
  KEY="$COMMIT-dirty-$(git -C "$CHECKOUT" diff HEAD | sha256sum | cut -c1-12)"
  log "the checkout has local changes: the suite is not Kuadrant's $COMMIT as published"
fi
SUITE="$CACHE_ROOT/kuadrant-e2e/$KEY/e2e.test"
if [ ! -x "$SUITE" ]; then
  log "building the suite of dns-operator ${KEY} (about 4 minutes, once)"
  mkdir -p "$(dirname "$SUITE")"
  (cd "$CHECKOUT" && exec go test -c -tags e2e -o "$SUITE.tmp" ./test/e2e) &
  STEP_PID=$!
  wait "$STEP_PID"
  STEP_PID=""
  mv "$SUITE.tmp" "$SUITE"
fi

# Our side: the `make run` binary, the helper (free ports, the collector, the table), kubectl.
(cd "$ROOT" && go build -o "$WORK/dnspolicy-run" ./hack/run && go build -o "$WORK/kuadrant-e2e" ./hack/kuadrant-e2e)
ASSETS=$("$ROOT/hack/envtest-bins.sh")
KUBECTL="$ASSETS/kubectl"
[ -x "$KUBECTL" ] || { log "no kubectl in $ASSETS: run make envtest"; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT"
log "reports and logs: $OUT"

# wait_for_line FILE PATTERN SECONDS PID: until a line of FILE matches, while PID lives.
wait_for_line() {
  local file=$1 pattern=$2 seconds=$3 pid=$4
  for _ in $(seq $((seconds * 10))); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { log "the process writing $file exited:"; tail -n 30 "$file" >&2; return 1; }
    sleep 0.1
  done
  log "no line matching '$pattern' in $file within ${seconds}s"
  tail -n 30 "$file" >&2
  return 1
}

# The zone each backend's run uses, as in Kuadrant's CI (.github/workflows/ci-e2e-0.yaml).
zone_for() {
  case $1 in
    coredns) echo k.example.com ;;
    endpoint) echo e2e.kuadrant.local ;;
    *) log "unknown backend $1 (coredns or endpoint)"; exit 2 ;;
  esac
}

run_backend() {
  local backend=$1 zone out=$OUT/$1 dns kubeconfig started=$SECONDS
  zone=$(zone_for "$backend")
  mkdir -p "$out"

  # 2. Our controller on a fresh local control plane. No reachable cluster (KUBECONFIG names no
  #    file), its own state directory, free loopback ports; the embedded DNS server answers on the
  #    address the coredns Secret's NAMESERVERS names, which is where the suite resolves.
  #    The suite's namespace is granted its zone, as an administrator grants a tenant its names
  #    (the coredns Secret picks the backend but entitles nothing). Kuadrant's health specs probe
  #    gateways on loopback, which health checks reach only when allowed.
  dns=$("$WORK/kuadrant-e2e" port)
  (cd "$ROOT" && exec env \
    KUBECONFIG="$WORK/no-such-kubeconfig" \
    KUBEBUILDER_ASSETS="$ASSETS" \
    DNSPOLICY_CACHE="$WORK/$backend-state" \
    DNSPOLICY_METRICS_BIND_ADDRESS=127.0.0.1:0 \
    DNSPOLICY_HEALTH_PROBE_BIND_ADDRESS=127.0.0.1:0 \
    DNSPOLICY_DNS_SERVER_ADDRESS="$dns" \
    DNSPOLICY_GRANT="$NAMESPACE=$zone" \
    DNSPOLICY_HEALTH_CHECK_ALLOWED_CIDRS=127.0.0.0/8,::1/128 \
    "$WORK/dnspolicy-run" >"$out/controller.log" 2>&1) &
  RUN_PID=$!
  wait_for_line "$out/controller.log" '^Kubeconfig: ' 300 "$RUN_PID"
  kubeconfig=$(sed -n 's/^Kubeconfig: //p' "$out/controller.log" | head -n 1)
  kubectl() { "$KUBECTL" --kubeconfig "$kubeconfig" "$@"; }

  # 3. The namespace and the provider Secrets, as Kuadrant's local-setup makes them
  #    (config/local-setup/dns-provider/*): the endpoint run's zone is a DNSRecord the suite creates
  #    with the inmemory Secret, whose kuadrant.local zone holds it.
  kubectl create namespace "$NAMESPACE" >/dev/null
  kubectl -n "$NAMESPACE" create secret generic dns-provider-credentials-coredns --type=kuadrant.io/coredns \
    --from-literal=ZONES=k.example.com --from-literal=NAMESERVERS="$dns" >/dev/null
  kubectl -n "$NAMESPACE" create secret generic dns-provider-credentials-endpoint --type=kuadrant.io/endpoint \
    --from-literal=ENDPOINT_GVR=kuadrant.io/v1alpha1.dnsrecords \
    --from-literal=ENDPOINT_ZONE_RECORD_LABEL=kuadrant.io/zone-record=true >/dev/null
  kubectl -n "$NAMESPACE" create secret generic dns-provider-credentials-inmemory --type=kuadrant.io/inmemory \
    --from-literal=INMEM_INIT_ZONES=kuadrant.local >/dev/null
  kubectl -n "$NAMESPACE" label secret --all app.kubernetes.io/part-of=dns-operator >/dev/null

  # 4. The garbage collector's stand-in.
  "$WORK/kuadrant-e2e" gc -kubeconfig "$kubeconfig" >"$out/gc.log" 2>&1 &
  GC_PID=$!
  wait_for_line "$out/gc.log" '^gc: watching' 60 "$GC_PID"

  # 5. The suite, through the kubeconfig's current context, as Kuadrant's CI runs it: in its
  #    package directory, as `go test` and ginkgo run it (it reads ./fixtures).
  log "$backend: running the suite (zone $zone${LABELS:+, labels $LABELS})"
  local rc=0
  (cd "$CHECKOUT/test/e2e" && exec env \
    KUBECONFIG="$kubeconfig" \
    TEST_DNS_ZONE_DOMAIN_NAME="$zone" \
    TEST_DNS_PROVIDER_SECRET_NAME="dns-provider-credentials-$backend" \
    TEST_DNS_NAMESPACES="$NAMESPACE" \
    TEST_DNS_CONCURRENT_RECORDS=1 \
    "$SUITE" -ginkgo.v -ginkgo.no-color -ginkgo.timeout=2h \
    -ginkgo.json-report="$out/report.json" \
    ${LABELS:+-ginkgo.label-filter="$LABELS"} ${GINKGO_ARGS:-} >"$out/suite.log" 2>&1) &
  STEP_PID=$!
  wait "$STEP_PID" || rc=$?
  STEP_PID=""
  log "$backend: the suite exited with status $rc after $((SECONDS - started))s (log: $out/suite.log)"

  # What is left in the cluster, to read beside the logs.
  kubectl get dnsrecords,dnshealthcheckprobes -A -o yaml >"$out/objects.yaml" 2>&1 || true
  kubectl get events -A >"$out/events.txt" 2>&1 || true
  stop_all
  echo "$((SECONDS - started))" >"$out/seconds"
}

reports=()
for backend in $BACKENDS; do
  run_backend "$backend"
  reports+=("$backend=$OUT/$backend/report.json")
done

echo
echo "Kuadrant dns-operator e2e suite ${KEY:0:12} against dnspolicy-controller $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "(not a git checkout)")"
for backend in $BACKENDS; do
  echo "  $backend: $(cat "$OUT/$backend/seconds")s wall, including the control plane's start and stop"
done
"$WORK/kuadrant-e2e" report "${reports[@]}"
