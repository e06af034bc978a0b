#!/usr/bin/env bash
# The main demo (the README's first command): an embedded vmd, then an
# Open MPI job of 2 ranks and an MPICH job of 3 ranks started separately, by
# their own launchers; they find each other by name, form an
# intercommunicator, and pass a token round a ring that crosses both jobs.
# Part 2 (scripts/demo-coupling.sh): a Fortran "ocean" built with Open MPI
# and a C "atmosphere" built with MPICH, started separately, exchange
# boundary fields every step with plain MPI calls over libisthmus.
# Part 3 (scripts/demo-rm.sh): a vmd with its taskers; an Open MPI manager
# asks the resource manager to spawn MPICH workers, farms out work over the
# bridge and sees the workers' exit notifications; then the same farm in
# plain C, the workers started with MPI_Comm_spawn (examples/farm/).
set -euo pipefail
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"

echo "== building (Open MPI flavour, then MPICH flavour)"
build_with openmpi build --release -q -p isthmus-vmd -p isthmus-examples --bins
build_with mpich build --release -q -p isthmus-examples --bins
OMPI_BIN="$ISTHMUS_TARGET_OPENMPI/release"
MPICH_BIN="$ISTHMUS_TARGET_MPICH/release"
echo "ring (Open MPI flavour) links: $(ldd "$OMPI_BIN/ring" | grep -o 'libmpi[a-z]*\.so[.0-9]*' | sort -u | tr '\n' ' ')"
echo "ring (MPICH flavour)    links: $(ldd "$MPICH_BIN/ring" | grep -o 'libmpi[a-z]*\.so[.0-9]*' | sort -u | tr '\n' ' ')"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== starting vmd on its Unix socket"
start_vmd "$work"
pids+=("$VMD_PID")

echo "== launching the MPICH job (3 ranks) with mpiexec.mpich"
timeout 180 mpiexec.mpich -n 3 -genv ISTHMUS_VMD "$ISTHMUS_VMD" \
  "$MPICH_BIN/ring" --group mpich-ring --peer ompi-ring --laps 3 &
mpich_pid=$!
pids+=($mpich_pid)
sleep 1
echo "== launching the Open MPI job (2 ranks) with mpirun.openmpi, separately"
timeout 180 mpirun.openmpi --oversubscribe -n 2 -x ISTHMUS_VMD \
  "$OMPI_BIN/ring" --group ompi-ring --peer mpich-ring --first --laps 3
wait "$mpich_pid"
echo "== groups left in the virtual machine (should be none):"
"$OMPI_BIN/isthmus" --vmd "$ISTHMUS_VMD" groups
"$OMPI_BIN/isthmus" --vmd "$ISTHMUS_VMD" halt >/dev/null
echo "== part 1 done"
echo
echo "== part 2: a Fortran ocean (Open MPI) and a C atmosphere (MPICH), plain MPI calls over libisthmus"
bash "$ISTHMUS_ROOT/scripts/demo-coupling.sh"
echo
echo "== part 3: the same kind of coupling, started through the resource manager"
bash "$ISTHMUS_ROOT/scripts/demo-rm.sh"
