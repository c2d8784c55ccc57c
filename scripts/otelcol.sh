#!/usr/bin/env bash
# Builds (once) and caches the real OpenTelemetry Collector the tracing tests run: a minimal
# distribution of the core components v0.165.0 (OTLP receiver, batch processor, OTLP/HTTP and
# debug exporters), test/support/otelcol/main.go, written as the Collector's builder writes one,
# its modules from the Go module proxy (pinned by its go.sum), at
# ${SVC_OTELCOL_DIR:-/var/cache/svc/otelcol-VERSION}. (`go install …/cmd/otelcorecol` does not
# work: that command is no module of its own.) A few minutes on two cores the first time, the
# modules and the build cached after; quick when the binary of this source is there. Prints the
# binary's path.
set -euo pipefail

VERSION=0.165.0
SRC="$(cd "$(dirname "$0")/../test/support/otelcol" && pwd)"
DIR=${SVC_OTELCOL_DIR:-/var/cache/svc/otelcol-v$VERSION}
STAMP=$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-16)
BIN="$DIR/otelcol-svc-test-$STAMP"

if [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "otelcol: go not found (the Collector is built from the Go module proxy)" >&2; exit 1; }
echo "otelcol: building the OpenTelemetry Collector $VERSION into $DIR (once, a few minutes)" >&2
mkdir -p "$DIR"
(cd "$SRC" && go build -trimpath -buildvcs=false -mod=readonly -o "$BIN.tmp" .) >&2
mv "$BIN.tmp" "$BIN"
"$BIN" --version >&2 || { echo "otelcol: $BIN does not run after the build" >&2; exit 1; }
echo "$BIN"
