# The Hopper server's container image: `hopper serve` on 0.0.0.0:7070, its SQLite database in
# the /data volume (or PostgreSQL with HOPPER_DATABASE=postgres://…), as user 65532, FROM
# scratch: the static binary, CA certificates for TLS to PostgreSQL and an OTLP collector, and
# nothing else (no shell). deploy/README.md and docs/deploy.md say how to run it.
#
#   docker build -t hopper .
#   podman build --format docker -t hopper .     # docker format keeps the HEALTHCHECK
#
# Stamp the version (`hopper version`, /readyz) with --build-arg VERSION=v0.1.0
# --build-arg COMMIT=$(git rev-parse HEAD) --build-arg COMMIT_TIME=$(git log -1 --format=%cI).
#
# The stage `build` compiles the binary in the Go image. A builder that cannot pull that image
# (CI, an air-gapped machine) gives the stage as a directory instead, holding the same three
# paths: out/hopper (CGO_ENABLED=0 go build ./cmd/hopper), out/data/ (empty) and
# etc/ssl/certs/ca-certificates.crt; a build context named like a stage replaces it:
#
#   buildah bud --format docker --build-context build=DIR -t hopper .     (.ci/image does this)

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM docker.io/library/golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=""
ARG COMMIT=""
ARG COMMIT_TIME=""
# No cgo: the SQLite driver (modernc.org/sqlite) is pure Go, so the binary is static and runs
# FROM scratch. The version is stamped as the Makefile and the release configuration do.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -buildvcs=false \
      -ldflags "-s -w \
        -X github.com/hopperjobs/hopper/internal/buildinfo.version=${VERSION} \
        -X github.com/hopperjobs/hopper/internal/buildinfo.commit=${COMMIT} \
        -X github.com/hopperjobs/hopper/internal/buildinfo.commitTime=${COMMIT_TIME}" \
      -o /out/hopper ./cmd/hopper \
 && mkdir /out/data

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/hopper /usr/local/bin/hopper
COPY --from=build --chown=65532:65532 /out/data /data
# A numeric user needs no /etc/passwd; 65532 is the conventional "nonroot" of distroless.
USER 65532:65532
WORKDIR /data
# Every flag of `hopper serve` has a HOPPER_ variable (docs/server.md). Listening on every
# interface is refused until an API key exists: give one with HOPPER_BOOTSTRAP_KEY_FILE, or
# create one first with `hopper keys create` on the same database.
ENV HOPPER_ADDR=0.0.0.0:7070 \
    HOPPER_DATABASE=/data/hopper.db \
    HOPPER_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 7070
# hopper healthcheck reads HOPPER_ADDR (and HOPPER_TLS_CERT), as serve does.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/hopper", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/hopper"]
CMD ["serve"]
