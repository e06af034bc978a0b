#!/usr/bin/env bash
# Checks that the bridge (linked into every MPI program) carries no daemon
# and no gRPC server: nothing of isthmus-vmd, tonic's server or router,
# hyper's server, axum, nor the daemon's own dependencies (clap, toml, rand)
# may appear in its normal dependency tree. Exits non-zero if one does.
set -euo pipefail
cd "$(dirname "$0")/.."
tree="$(cargo tree -p isthmus-bridge -e normal -e features --prefix none)"
forbidden='^(isthmus-vmd|axum|axum-core|clap|toml|rand|tracing-subscriber) v|^(tonic) feature "(server|router|transport)"|^(hyper) feature "server"|^(hyper-util) feature "(server|server-auto|service)"|^isthmus-proto feature "server"'
found="$(grep -E "$forbidden" <<<"$tree" | sort -u || true)"
if [ -n "$found" ]; then
  echo "check-deps: isthmus-bridge must not depend on the daemon or a gRPC server, but its tree has:" >&2
  echo "$found" >&2
  exit 1
fi
echo "check-deps: isthmus-bridge carries no daemon and no gRPC server"
