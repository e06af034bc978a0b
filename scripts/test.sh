#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
# Installs what is missing, builds the MPICH flavour of the examples for the
# cross-implementation tests, then runs the whole workspace's tests with the
# Open MPI flavour.
set -euo pipefail
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"
build_with mpich build --release -p isthmus-examples --bins
export ISTHMUS_MPICH_BIN_DIR="$ISTHMUS_TARGET_MPICH/release"
build_with openmpi build --release -p isthmus-examples --bins
export ISTHMUS_OPENMPI_BIN_DIR="$ISTHMUS_TARGET_OPENMPI/release"
build_with openmpi test --release --workspace -- --test-threads=2
