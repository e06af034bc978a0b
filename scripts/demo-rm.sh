#!/usr/bin/env bash
# Resource-manager demo: a vmd and its taskers (Open MPI, MPICH) are started
# for you; a manager built with Open MPI asks the resource manager to spawn a
# worker job built with MPICH; both register, form an intercommunicator
# through the bridge, the manager farms out work, collects the results, sees
# the workers' exit notifications and exits. Then the same farm in plain C:
# a manager built with Open MPI starts MPICH workers with MPI_Comm_spawn
# (examples/farm/), farms out the work and reacts to the notifications of
# their exits (isthmus.h's Isthmus_Subscribe / Isthmus_Event_next).
set -euo pipefail
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"

echo "== building (Open MPI flavour, then MPICH flavour)"
build_with openmpi build --release -q -p isthmus-vmd -p isthmus-taskers -p isthmus-examples --bins
build_with mpich build --release -q -p isthmus-examples --bins
build_with openmpi build --release -q -p isthmus-capi
build_with mpich build --release -q -p isthmus-capi
OMPI_BIN="$ISTHMUS_TARGET_OPENMPI/release"
MPICH_BIN="$ISTHMUS_TARGET_MPICH/release"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/hosts.toml" <<TOML
[[host]]
name = "demo"
slots = 8
offers = ["openmpi", "mpich"]
TOML
echo "== starting vmd (host 'demo', 8 slots) on its Unix socket"
start_vmd "$work" --host-name demo --hostfile "$work/hosts.toml"
pids+=("$VMD_PID")

echo "== starting taskers for openmpi and mpich"
for impl in openmpi mpich; do
  RUST_LOG=warn "$OMPI_BIN/tasker" --impl "$impl" --vmd "$ISTHMUS_VMD" &
  pids+=($!)
done
# Ready when both taskers are registered: "mpich,openmpi" then stands in the
# TASKERS column as well as in OFFERS.
ready=0
for _ in $(seq 400); do
  if [ "$("$OMPI_BIN/isthmus" conf | grep -o 'mpich,openmpi' | wc -l)" -ge 2 ]; then ready=1; break; fi
  sleep 0.05
done
[ "$ready" = 1 ] || { echo "taskers did not register within 20 s" >&2; exit 1; }
"$OMPI_BIN/isthmus" conf

echo "== spawning the manager (Open MPI, 1 rank) through the resource manager; it spawns the MPICH workers"
timeout 180 "$OMPI_BIN/isthmus" spawn --wait --impl openmpi -n 1 \
  "$OMPI_BIN/farm-manager" --worker "$MPICH_BIN/farm-worker" --workers 3 --items 24
echo "== the C farm: an Open MPI manager starts MPICH workers with plain MPI_Comm_spawn"
mpicc.openmpi -O2 -Wall -o "$work/farm-manager-c" examples/farm/farm-manager.c \
  -I bridge/capi/include -L "$OMPI_BIN" -listhmus -Wl,-rpath,"$OMPI_BIN" -Wl,--disable-new-dtags
mpicc.mpich -O2 -Wall -o "$work/farm-worker-c" examples/farm/farm-worker.c
# The tasker finds each implementation's libisthmus beside its own build
# (target/<impl>/release) and preloads it into the spawned workers.
timeout 120 "$OMPI_BIN/isthmus" spawn --wait --impl openmpi -n 1 \
  "$work/farm-manager-c" "$work/farm-worker-c" 3 24
echo "== jobs of the virtual machine:"
"$OMPI_BIN/isthmus" ps --all
"$OMPI_BIN/isthmus" halt >/dev/null
echo "== demo done"
