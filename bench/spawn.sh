#!/usr/bin/env bash
# Spawn benchmark (issue 20): spawn-to-first-message time, all in one run
# on this machine. A parent (one rank, Open MPI) calls MPI_Comm_spawn of NP
# children on MPI_COMM_SELF and times the call until the first child's
# message arrives (bridge/capi/bench/spawn.c, plain MPI):
#   - isom: through Isthmus, the parent with libisthmus preloaded spawning
#     MPICH children (started by the virtual machine: vmd, MPICH tasker);
#   - isoo: through Isthmus, Open MPI spawning Open MPI children the same
#     way (the Open MPI tasker);
#   - ompi: Open MPI's own MPI_Comm_spawn of the same job (no libisthmus).
# Each ROUNDS times: the first spawn, and the median of the later ones.
# Prints one table with ratios. Loopback only; every job runs under
# `timeout`; the exit trap stops only the processes this script started.
# usage: bench/spawn.sh [rounds [np]]   (defaults 10 2)
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
ROUNDS=${1:-10}
NP=${2:-2}
JOB_TIMEOUT=${BENCH_JOB_TIMEOUT:-600}
cd "$ISTHMUS_ROOT"
build_with mpich build --release -q -p isthmus-capi
build_with openmpi build --release -q -p isthmus-vmd -p isthmus-taskers --bins
build_with openmpi build --release -q -p isthmus-capi
OUT=$(mktemp -d /tmp/isthmus-bench-spawn.XXXXXX)
STARTED=()   # PIDs of what this script started in the background
stop_started() {
  local pid
  for pid in "${STARTED[@]}" ${VMD_PID:+"$VMD_PID"}; do
    kill -0 "$pid" 2>/dev/null || continue
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$OUT"
}
trap stop_started EXIT
trap 'exit 130' INT TERM

O="$ISTHMUS_TARGET_OPENMPI/release" M="$ISTHMUS_TARGET_MPICH/release"
INC=(-Ibench/reference)
mpicc.openmpi -O2 "${INC[@]}" -o "$OUT/spawn-ompi" bridge/capi/bench/spawn.c
mpicc.mpich -O2 "${INC[@]}" -o "$OUT/spawn-mpich" bridge/capi/bench/spawn.c
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
start_vmd "$OUT" --slots 64 >&2
for impl in openmpi mpich; do
  lib="$O/libisthmus.so"; [ "$impl" = mpich ] && lib="$M/libisthmus.so"
  RUST_LOG=warn "$O/tasker" --impl "$impl" --vmd "$ISTHMUS_VMD" --libisthmus "$lib" \
    >"$OUT/tasker-$impl.log" 2>&1 </dev/null &
  STARTED+=("$!")
done
for _ in $(seq 200); do
  "$O/isthmus" conf 2>/dev/null | grep -q 'mpich,openmpi' && break
  sleep 0.05
done
"$O/isthmus" conf 2>/dev/null | grep -q 'mpich,openmpi' || { echo "bench-spawn: the taskers did not register" >&2; exit 1; }
echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" >&2

parent() { # LABEL CHILD [mpirun options...]: one Open MPI parent
  local label=$1 child=$2; shift 2
  timeout "$JOB_TIMEOUT" mpirun.openmpi --oversubscribe --bind-to none -n 1 "$@" \
    "$OUT/spawn-ompi" parent "$child" "$NP" "$ROUNDS" "$label" </dev/null 2>"$OUT/$label.log" || {
    echo "bench-spawn: $label failed (rc $?; 124 = timeout)" >&2
    cat "$OUT/$label.log" >&2
    return 1
  }
}
{
  parent isom "$OUT/spawn-mpich" -x ISTHMUS_VMD -x LD_PRELOAD="$O/libisthmus.so"
  parent isoo "$OUT/spawn-ompi" -x ISTHMUS_VMD -x LD_PRELOAD="$O/libisthmus.so"
  parent ompi "$OUT/spawn-ompi"
} >"$OUT/stdout"   # (not a pipe: the jobs started stay this shell's, for the trap)
grep '^RESULT' "$OUT/stdout" >"$OUT/results"

echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
awk -v rounds="$ROUNDS" -v np="$NP" '
  { split($2, n, "_"); name = n[1]; kind = n[2]
    for (i = 3; i <= NF; i++) { split($i, kv, "="); v[name, kind, kv[1]] = kv[2] } }
  function ms(who, kind) { x = v[who, kind, "median_us"]; return x == "" ? "-" : sprintf("%.1f", x / 1000) }
  function r(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
  END {
    printf "spawn-to-first-message, ms: an Open MPI parent spawns %d children (first spawn; later = median of %d)\n", np, rounds - 1
    printf "isom = Isthmus, MPICH children; isoo = Isthmus, Open MPI children; ompi = Open MPI'"'"'s own MPI_Comm_spawn\n"
    printf "%-7s %10s %10s %10s %10s %10s\n", "spawn", "isom", "isoo", "ompi", "isom/ompi", "isoo/ompi"
    for (k = 1; k <= 2; k++) {
      kind = (k == 1) ? "first" : "later"
      a = ms("isom", kind); b = ms("isoo", kind); c = ms("ompi", kind)
      printf "%-7s %10s %10s %10s %10s %10s\n", kind, a, b, c, r(a, c), r(b, c)
    }
  }' "$OUT/results"
