#!/bin/sh
# gen.sh writes src/hopper/gen from api/hopper/v1/*.proto: protobuf messages (*_pb2.py) and
# their type stubs (*_pb2.pyi), with protoc (Debian's protobuf-compiler, 3.21; `make py-gen`).
# protoc writes `from hopper.v1 import options_pb2`, the proto's package path; one sed makes
# it `from hopper.gen import options_pb2`, the path inside this package. The services are
# called by name from the descriptors (hopper/_rpc.py), so no grpc plugin is needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$here/src/hopper/gen"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
protoc -I "$root/api" --python_out="$tmp" --pyi_out="$tmp" "$root/api/hopper/v1/hopper.proto" "$root/api/hopper/v1/options.proto"
rm -f "$out"/*_pb2.py "$out"/*_pb2.pyi
for f in "$tmp"/hopper/v1/*_pb2.py "$tmp"/hopper/v1/*_pb2.pyi; do
  sed -e 's/^from hopper\.v1 import /from hopper.gen import /' "$f" > "$out/$(basename "$f")"
done
