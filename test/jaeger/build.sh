#!/usr/bin/env bash
# Builds the Jaeger the trace tests send their spans to
# (internal/telemetry/jaegertest), from the Go module proxy, into DIR
# (default /var/cache/paddock-jaeger). Cached: a second run does nothing.
set -euo pipefail
version=1.75.0
dir=${1:-/var/cache/paddock-jaeger}
mkdir -p "$dir"
if [ -x "$dir/jaeger-$version" ]; then
  exit 0
fi
src=$(go mod download -json "github.com/jaegertracing/jaeger@v$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
(cd "$src" && GOFLAGS=-mod=mod go build -trimpath -o "$dir/jaeger-$version.new" ./cmd/jaeger)
mv "$dir/jaeger-$version.new" "$dir/jaeger-$version"
