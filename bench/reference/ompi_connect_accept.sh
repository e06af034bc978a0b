#!/usr/bin/env bash
# Open MPI connect/accept reference: ompi-server + two separately launched
# 1-rank jobs joined by MPI_Publish_name/MPI_Lookup_name +
# MPI_Comm_accept/MPI_Comm_connect; ping-pong latency and windowed bandwidth
# over the intercommunicator.
#
# usage: ompi_connect_accept.sh [lat_iters [bw_scale_MiB]]   (defaults 5000 1024)
# stdout: RESULT lines only (from the client job); diagnostics on stderr.
set -euo pipefail

LAT_ITERS=${1:-5000}
BW_SCALE=${2:-1024}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${REFERENCE_BUILD_DIR:-$REPO/target/reference}
RUN_TIMEOUT=${OMPI_BENCH_TIMEOUT:-300}

log() { echo "ompi_connect_accept.sh: $*" >&2; }
fail() { log "ERROR: $*"; exit 1; }
# other load on the machine skews every number here; record it
log "loadavg at start: $(cut -d" " -f1-3 /proc/loadavg) ($(nproc) CPUs)"

for c in mpicc.openmpi mpirun.openmpi ompi-server; do
    command -v "$c" >/dev/null 2>&1 || fail "$c not found (install openmpi-bin libopenmpi-dev)"
done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# loopback only, for the runtime (oob) and the MPI byte transfer layer
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
# no IB/verbs probing noise in containers
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader,tcp}

mkdir -p "$OUT"
BIN=$OUT/ompi_connect_accept
log "building $BIN"
mpicc.openmpi -O2 -Wall -o "$BIN" "$HERE/ompi_connect_accept.c" || fail "compiling failed"

WORK=$(mktemp -d /tmp/isthmus-ompi.XXXXXX)
URI=$WORK/ompi-server.uri
SERVICE=isthmus-ref-$$
SRV_PID="" ; JOB_S_PID="" ; JOB_C_PID=""

stop_pid() { # stop one process we started: TERM, wait up to 5 s, KILL
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    stop_pid "$JOB_C_PID"; stop_pid "$JOB_S_PID"; stop_pid "$SRV_PID"
    if [ $rc -ne 0 ]; then
        for f in "$WORK"/*.log; do [ -f "$f" ] && { log "--- $f"; sed 's/^/  /' "$f" >&2; }; done
    fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "starting ompi-server"
ompi-server --no-daemonize -r "$URI" >"$WORK/ompi-server.log" 2>&1 </dev/null &
SRV_PID=$!
for _ in $(seq 100); do
    [ -s "$URI" ] && break
    kill -0 "$SRV_PID" 2>/dev/null || fail "ompi-server exited during startup"
    sleep 0.1
done
[ -s "$URI" ] || fail "ompi-server did not write $URI within 10 s"

MPIRUN=(mpirun.openmpi --ompi-server "file:$URI" --bind-to none -n 1)

log "launching server job"
timeout "$RUN_TIMEOUT" "${MPIRUN[@]}" "$BIN" server "$SERVICE" "$LAT_ITERS" "$BW_SCALE" \
    >"$WORK/server.log" 2>&1 </dev/null &
JOB_S_PID=$!

log "launching client job"
timeout "$RUN_TIMEOUT" "${MPIRUN[@]}" "$BIN" client "$SERVICE" "$LAT_ITERS" "$BW_SCALE" \
    >"$WORK/client.out" 2>"$WORK/client.log" </dev/null &
JOB_C_PID=$!

crc=0; wait "$JOB_C_PID" || crc=$?
JOB_C_PID=""
src=0; wait "$JOB_S_PID" || src=$?
JOB_S_PID=""
grep -v '^RESULT ' "$WORK/client.out" >&2 || true
cat "$WORK/client.log" >&2
[ "$crc" -eq 0 ] || fail "client job failed (rc=$crc; 124 = timeout)"
[ "$src" -eq 0 ] || fail "server job failed (rc=$src; 124 = timeout)"
grep '^RESULT ' "$WORK/client.out" || fail "client printed no RESULT lines"
