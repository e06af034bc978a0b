#!/usr/bin/env bash
# Raw socket floor: TCP over 127.0.0.1 (TCP_NODELAY) and Unix domain stream
# socket ping-pong latency + windowed bandwidth (tcp_pingpong.c).
#
# usage: sockets.sh [lat_iters [bw_scale_MiB]]   (defaults 10000 1024)
# stdout: RESULT lines only; diagnostics on stderr.
# env: SOCKETS_CPUS=<cpulist>  run both processes under `taskset -c <cpulist>`
#      (default: unpinned, like the systems we compare against).
set -euo pipefail

LAT_ITERS=${1:-10000}
BW_SCALE=${2:-1024}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${REFERENCE_BUILD_DIR:-$REPO/target/reference}
RUN_TIMEOUT=${SOCKETS_BENCH_TIMEOUT:-300}

log() { echo "sockets.sh: $*" >&2; }
fail() { log "ERROR: $*"; exit 1; }
# other load on the machine skews every number here; record it
log "loadavg at start: $(cut -d" " -f1-3 /proc/loadavg) ($(nproc) CPUs)"
command -v gcc >/dev/null 2>&1 || fail "gcc not found"

mkdir -p "$OUT"
BIN=$OUT/tcp_pingpong
log "building $BIN"
gcc -O2 -Wall -o "$BIN" "$HERE/tcp_pingpong.c" || fail "compiling tcp_pingpong.c failed"

PIN=()
if [ -n "${SOCKETS_CPUS:-}" ]; then
    command -v taskset >/dev/null 2>&1 || fail "SOCKETS_CPUS set but taskset not found"
    PIN=(taskset -c "$SOCKETS_CPUS")
    log "pinning to CPUs $SOCKETS_CPUS"
fi

for proto in tcp unix; do
    log "running $proto"
    # timeout signals the client; the forked server then sees EOF/EPIPE and
    # exits, and has its own alarm() as a backstop.
    timeout "$RUN_TIMEOUT" ${PIN[@]+"${PIN[@]}"} "$BIN" "$proto" "$LAT_ITERS" "$BW_SCALE" \
        || fail "tcp_pingpong $proto failed (rc=$?; 124 = timeout)"
done
