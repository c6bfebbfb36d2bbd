# The README's commands. `make test` is what CI runs.
.PHONY: test run build bench tools gen gen-check fuzz fuzz-ci

test:
	go test -race -count=1 -timeout 15m -p 2 ./...

# Fuzzing (docs/development.md#fuzzing): every target for FUZZTIME each; FUZZ=regexp picks
# targets by name (make fuzz FUZZ=FuzzRPC FUZZTIME=10m). CI runs fuzz-ci.
FUZZTIME ?= 60s
FUZZ ?=

fuzz:
	FUZZTIME=$(FUZZTIME) ./.ci/fuzz $(FUZZ)

fuzz-ci:
	FUZZTIME=5s ./.ci/fuzz

run:
	go run ./cmd/hopper serve

build:
	go build -o hopper ./cmd/hopper

bench:
	go run ./cmd/hopper bench --jobs 20000

# Code generation: the protobuf API in api/ becomes the committed code in gen/.
BUF_VERSION := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
CONNECT_VERSION := v2.0.2
TOOLS := $(CURDIR)/.tools

tools:
	GOBIN=$(TOOLS) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) go install connectrpc.com/connect/v2/cmd/protoc-gen-connect-go@$(CONNECT_VERSION)

gen: tools
	PATH="$(TOOLS):$$PATH" buf lint
	rm -rf gen && PATH="$(TOOLS):$$PATH" buf generate

# gen-check fails when gen/ is not what api/ generates.
gen-check: gen
	@git diff --exit-code --stat -- gen || (echo "gen/ is stale: run make gen and commit it"; exit 1)
	@test -z "$$(git ls-files --others --exclude-standard gen)" || (echo "gen/ has uncommitted files: run make gen and commit them"; exit 1)
