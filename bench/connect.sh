#!/usr/bin/env bash
# Connect benchmark (issue 12, item 6), all in one run on this machine:
#   - time to connect with plain MPI-2 calls (MPI_Open_port/Publish_name/
#     Comm_accept against Lookup_name/Comm_connect, bridge/capi/bench/
#     connect.c, unmodified) through Isthmus, Open MPI <-> MPICH both ways,
#     with libisthmus preloaded;
#   - the same program between two Open MPI jobs started separately and
#     joined by Open MPI's own connect/accept through ompi-server
#     (`mpirun --ompi-server file:URI`; Open MPI 4.1 has ompi-server, no DVM
#     needed);
#   each with 1 and 2 ranks per job: the first connect, and the median of
#   the later ones (disconnect, then connect again on the same port);
#   - an mpi4py ping-pong (Debian's mpi4py on Open MPI <-> mpi4py built with
#     MPICH, bridge/capi/bench/pingpong.py) over an Isthmus intercommunicator
#     beside the C ping-pong (bridge/capi/bench/pingpong.c) over Isthmus.
# Prints two tables with ratios. Loopback only; every job runs under
# `timeout`; the exit trap stops only the processes this script started.
# usage: bench/connect.sh [rounds [lat_iters [bw_MiB]]]   (defaults 20 2000 256)
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
ROUNDS=${1:-20}
ITERS=${2:-2000}
BW=${3:-256}
JOB_TIMEOUT=${BENCH_JOB_TIMEOUT:-300}
MPI4PY_MPICH=${ISTHMUS_MPI4PY_MPICH:-/opt/isthmus/mpi4py-mpich}
[ -d "$MPI4PY_MPICH/mpi4py" ] || {
  echo "bench-connect: no mpi4py built with MPICH in $MPI4PY_MPICH (scripts/install-deps.sh builds it)" >&2
  exit 1
}
command -v ompi-server >/dev/null || { echo "bench-connect: ompi-server not found (openmpi-bin)" >&2; exit 1; }
cd "$ISTHMUS_ROOT"
build_with mpich build --release -q -p isthmus-capi
build_with openmpi build --release -q -p isthmus-vmd --bins
build_with openmpi build --release -q -p isthmus-capi
OUT=$(mktemp -d /tmp/isthmus-bench-connect.XXXXXX)
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
INC=(-Ibridge/capi/include -Ibench/reference)
mpicc.openmpi -O2 "${INC[@]}" -o "$OUT/connect-ompi" bridge/capi/bench/connect.c
mpicc.mpich -O2 "${INC[@]}" -o "$OUT/connect-mpich" bridge/capi/bench/connect.c
mpicc.openmpi -O2 "${INC[@]}" -o "$OUT/pp-ompi" bridge/capi/bench/pingpong.c -L"$O" -listhmus -Wl,-rpath,"$O" -Wl,--disable-new-dtags
mpicc.mpich -O2 "${INC[@]}" -o "$OUT/pp-mpich" bridge/capi/bench/pingpong.c -L"$M" -listhmus -Wl,-rpath,"$M" -Wl,--disable-new-dtags
start_vmd "$OUT" >&2
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}
echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" >&2

# Launchers: IMPL NP CMD... ; the Isthmus ones preload that flavour's library.
launch() {
  local impl=$1 np=$2; shift 2
  case "$impl" in
    openmpi) timeout "$JOB_TIMEOUT" mpirun.openmpi --oversubscribe --bind-to none -n "$np" -x ISTHMUS_VMD "$@" ;;
    mpich) timeout "$JOB_TIMEOUT" mpiexec.mpich -n "$np" -genv ISTHMUS_VMD "$ISTHMUS_VMD" "$@" ;;
  esac
}
isthmus_launch() {
  local impl=$1 np=$2; shift 2
  case "$impl" in
    openmpi) launch openmpi "$np" -x LD_PRELOAD="$O/libisthmus.so" -x PYTHONPATH="$ISTHMUS_ROOT/bridge/capi/python" "$@" ;;
    mpich) launch mpich "$np" -genv LD_PRELOAD "$M/libisthmus.so" \
             -genv PYTHONPATH "$MPI4PY_MPICH:$ISTHMUS_ROOT/bridge/capi/python" "$@" ;;
  esac
}
# pair NAME A-CMD... -- B-CMD...: A in the background, B in the foreground
# (B prints the RESULTs); both must succeed.
pair() {
  local name=$1 a=() b=() seen=0; shift
  for x in "$@"; do
    if [ "$x" = "--" ]; then seen=1; elif [ $seen = 0 ]; then a+=("$x"); else b+=("$x"); fi
  done
  "${a[@]}" >"$OUT/$name.a.log" 2>&1 </dev/null &
  local pid=$! rc=0
  STARTED+=("$pid")
  sleep 0.3
  "${b[@]}" </dev/null 2>"$OUT/$name.b.log" || rc=$?
  wait "$pid" || rc=$((rc ? rc : $?))
  if [ "$rc" -ne 0 ]; then
    echo "bench-connect: $name failed (rc $rc; 124 = timeout)" >&2
    cat "$OUT/$name.a.log" "$OUT/$name.b.log" >&2
    return 1
  fi
}

ompi-server --no-daemonize -r "$OUT/ompi-server.uri" >"$OUT/ompi-server.log" 2>&1 </dev/null &
STARTED+=("$!")
for _ in $(seq 100); do [ -s "$OUT/ompi-server.uri" ] && break; sleep 0.1; done
[ -s "$OUT/ompi-server.uri" ] || { echo "bench-connect: ompi-server did not start" >&2; exit 1; }
OMPI_SERVER=(--ompi-server "file:$OUT/ompi-server.uri")

{
  for np in 1 2; do
    # isom: Open MPI accepts, MPICH connects; ismo: the other way round.
    pair "isom$np" isthmus_launch openmpi "$np" "$OUT/connect-ompi" accept "svc-om-$np" "$ROUNDS" isom -- \
         isthmus_launch mpich "$np" "$OUT/connect-mpich" connect "svc-om-$np" "$ROUNDS" isom
    pair "ismo$np" isthmus_launch mpich "$np" "$OUT/connect-mpich" accept "svc-mo-$np" "$ROUNDS" ismo -- \
         isthmus_launch openmpi "$np" "$OUT/connect-ompi" connect "svc-mo-$np" "$ROUNDS" ismo
    pair "ompi$np" launch openmpi "$np" "${OMPI_SERVER[@]}" "$OUT/connect-ompi" accept "svc-ompi-$np" "$ROUNDS" ompi -- \
         launch openmpi "$np" "${OMPI_SERVER[@]}" "$OUT/connect-ompi" connect "svc-ompi-$np" "$ROUNDS" ompi
  done
  pair capi isthmus_launch mpich 1 "$OUT/pp-mpich" capi-b capi-a second "$ITERS" "$BW" -- \
       launch openmpi 1 "$OUT/pp-ompi" capi-a capi-b first "$ITERS" "$BW"
  pair py isthmus_launch mpich 1 /usr/bin/python3 bridge/capi/bench/pingpong.py py-b py-a second "$ITERS" "$BW" -- \
       isthmus_launch openmpi 1 /usr/bin/python3 bridge/capi/bench/pingpong.py py-a py-b first "$ITERS" "$BW"
} >"$OUT/stdout"   # (not a pipe: the jobs started stay this shell's, for the trap)
grep '^RESULT' "$OUT/stdout" >"$OUT/results"

echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
awk -v rounds="$ROUNDS" '
  { split($2, n, "_"); name = n[1]; kind = n[2]; size = n[3]
    for (i = 3; i <= NF; i++) { split($i, kv, "="); v[name, kind, size, kv[1]] = kv[2] } }
  function ms(who, kind, np) { x = v[who, kind, "np" np, "median_us"]; return x == "" ? "-" : sprintf("%.2f", x / 1000) }
  function r(a, b) { return (a != "-" && b != "-" && b > 0) ? sprintf("%.2f", a / b) : "-" }
  function lat(who, s) { return v[who, "lat", s, "median_us"] }
  function bw(who, s) { return v[who, "bw", s, "mbps"] }
  END {
    printf "time to connect, ms (first connect; later = median of %d connects on the same port after disconnect)\n", rounds - 1
    printf "isom = Isthmus, Open MPI accepts / MPICH connects; ismo = Isthmus, MPICH accepts / Open MPI connects; ompi = two Open MPI jobs through ompi-server\n"
    printf "%-6s %-7s %10s %10s %10s %10s %10s\n", "ranks", "connect", "isom", "ismo", "ompi", "isom/ompi", "ismo/ompi"
    for (np = 1; np <= 2; np++)
      for (k = 1; k <= 3; k++) {
        kind = (k == 1) ? "first" : (k == 2) ? "later" : "lookup"
        a = ms("isom", kind, np); b = ms("ismo", kind, np); c = ms("ompi", kind, np)
        printf "%-6s %-7s %10s %10s %10s %10s %10s\n", np, kind, a, b, c, r(a, c), r(b, c)
      }
    printf "\nping-pong over an Isthmus intercommunicator, Open MPI <-> MPICH: C vs mpi4py (buffer API; pickle: an int)\n"
    printf "%-10s %12s %12s %8s %14s\n", "size", "C lat µs", "mpi4py µs", "py/C", "mpi4py pickle"
    split("0 8 1024", L, " ")
    for (i = 1; i <= 3; i++) { s = L[i]
      printf "%-10s %12s %12s %8s %14s\n", s, lat("capi", s), lat("py", s), r(lat("py", s), lat("capi", s)), (s == 8) ? lat("pypickle", s) : "" }
    printf "%-10s %12s %12s %8s\n", "size", "C MB/s", "mpi4py MB/s", "py/C"
    split("65536 1048576 4194304", B, " ")
    for (i = 1; i <= 3; i++) { s = B[i]
      printf "%-10s %12s %12s %8s\n", s, bw("capi", s), bw("py", s), r(bw("py", s), bw("capi", s)) }
  }' "$OUT/results"
