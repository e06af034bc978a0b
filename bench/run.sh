#!/usr/bin/env bash
# The one entry point to Isthmus's benchmarks: runs each named one (all by
# default) in turn and prints its table; bench/README.md says what each
# measures and where its program lives.
#   usage: bench/run.sh [--list] [NAME...]
#   NAMEs: groups rm bridge capi coll world world-hosts connect spawn hosts-data pingpong
# `world-hosts` and `hosts-data` need root (network namespaces) and are skipped without it
# unless named. Arguments for one benchmark go to its own driver:
# bench/<name>.sh or the program itself.
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
cd "$ISTHMUS_ROOT"

ALL=(groups rm bridge capi coll world world-hosts connect spawn hosts-data pingpong)
describe() {
  case "$1" in
    groups) echo "group service vs PVM 3.4's group server (vmd/src/bin/groups-bench.rs)" ;;
    rm) echo "spawn-to-exit through the resource manager vs direct launches (vmd/src/bin/rm-bench.rs)" ;;
    bridge) echo "Open MPI<->MPICH through the bridge vs connect/accept and sockets (bench/bridge.sh)" ;;
    capi) echo "the C library's ping-pong vs the Rust API and native traffic (bench/capi.sh)" ;;
    coll) echo "collectives on an Isthmus intercommunicator and its merge vs Open MPI's own (bench/coll.sh)" ;;
    world) echo "one MPI_COMM_WORLD of Open MPI + MPICH ranks vs one Open MPI job (bench/world.sh)" ;;
    world-hosts) echo "the same across two network namespaces, root only (bench/world.sh --hosts)" ;;
    connect) echo "time to connect through Isthmus vs ompi-server; mpi4py ping-pong (bench/connect.sh)" ;;
    spawn) echo "spawn-to-first-message through Isthmus vs Open MPI's own MPI_Comm_spawn (bench/spawn.sh)" ;;
    hosts-data) echo "the bridge between two network namespaces vs raw TCP, root only (bench/hosts-data.sh)" ;;
    pingpong) echo "the bridge's engine alone, no MPI (bridge/examples/pingpong_bench.rs)" ;;
    *) return 1 ;;
  esac
}

run() {
  case "$1" in
    groups | rm)
      build_with openmpi build --release -q -p isthmus-vmd --bins
      "$ISTHMUS_TARGET_OPENMPI/release/$1-bench" ;;
    bridge | capi | coll | world | connect | spawn | hosts-data) bash "bench/$1.sh" ;;
    world-hosts) bash bench/world.sh --hosts ;;
    pingpong) build_with openmpi run --release -q -p isthmus-bridge --example pingpong_bench ;;
  esac
}

if [ "${1:-}" = "--list" ]; then
  for n in "${ALL[@]}"; do printf '%-11s %s\n' "$n" "$(describe "$n")"; done
  exit 0
fi
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for n in "${ALL[@]}"; do
    if { [ "$n" = hosts-data ] || [ "$n" = world-hosts ]; } && [ "$(id -u)" -ne 0 ]; then
      echo "bench: skipping $n (needs root for network namespaces)" >&2
      continue
    fi
    names+=("$n")
  done
fi
for n in "${names[@]}"; do
  describe "$n" >/dev/null || { echo "bench: no benchmark named $n (bench/run.sh --list)" >&2; exit 2; }
done
failed=()
for n in "${names[@]}"; do
  echo "== $n: $(describe "$n")"
  run "$n" || failed+=("$n")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: failed: ${failed[*]}" >&2
  exit 1
fi
