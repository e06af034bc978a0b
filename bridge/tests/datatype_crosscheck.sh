#!/usr/bin/env bash
# Cross-implementation check of the datatype layer: build the
# datatype_crosscheck example against Open MPI and against MPICH (separate
# target dirs: mpi-sys does not rebuild when MPICC changes), let each write
# encoded messages, and let each decode the other's (and its own).
# Exits non-zero on any mismatch.  Usage: bridge/tests/datatype_crosscheck.sh [--bench]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PROFILE_FLAG=--release; PROFILE_DIR=release
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT="$(mktemp -d /tmp/isthmus-dtxc.XXXXXX)"
trap 'rm -rf "$OUT"' EXIT

build() { # impl
    MPICC="mpicc.$1" CARGO_TARGET_DIR="$ROOT/target-$1" \
        cargo build -q -p isthmus-bridge --example datatype_crosscheck $PROFILE_FLAG
}
bin() { echo "$ROOT/target-$1/$PROFILE_DIR/examples/datatype_crosscheck"; }

echo "== building (Open MPI, MPICH)"
build openmpi
build mpich
ldd "$(bin openmpi)" | grep -q 'libmpi\.so\.40' || { echo "openmpi binary does not link libmpi.so.40"; exit 1; }
ldd "$(bin mpich)" | grep -q 'libmpich\.so\.12' || { echo "mpich binary does not link libmpich.so.12"; exit 1; }
ldd "$(bin openmpi)" | grep -q 'libmpich' && { echo "openmpi binary links MPICH too"; exit 1; }
ldd "$(bin mpich)" | grep -q 'libmpi\.so\.40' && { echo "mpich binary links Open MPI too"; exit 1; }

run() { # impl args...
    local impl=$1; shift
    if [ "$impl" = openmpi ]; then
        mpirun.openmpi --oversubscribe -n 1 "$(bin openmpi)" "$@"
    else
        mpiexec.mpich -n 1 "$(bin mpich)" "$@"
    fi
}

echo "== writing"
run openmpi write "$OUT/openmpi"
run mpich write "$OUT/mpich"

fail=0
for reader in openmpi mpich; do
    for writer in openmpi mpich; do
        echo "== $reader reads $writer"
        run "$reader" read "$OUT/$writer" || fail=1
    done
done

echo "== byte identity of the .msg payloads written by the two implementations"
for f in "$OUT"/openmpi/*.msg; do
    n=$(basename "$f")
    # header (56 bytes) + payload; the trailer (library version) differs by design
    len=$((56 + $(od -An -t u8 -j 48 -N 8 "$f" | tr -d ' ')))
    if cmp -s -n "$len" "$f" "$OUT/mpich/$n"; then
        echo "  identical  $n ($len bytes incl. header)"
    else
        echo "  DIFFERENT  $n"; fail=1
    fi
done
for f in "$OUT"/openmpi/*.mpiext32; do
    n=$(basename "$f")
    if [ -f "$OUT/mpich/$n" ]; then
        if cmp -s "$f" "$OUT/mpich/$n"; then echo "  identical  MPI_Pack_external $n (Open MPI vs MPICH)"; else echo "  DIFFERENT  MPI_Pack_external $n"; fail=1; fi
    else
        echo "  (MPICH has no MPI_Pack_external output for $n)"
    fi
done

if [ "${1:-}" = "--bench" ]; then
    echo "== bench"
    run openmpi bench
    run mpich bench
fi

if [ $fail -ne 0 ]; then echo "CROSSCHECK FAILED"; exit 1; fi
echo "CROSSCHECK PASSED"
