# dnspolicy-controller. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

# Tools and binaries are built once into a cache outside the clone, keyed by version, so a fresh
# clone on the same machine (as CI uses) does not rebuild them.
CACHE ?= $(or $(DNSPOLICY_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/dnspolicy-controller)
export DNSPOLICY_CACHE := $(CACHE)
CONTROLLER_GEN_VERSION ?= v0.23.0
CONTROLLER_GEN = $(CACHE)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# One release number for the binary (--version), the image tag, the chart and the CSV.
VERSION := $(shell cat VERSION)
IMG_REPO ?= ghcr.io/dnspolicy/dnspolicy-controller
IMG ?= $(IMG_REPO):v$(VERSION)
LDFLAGS = -s -w -buildid= -X github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app.Version=$(VERSION)
KUSTOMIZE_VERSION ?= v5.8.1
KUSTOMIZE = $(CACHE)/bin/kustomize-$(KUSTOMIZE_VERSION)
HELM_VERSION ?= v3.22.0
HELM = $(CACHE)/bin/helm-$(HELM_VERSION)
# The Kubernetes release charts are rendered and linted for (the one envtest runs).
HELM_KUBE_VERSION ?= v1.37.2
OPM_VERSION ?= v1.60.0
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT = $(CACHE)/bin/golangci-lint-$(GOLANGCI_LINT_VERSION)
OPM = $(CACHE)/bin/opm-$(OPM_VERSION)
PKGS = ./...
# Test tiers. Plain `go test ./...` runs the unit tier, which needs nothing but Go. Test files that
# need the envtest binaries (kube-apiserver, etcd), Debian's DNS tools or other built binaries start
# with `//go:build integration`; test/e2e with `//go:build e2e`; the adversarial tier (test/install, teams
# acting through the edit role) with `//go:build tenancy` (test/tiers_test.go checks it). Tagged
# tests fail, never skip, when what they need is missing.
TEST_TAGS = integration,e2e,tenancy
# The packages holding integration-tagged tests.
INTEGRATION_PKGS = $(shell grep -rl --include='*_test.go' '^//go:build integration' . | xargs -r -n1 dirname | sort -u)

##@ General

.PHONY: help
help: ## List the targets with one line each.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: run
run: ## Run the controller: against the current cluster if it answers, else a local control plane.
	go build -o bin/dnspolicy-run ./hack/run
	@# exec: make is its parent, so a killed make stops it too (hack/run/supervise.go).
	exec bin/dnspolicy-run $(ARGS)

.PHONY: build
build: ## Build the controller binary and the kubectl-dns plugin into bin/.
	go build -trimpath -ldflags "$(LDFLAGS)" -o bin/dnspolicy-controller ./cmd/dnspolicy-controller
	go build -trimpath -ldflags "-s -w -buildid=" -o bin/kubectl-dns ./cmd/kubectl-dns

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs under config/crd/bases and the ClusterRole under config/rbac.
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=dnspolicy-controller paths=./cmd/... paths=./controllers/... paths=./providers/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=dnspolicy-controller paths=./cmd/... paths=./controllers/dnsrecord/... paths=./controllers/dnshealthcheckprobe/... paths=./controllers/dnsserver/... paths=./providers/... output:rbac:artifacts:config=config/rbac/record-only

.PHONY: fmt
fmt: ## Format the Go code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on every file, tagged test tiers included.
	go vet -tags $(TEST_TAGS) ./...

.PHONY: verify
verify: $(CONTROLLER_GEN) ## Fail when generated files are stale, code is unformatted, or vet or the linters complain.
	@snap=$$(mktemp -d); cp -r apis config "$$snap"/; \
	  $(MAKE) -s generate manifests >/dev/null; \
	  if ! diff -r "$$snap/apis" apis >/dev/null || ! diff -r "$$snap/config" config >/dev/null; then \
	    echo "generated files were stale and have been regenerated: review and commit them"; rm -rf "$$snap"; exit 1; fi; \
	  rm -rf "$$snap"
	@out=$$(gofmt -l $$(git ls-files '*.go')); test -z "$$out" || { echo "gofmt would change: $$out"; exit 1; }
	go vet -tags $(TEST_TAGS) ./...
	@$(MAKE) -s lint
	@$(MAKE) -s verify-install

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run the linters of .golangci.yml (the reasons for each are written there).
	@# Several checkouts of the project (worktrees, a CI clone) may lint at once: golangci-lint's
	@# lock would otherwise fail all but the first.
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

$(GOLANGCI_LINT):
	@hack/tool.sh golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(GOLANGCI_LINT_VERSION) >/dev/null

##@ Test

.PHONY: test
test: envtest dns-tools verify ## Build what tests need and run every test tier (unit, integration, e2e), then each fuzz target briefly.
	go test $(GO_TEST_FLAGS) -tags $(TEST_TAGS) $(PKGS)
	$(MAKE) -s fuzz

# Each fuzz target runs FUZZTIME beyond its seed corpus (which `go test` always runs).
FUZZTIME ?= 10s
FUZZ_TARGETS = FuzzHandler:./pkg/dnsserver FuzzZone:./pkg/dnsserver FuzzGlue:./pkg/dnsserver FuzzDecodeExport:./pkg/dnsserver FuzzPlan:./pkg/plan FuzzParseTXT:./pkg/registry FuzzChoose:./pkg/zone FuzzBuild:./pkg/builder FuzzParse:./pkg/dnssec

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 10s) each.
	@# Go's fuzzing engine can end a run with "context deadline exceeded" and no failing input when
	@# -fuzztime runs out during an execution on a loaded machine; such a run is tried once more. A
	@# real failure writes its input under testdata and fails as it should. The shell runs with -e
	@# (.SHELLFLAGS), so the run's status is taken with || rc=: a bare failing assignment would end the
	@# loop before the output is shown or the run tried again.
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t%%:*} ($${t#*:}, $(FUZZTIME))"; \
	  rc=0; out=$$(go test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) "$${t#*:}" 2>&1) || rc=$$?; echo "$$out"; \
	  if [ $$rc -ne 0 ] && echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
	    echo "fuzz $${t%%:*}: the engine's deadline, no failing input: once more"; \
	    go test -run '^$$' -fuzz "^$${t%%:*}$$" -fuzztime $(FUZZTIME) "$${t#*:}" || exit 1; \
	  elif [ $$rc -ne 0 ]; then exit 1; fi; \
	done

.PHONY: test-unit
test-unit: ## Run the unit tier: every test that needs nothing but Go (what plain `go test ./...` runs).
	go test $(GO_TEST_FLAGS) $(PKGS)

.PHONY: test-integration
test-integration: envtest dns-tools ## Run the integration tier (real kube-apiserver + etcd, BIND, dig) in the packages that have one.
	go test $(GO_TEST_FLAGS) -tags integration $(INTEGRATION_PKGS)

.PHONY: test-tenancy
test-tenancy: envtest dns-tools ## Run the adversarial tier: the installed controller against teams that act only through the edit role.
	go test $(GO_TEST_FLAGS) -tags tenancy ./test/install/

.PHONY: test-e2e
test-e2e: envtest dns-tools ## Run the end-to-end tier: `make run` as a user runs it, real processes and tools.
	go test $(GO_TEST_FLAGS) -tags e2e ./test/e2e/...

.PHONY: bench
bench: envtest ## Run the benchmarks (planning, 64 and 1,000 records to Ready); figures go in docs/benchmarks.md.
	go test -tags integration -run '^$$' -bench . -benchtime 5x ./pkg/plan/ ./test/integration/dnsrecord/

COREDNS_VERSION ?= v1.15.0

.PHONY: bench-dns
bench-dns: envtest dns-tools ## Benchmark the embedded DNS server against CoreDNS, BIND, Knot DNS and NSD with dnsperf (QPS, p50/p99), unsigned and signed on line (DNSSEC, with Knot and CoreDNS); figures go in docs/benchmarks.md.
	go run ./test/bench/dns -coredns "$$(hack/tool.sh coredns github.com/coredns/coredns $(COREDNS_VERSION))" $(ARGS)

.PHONY: bench-clouds
bench-clouds: envtest ## Time 64 loadbalanced DNSRecords to Ready on the emulated Route 53, Cloud DNS and Azure (~5 min; ARGS=-clouds=aws); figures go in docs/benchmarks.md.
	go run ./test/bench/clouds $(ARGS)

.PHONY: bench-rfc2136
bench-rfc2136: envtest dns-tools ## 1,000 DNSRecords to Ready on BIND through the rfc2136 backend, beside the Route 53 emulator: time, batches and the servers' count of write messages (ARGS=-batch 500); figures go in docs/benchmarks.md.
	go run ./test/bench/rfc2136 $(ARGS)

.PHONY: bench-scale
bench-scale: envtest ## 1,000, 5,000 and 10,000 DNSRecords at once beside 10,000 Secrets against the controller binary: time to Ready, CPU-s and writes per record, RSS (ARGS=-records=1000); figures go in docs/benchmarks.md.
	go run ./test/bench/scale $(ARGS)

.PHONY: bench-floor
bench-floor: envtest ## The controller against the API server's floor: a bare client's create, finalizer and status writes for 64, 1,000 and 10,000 DNSRecords, the same writes by a bare controller from a watch, then the controller taking the same to Ready, on the same API server in one run; the ratio is the figure (~30 min on 2 loaded cores; ARGS=-records=64,1000); figures go in docs/benchmarks.md.
	go run ./test/bench/scale -floor -records 64,1000,10000 $(ARGS)

.PHONY: bench-probes
bench-probes: ## 1,000 health probes at 1s against loopback HTTP and HTTPS servers: checks/s, CPU-s per probe, heap and RSS, against a goroutine-per-probe peer (ARGS=-probes 1000 -duration 30s); figures go in docs/benchmarks.md.
	go run ./test/bench/probes $(ARGS)

.PHONY: kuadrant-e2e
kuadrant-e2e: envtest ## Run Kuadrant's dns-operator e2e suite, unchanged, against our controller (coredns and endpoint backends) and print passed/failed; DNS_OPERATOR=<checkout> (docs/kuadrant-e2e.md). A measurement, not part of `make test`.
	@test -n "$(DNS_OPERATOR)" || { echo "set DNS_OPERATOR to a checkout of Kuadrant's dns-operator"; exit 2; }
	hack/kuadrant-e2e.sh "$(DNS_OPERATOR)"

.PHONY: mixed-fleet
mixed-fleet: envtest ## Kuadrant's delegation scenarios on mixed fleets: Kuadrant's dns-operator, built from DNS_OPERATOR=<checkout>, as primary with ours as secondary and the reverse; prints scenario x direction (docs/mixed-fleet.md; ARGS=-run=TestMixedFleet/kuadrant-primary). A measurement, not part of `make test`.
	@test -n "$(DNS_OPERATOR)" || { echo "set DNS_OPERATOR to a checkout of Kuadrant's dns-operator"; exit 2; }
	DNS_OPERATOR="$(DNS_OPERATOR)" go test -tags mixedfleet -count=1 -timeout 40m ./test/mixedfleet/ $(ARGS)

.PHONY: envtest
.PHONY: delegation
delegation: ## Print the parent zone's NS and glue records delegating ZONE to every cluster's DNS server (PARENT=example.com SERVERS=ns1.example.com=192.0.2.1,...).
	@go run ./hack/delegation -zone "$(ZONE)" -parent "$(PARENT)" -servers "$(SERVERS)"

envtest: ## Build kube-apiserver, etcd and kubectl into the cache (once, ~6 min).
	@hack/envtest-bins.sh >/dev/null

.PHONY: dns-tools
dns-tools: ## Install BIND, dig, dnsperf, Knot DNS, NSD, PowerDNS and Prometheus (promtool) from Debian when missing.
	@hack/dns-tools.sh

$(CONTROLLER_GEN):
	@hack/tool.sh controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen $(CONTROLLER_GEN_VERSION) >/dev/null

##@ Install (image, kustomize, Helm, OLM; docs/install.md)

IMAGE_ARCHIVE = bin/dnspolicy-controller-$(VERSION).oci.tar

.PHONY: image
image: ## Build the container image as an OCI archive under bin/ (no container engine; same commit, same digest).
	@dpkg-query -W ca-certificates >/dev/null 2>&1 || apt-get install -y --no-install-recommends ca-certificates >/dev/null
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "$(LDFLAGS)" -o bin/image/dnspolicy-controller ./cmd/dnspolicy-controller
	go run ./hack/image -binary bin/image/dnspolicy-controller -version $(VERSION) -ref $(IMG) \
	  -revision "$$(git rev-parse HEAD)" -source-date-epoch "$$(git log -1 --format=%ct)" -out $(IMAGE_ARCHIVE)

# What install-generate writes; verify-install regenerates it and fails when it differs.
INSTALL_GENERATED = config/manager/kustomization.yaml config/prometheus/prometheusrule.yaml charts/dnspolicy-controller bundle catalog test/install/golden
KUSTOMIZE_OVERLAYS = default record-only namespaced prometheus

.PHONY: install-generate
install-generate: $(KUSTOMIZE) $(HELM) ## Write the chart's CRDs, rules and dashboards, the alerts' PrometheusRule and chart copy, the image tag, the rendered overlays and chart (golden files), the bundles and the catalog.
	@rm -rf charts/dnspolicy-controller/crds && mkdir -p charts/dnspolicy-controller/crds charts/dnspolicy-controller/files test/install/golden
	@cp config/crd/bases/*.yaml charts/dnspolicy-controller/crds/
	@rm -rf charts/dnspolicy-controller/dashboards && mkdir -p charts/dnspolicy-controller/dashboards
	@cp config/observability/dashboards/*.json charts/dnspolicy-controller/dashboards/
	@cp config/rbac/role.yaml charts/dnspolicy-controller/files/role.yaml
	@cp config/rbac/record-only/role.yaml charts/dnspolicy-controller/files/role-record-only.yaml
	@go run ./hack/prometheusrule
	@sed -i -E 's/^version: .*/version: $(VERSION)/; s/^appVersion: .*/appVersion: "$(VERSION)"/' charts/dnspolicy-controller/Chart.yaml
	@cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	@for o in $(KUSTOMIZE_OVERLAYS); do $(KUSTOMIZE) build config/$$o > test/install/golden/kustomize-$$o.yaml; done
	@$(KUSTOMIZE) build config/observability/dashboards > test/install/golden/kustomize-dashboards.yaml
	@$(HELM) template dnspolicy-controller charts/dnspolicy-controller --namespace dnspolicy-system --include-crds --kube-version $(HELM_KUBE_VERSION) > test/install/golden/helm-default.yaml
	@$(HELM) template dnspolicy-controller charts/dnspolicy-controller --namespace dnspolicy-system --include-crds --kube-version $(HELM_KUBE_VERSION) \
	  -f test/install/testdata/values-full.yaml > test/install/golden/helm-full.yaml
	@$(HELM) template dnspolicy-controller charts/dnspolicy-controller --namespace dnspolicy-system --include-crds --kube-version $(HELM_KUBE_VERSION) \
	  -f test/install/testdata/values-namespaced.yaml > test/install/golden/helm-namespaced.yaml
	@$(MAKE) -s bundle

.PHONY: verify-install
verify-install: $(KUSTOMIZE) $(HELM) $(OPM) ## Fail when the install files (chart, renders, bundles, catalog) are stale; lint the chart, validate the bundles and the catalog.
	@snap=$$(mktemp -d); for p in $(INSTALL_GENERATED); do mkdir -p "$$snap/$$(dirname $$p)"; cp -r $$p "$$snap/$$p"; done; \
	  $(MAKE) -s install-generate >/dev/null; \
	  for p in $(INSTALL_GENERATED); do if ! diff -r "$$snap/$$p" $$p; then \
	    echo "install files were stale ($$p) and have been regenerated: review and commit them"; rm -rf "$$snap"; exit 1; fi; done; \
	  rm -rf "$$snap"
	@$(MAKE) -s helm-lint catalog-validate

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the chart with default values and with everything turned on.
	$(HELM) lint --strict --kube-version $(HELM_KUBE_VERSION) charts/dnspolicy-controller
	$(HELM) lint --strict --kube-version $(HELM_KUBE_VERSION) charts/dnspolicy-controller -f test/install/testdata/values-full.yaml
	$(HELM) lint --strict --kube-version $(HELM_KUBE_VERSION) charts/dnspolicy-controller -f test/install/testdata/values-namespaced.yaml

.PHONY: bundle
bundle: ## Generate the OLM bundles (full, and record side as Kuadrant's dns-operator) and the catalog from config/, and validate them.
	go run ./hack/bundle -version $(VERSION) -image $(IMG)

.PHONY: catalog-validate
catalog-validate: $(OPM) ## Validate the file-based catalog with opm.
	$(OPM) validate catalog

.PHONY: install-tools
install-tools: $(KUSTOMIZE) $(HELM) $(OPM) ## Build kustomize, helm and opm into the cache (once).

$(KUSTOMIZE):
	@hack/tool.sh kustomize sigs.k8s.io/kustomize/kustomize/v5 $(KUSTOMIZE_VERSION) >/dev/null

$(HELM):
	@hack/tool.sh helm helm.sh/helm/v3/cmd/helm $(HELM_VERSION) >/dev/null

$(OPM):
	@OPM_VERSION=$(OPM_VERSION) hack/opm.sh >/dev/null
