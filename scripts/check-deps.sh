#!/usr/bin/env bash
# Checks that the bridge (linked into every MPI program) carries no daemon
# and no gRPC server: nothing of isthmus-vmd, tonic's server or router,
# hyper's server, axum, nor the daemon's own dependencies (clap, toml, rand)
# may appear in its normal dependency tree; and that it speaks the client's
# domain types only: the protocol crate (isthmus-proto, the wire types) is no
# direct dependency of it, nor of libisthmus. Exits non-zero if one is.
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
for crate in isthmus-bridge isthmus-capi; do
  direct="$(cargo tree -p "$crate" -e normal --depth 1 --prefix none | tail -n +2)"
  if grep -qE '^isthmus-proto v' <<<"$direct"; then
    echo "check-deps: $crate must not depend on isthmus-proto (the wire types stay behind isthmus-client)" >&2
    exit 1
  fi
done
echo "check-deps: isthmus-bridge carries no daemon and no gRPC server, and no wire types"
