# The README's commands. CI (.ci/run) runs vet, test, e2e, chaos-short and fuzz-ci among them.
.PHONY: test vet e2e upgrade-test failover run build bench tools gen gen-check chaos chaos-short fuzz fuzz-ci ts-test ts-gen ts-gen-check ts-bench py-test py-gen py-gen-check py-bench sdk-conformance screenshots docs-cli

# The hopper module's tests. The repository holds two more modules, each with its own go.mod,
# which `./...` here does not reach: e2e (browser and chaos tests, make e2e and make chaos) and
# bench/peers (Hopper beside River, docs/benchmarks.md).
test:
	go test -race -count=1 -timeout 15m -p 2 ./...

# go vet in every module, the chaos suite's files (build tag chaos) included.
vet:
	go vet ./...
	cd e2e && go vet ./... && go vet -tags chaos ./chaos/... && go vet -tags failover ./failover/... && go vet -tags sdk ./sdk/...
	cd bench/peers && go vet ./...

# The e2e module's tests without the build tag chaos: the dashboard's browser tests
# (e2e/dashboard, headless chromium; docs/dashboard.md), the cluster test (e2e/cluster:
# worker processes on one PostgreSQL schema, one killed; docs/development.md) and the
# rolling upgrade from the previous release (e2e/upgrade; docs/deploy.md#upgrades).
e2e:
	cd e2e && go test -race -count=1 -timeout 10m ./...

# The rolling-upgrade test alone; HOPPER_UPGRADE_FROM=<git ref> upgrades from another release.
upgrade-test:
	cd e2e && go test -count=1 -timeout 10m -v -run TestRollingUpgrade ./upgrade/

# The failover experiment (e2e/failover, build tag failover; docs/deploy.md#high-availability):
# a throwaway PostgreSQL primary and streaming replica (run as the postgres user: run it as
# root), the primary killed and the replica promoted under load. Not in CI: it measures.
failover:
	cd e2e && go test -tags failover -count=1 -timeout 20m -v ./failover/ $(if $(LAG),-args -lag $(LAG))

# The chaos suite (e2e/chaos, build tag chaos; docs/reliability.md): faults injected into the
# built hopper binary and remote workers. chaos-short is what CI runs (under 5 minutes); chaos
# runs every scenario's full variant. Its scenarios wait on processes more than they compute,
# so more of them run at once than there are cores.
chaos:
	cd e2e && go test -tags chaos -count=1 -timeout 60m -parallel 4 -v ./chaos/ -args -full

chaos-short:
	cd e2e && go test -tags chaos -count=1 -timeout 10m -parallel 8 -v ./chaos/

# Fuzzing (docs/development.md#fuzzing): every target for FUZZTIME each; FUZZ=regexp picks
# targets by name (make fuzz FUZZ=FuzzRPC FUZZTIME=10m). CI runs fuzz-ci.
FUZZTIME ?= 60s
FUZZ ?=

fuzz:
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz $(FUZZ)

fuzz-ci:
	FUZZTIME=3s ./.ci/fuzz

run:
	go run ./cmd/hopper serve

# make build stamps the version, the commit and its time into the binary (internal/buildinfo;
# `hopper version`): the tag from git describe (none without a v* tag: then the Go toolchain's
# pseudo-version, or "(devel)"), and "modified" when the tree has uncommitted changes. Releases
# stamp the same variables (.goreleaser.yaml). VERSION=v1.2.3 make build overrides the tag.
BUILDINFO := github.com/hopperjobs/hopper/internal/buildinfo
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_TIME ?= $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null)
MODIFIED ?= $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true)
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) \
	-X $(BUILDINFO).commitTime=$(COMMIT_TIME) -X $(BUILDINFO).modified=$(MODIFIED)

build:
	go build -ldflags "$(LDFLAGS)" -o hopper ./cmd/hopper

bench:
	go run ./cmd/hopper bench --jobs 20000

# The dashboard's screenshots in docs/dashboard/ (docs/dashboard.md), taken by headless
# chromium (Debian: apt-get install chromium) from a store with an hour of history.
screenshots:
	cd e2e && go test -count=1 -run TestScreenshots ./dashboard/ -args -screenshots=$(CURDIR)/docs/dashboard

# The outputs the docs show under a "<!-- make docs-cli runs: … -->" comment (docs/cli.md,
# docs/dead-letters.md) and the schema versions they quote, rewritten from the hopper command
# itself. make test fails when they are stale (TestDocsShowTheRealOutput in internal/cli).
docs-cli:
	go test -count=1 -run '^TestDocsShowTheRealOutput$$' ./internal/cli/ -update-docs

# Code generation: the protobuf API in api/ becomes the committed code in gen/.
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
CONNECT_VERSION := v2.0.2
TOOLS := $(CURDIR)/.tools

tools:
	GOBIN=$(TOOLS) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) go install connectrpc.com/connect/v2/cmd/protoc-gen-connect-go@$(CONNECT_VERSION)

# REFLECTION is api/'s files with their comments (source info, which the generated Go code
# leaves out), embedded by the server for gRPC reflection (internal/server/reflection.go).
REFLECTION := internal/server/reflection.binpb

gen: tools
	PATH="$(TOOLS):$$PATH" buf lint
	rm -rf gen && PATH="$(TOOLS):$$PATH" buf generate
	PATH="$(TOOLS):$$PATH" buf build --as-file-descriptor-set --exclude-imports -o $(REFLECTION)

# gen-check fails when gen/ or $(REFLECTION) is not what api/ generates.
gen-check: gen
	@git diff --exit-code --stat -- gen $(REFLECTION) || (echo "gen/ is stale: run make gen and commit it"; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard gen $(REFLECTION))" || (echo "gen/ has uncommitted files: run make gen and commit them"; exit 1)

# The TypeScript SDK (clients/typescript, docs/workers-other-languages.md): its dependencies
# come from its package-lock.json (npm ci, which also builds it), its tests run against a
# hopper built from this tree, and its generated code in src/gen/ must be what api/ generates.
TS := clients/typescript

$(TS)/node_modules/.package-lock.json: $(TS)/package-lock.json
	cd $(TS) && npm ci --no-audit --no-fund

ts-test: $(TS)/node_modules/.package-lock.json
	cd $(TS) && npm test

ts-bench: $(TS)/node_modules/.package-lock.json
	cd $(TS) && npm run bench

# The SDK conformance suite (e2e/sdk, build tag sdk; docs/development.md): every worker SDK's
# driver runs the same cases against hopper serve, and each attempt must end as it ends in the
# in-process Go engine. The TypeScript driver is compiled with the SDK's tests. The six
# frozen-worker cases, mostly waiting out leases, run side by side (-parallel 6).
sdk-conformance: $(TS)/node_modules/.package-lock.json
	cd $(TS) && npm run build && npx tsc -p tsconfig.json
	cd e2e && go test -tags sdk -count=1 -parallel 6 -timeout 15m -v ./sdk/

ts-gen: $(TS)/node_modules/.package-lock.json
	cd $(TS) && npm run gen

# ts-gen-check fails when clients/typescript/src/gen is not what api/ generates.
ts-gen-check: ts-gen
	@git diff --exit-code --stat -- $(TS)/src/gen || (echo "$(TS)/src/gen is stale: run make ts-gen and commit it"; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard $(TS)/src/gen)" || (echo "$(TS)/src/gen has uncommitted files: run make ts-gen and commit them"; exit 1)

# The Python SDK (clients/python, docs/workers-other-languages.md): it needs grpcio and protobuf
# (Debian: python3-grpcio python3-protobuf), protoc (protobuf-compiler) and mypy; its tests run
# against a hopper built from this tree (or the one HOPPER_BIN names), and its generated code in
# src/hopper/gen must be what api/ generates. PY is the first python3 that imports grpc.
PYC := clients/python
PY ?= $(shell for p in python3 /usr/bin/python3; do $$p -c 'import grpc, google.protobuf' 2>/dev/null && { echo $$p; break; }; done)

py-gen:
	$(PYC)/gen.sh

# py-gen-check fails when clients/python/src/hopper/gen is not what api/ generates.
py-gen-check: py-gen
	@git diff --exit-code --stat -- $(PYC)/src/hopper/gen || (echo "$(PYC)/src/hopper/gen is stale: run make py-gen and commit it"; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard $(PYC)/src/hopper/gen)" || (echo "$(PYC)/src/hopper/gen has uncommitted files: run make py-gen and commit them"; exit 1)

py-test:
	@test -n "$(PY)" || (echo "no python3 with grpcio and protobuf: apt-get install python3-grpcio python3-protobuf"; exit 1)
	cd $(PYC) && MYPYPATH=src $(PY) -m mypy --strict src/hopper
	cd $(PYC) && PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 $(PY) -m unittest discover -s tests -t . -v

py-bench:
	cd $(PYC) && PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 $(PY) -m tests.bench $(ARGS)
