#!/usr/bin/env bash
# Bridge benchmark: builds both flavours and prints the table of
# examples/src/bin/bridge-bench.rs (bridge vs Open MPI connect/accept vs sockets).
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"
build_with mpich build --release -q -p isthmus-examples --bins
build_with openmpi build --release -q -p isthmus-examples --bins
ISTHMUS_MPICH_BIN_DIR="$ISTHMUS_TARGET_MPICH/release" exec "$ISTHMUS_TARGET_OPENMPI/release/bridge-bench" "$@"
