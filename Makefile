# The README's commands. `make test` is what CI runs.
.PHONY: test run build bench

test:
	go test -race -count=1 -timeout 15m -p 2 ./...

run:
	go run ./examples/quickstart

build:
	go build -o hopper ./cmd/hopper

bench:
	go run ./cmd/hopper bench --jobs 20000
