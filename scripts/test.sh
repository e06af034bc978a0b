#!/usr/bin/env bash
# The project's test command (the README's second command; .ci/run calls it).
# Installs what is missing; checks formatting, clippy (warnings are errors),
# that the bridge carries no daemon, gRPC server or wire types, and that
# each crate's modules import each other without cycles; builds the MPICH
# flavour of the examples for the cross-implementation tests, then runs the
# whole workspace's tests with the Open MPI flavour.
set -euo pipefail
. "$(dirname "$0")/env.sh"
# phase TEXT: a progress line with the time since the start, on stderr.
started=$SECONDS
phase() { printf '== [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*" >&2; }
phase "install: system packages"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"
# The registry's MPIs (Open MPI 5, MPICH 5, Intel MPI: ~450 MB of wheels on
# a fresh machine) download beside the house rules and the Debian builds,
# which need only Debian's MPIs; their flavours wait for it below.
mpis_log=$(mktemp)
mpis=
trap '[ -z "$mpis" ] || kill "$mpis" 2>/dev/null; rm -f "$mpis_log"' EXIT
bash scripts/install-mpis.sh >"$mpis_log" 2>&1 &
mpis=$!
# House rules first: they are cheap and say what is wrong before a long run.
phase "house rules: fmt, dependencies, module cycles, clippy"
cargo fmt --all --check
bash scripts/check-deps.sh
bash scripts/check-module-cycles.sh >/dev/null
build_with openmpi clippy --release --workspace --all-targets -- -D warnings
# The Open MPI flavour of the examples, the vmd and libisthmus.so; then
# MPICH's, started from a copy of it (every dependency that does not see
# MPI is built once). (--bins applies to every -p of its command: the
# library gets its own.)
phase "build: Open MPI flavour"
build_with openmpi build --release -p isthmus-examples -p isthmus-vmd --bins
build_with openmpi build --release -p isthmus-capi
export ISTHMUS_OPENMPI_BIN_DIR="$ISTHMUS_TARGET_OPENMPI/release"
phase "build: MPICH flavour"
prime_target mpich "$ISTHMUS_TARGET_OPENMPI"
build_with mpich build --release -p isthmus-examples --bins
build_with mpich build --release -p isthmus-capi
export ISTHMUS_MPICH_BIN_DIR="$ISTHMUS_TARGET_MPICH/release"
# Every other implementation (scripts/mpi/: Open MPI 5, MPICH 5, Intel MPI
# from the Python registry): libisthmus for each, for the matrix's smoke set
# (bridge/capi/tests/matrix.rs, ISTHMUS_MATRIX).
phase "install: the registry's MPIs (started beside the builds)"
mpis_status=0
wait "$mpis" || mpis_status=$?
mpis=
cat "$mpis_log" >&2
if [ "$mpis_status" -ne 0 ]; then
  phase "install-mpis.sh failed (exit $mpis_status)"
  exit 1
fi
matrix="openmpi mpich"
for name in $(impls_installed); do
  case "$name" in openmpi | mpich) continue ;; esac
  impl_load "$name"
  prime_target "$name"
  echo "== libisthmus for $name ($impl_mpicc)"
  build_with "$name" build --release -q -p isthmus-capi
  export "ISTHMUS_$(echo "$name" | tr '[:lower:]' '[:upper:]')_BIN_DIR=$ISTHMUS_ROOT/target/$name/release"
  matrix="$matrix $name"
done
# The standard ABI's programs (the abi flavour, MPICH 5's mpicc_abi) run
# on Intel MPI's libmpi_abi.so too: the same binaries, one more column.
case " $matrix " in *" abi "*) case " $matrix " in *" impi "*) matrix="$matrix abi-impi" ;; esac ;; esac
export ISTHMUS_MATRIX="$matrix"
# Built as the two streams select them: cargo unifies dependencies'
# features over the packages selected, so `--workspace` alone would build
# a third set neither stream runs.
phase "tests: build"
build_with openmpi test --release --no-run -p isthmus-capi
build_with openmpi test --release --no-run --workspace --exclude isthmus-capi
# libisthmus's tests (MPI jobs, two or four at a time; ~9 min) and the
# rest of the workspace's (the vmd, taskers, groups, the bridge in Rust;
# ~4 min) run side by side: cargo runs one test binary at a time, and the
# rest would otherwise wait behind the matrix. Each stream's lines are
# prefixed with its name; the step fails if either does.
phase "tests: run (capi beside rest, then world)"
tests() { # NAME CARGO-ARGS… [-- TEST-ARGS…]: one stream, its lines prefixed with NAME
  local name=$1
  shift
  case " $* " in *" -- "*) ;; *) set -- "$@" -- ;; esac
  build_with openmpi test --release --no-fail-fast "$@" --test-threads=2 2>&1 |
    sed -u "s/^/[$name] /"
  return "${PIPESTATUS[0]}"
}
tests capi -p isthmus-capi &
capi=$!
rest=0
tests rest --workspace --exclude isthmus-capi || rest=$?
# Issue 19's conformance run: MPICH's whole list on a world of two parts,
# both orders (bridge/capi/tests/world.rs MPICH_ON_WORLD; 8.5 min alone,
# ~10 beside libisthmus's tests, since each test links MPICH's harness
# compiled once), after the rest's ~4 min.
# --nocapture: a line per test with its time, to keep the list within CI's.
tests world -p isthmus-capi --test world -- --ignored mpich_tests_on_a_world_all --nocapture || rest=$?
capi_status=0
wait "$capi" || capi_status=$?
# The tests whose time follows the load more than Isthmus (MPICH's
# coll/nonblocking3: 9-16 s a run alone, over 300 s once beside the capi
# stream; world.rs MPICH_ON_A_QUIET_WORLD), with nothing else running.
phase "tests: the quiet world (MPICH's load-sensitive tests, alone)"
tests quiet -p isthmus-capi --test world -- --ignored mpich_tests_on_a_quiet_world --nocapture || rest=$?
if [ "$rest" -ne 0 ] || [ "$capi_status" -ne 0 ]; then
  phase "tests failed (capi: exit $capi_status, rest, world and quiet: exit $rest)"
  exit 1
fi
phase "done"
