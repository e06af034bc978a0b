#!/usr/bin/env bash
# Coupling demo (issue 10, item 5): an "ocean" in Fortran built with
# Open MPI (examples/coupling/ocean.f90) and an "atmosphere" in C built
# with MPICH (examples/coupling/atmosphere.c), started separately by their
# own launchers, 2 ranks each. After three Isthmus calls they exchange
# boundary fields every step with plain MPI (MPI_Isend/MPI_Irecv,
# MPI_Waitall) and print what they received.
set -euo pipefail
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"

echo "== building libisthmus (Open MPI, then MPICH) and the vmd"
build_with openmpi build --release -q -p isthmus-vmd --bins
build_with openmpi build --release -q -p isthmus-capi
build_with mpich build --release -q -p isthmus-capi
OMPI_LIB="$ISTHMUS_TARGET_OPENMPI/release"
MPICH_LIB="$ISTHMUS_TARGET_MPICH/release"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== compiling the ocean with mpifort.openmpi and the atmosphere with mpicc.mpich"
# RPATH, not RUNPATH (--disable-new-dtags): an LD_LIBRARY_PATH naming the
# other flavour's target dir (as cargo's does) must not win over ours.
mpifort.openmpi -O2 -o "$work/ocean" examples/coupling/ocean.f90 \
  -L"$OMPI_LIB" -listhmus -Wl,-rpath,"$OMPI_LIB" -Wl,--disable-new-dtags
mpicc.mpich -O2 -Wall -o "$work/atmosphere" examples/coupling/atmosphere.c \
  -I bridge/capi/include -L"$MPICH_LIB" -listhmus -Wl,-rpath,"$MPICH_LIB" -Wl,--disable-new-dtags -lm

echo "== starting vmd on its Unix socket"
start_vmd "$work"
pids+=("$VMD_PID")

steps="${COUPLING_STEPS:-3}"
echo "== launching the atmosphere (C, MPICH, 2 ranks) with mpiexec.mpich"
timeout 180 mpiexec.mpich -n 2 -genv ISTHMUS_VMD "$ISTHMUS_VMD" "$work/atmosphere" "$steps" &
atmosphere_pid=$!
pids+=("$atmosphere_pid")
sleep 1
echo "== launching the ocean (Fortran, Open MPI, 2 ranks) with mpirun.openmpi, separately"
timeout 180 mpirun.openmpi --oversubscribe -n 2 -x ISTHMUS_VMD "$work/ocean" "$steps"
wait "$atmosphere_pid"
"$ISTHMUS_TARGET_OPENMPI/release/isthmus" --vmd "$ISTHMUS_VMD" halt >/dev/null 2>&1 || true
echo "== coupling done"
