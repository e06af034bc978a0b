#!/usr/bin/env bash
# PVM 3.4 group server reference: starts a private pvmd on loopback, runs
# pvm_groups (which makes libgpvm start pvmgs), halts pvmd, cleans up.
#
# usage: pvm_groups.sh [iters [warmup]]     (defaults 2000 100)
# stdout: RESULT lines only; diagnostics on stderr.
set -euo pipefail

ITERS=${1:-2000}
WARMUP=${2:-100}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${REFERENCE_BUILD_DIR:-$REPO/target/reference}
RUN_TIMEOUT=${PVM_BENCH_TIMEOUT:-300}

log() { echo "pvm_groups.sh: $*" >&2; }
fail() { log "ERROR: $*"; exit 1; }
# other load on the machine skews every number here; record it
log "loadavg at start: $(cut -d" " -f1-3 /proc/loadavg) ($(nproc) CPUs)"

command -v pvmd >/dev/null 2>&1 || fail "pvmd not found (install Debian packages pvm and pvm-dev)"
command -v pvmgetarch >/dev/null 2>&1 || fail "pvmgetarch not found (install package pvm)"
[ -f /usr/include/pvm3.h ] || fail "pvm3.h not found (install package pvm-dev)"
command -v gcc >/dev/null 2>&1 || fail "gcc not found"

export PVM_ROOT=${PVM_ROOT:-/usr/lib/pvm3}
export PVM_ARCH=${PVM_ARCH:-$(pvmgetarch)}
export PVM_ALLOW_ROOT=1 # PVM refuses to run as root without it
[ -x "$PVM_ROOT/lib/pvmgs" ] || fail "pvmgs not found at $PVM_ROOT/lib/pvmgs"

mkdir -p "$OUT"
BIN=$OUT/pvm_groups
log "building $BIN"
gcc -O2 -Wall -o "$BIN" "$HERE/pvm_groups.c" -lgpvm3 -lpvm3 \
    || fail "compiling pvm_groups.c failed"

# Private PVM_TMP: pvmd.<uid>, pvml.<uid> and the task socket live here, so
# we never clash with another pvmd of the same user on this machine.
PVM_TMP=$(mktemp -d /tmp/isthmus-pvm.XXXXXX)
export PVM_TMP
PVMD_PID=""

cleanup() {
    local rc=$?
    if [ -n "$PVMD_PID" ] && kill -0 "$PVMD_PID" 2>/dev/null; then
        # pvm_halt() also SIGTERMs the calling task; subshell keeps bash quiet
        ( timeout 5 "$BIN" --halt; true ) >/dev/null 2>&1 || true
        for _ in $(seq 50); do kill -0 "$PVMD_PID" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$PVMD_PID" 2>/dev/null; then
            log "pvmd $PVMD_PID did not halt, killing it"
            kill "$PVMD_PID" 2>/dev/null || true
            sleep 0.5
            kill -9 "$PVMD_PID" 2>/dev/null || true
        fi
    fi
    [ -n "$PVMD_PID" ] && { wait "$PVMD_PID" 2>/dev/null || true; }
    if [ $rc -ne 0 ] && [ -f "$PVM_TMP/pvml.$(id -u)" ]; then
        log "pvmd log:"; sed 's/^/  /' "$PVM_TMP/pvml.$(id -u)" >&2 || true
    fi
    rm -rf "$PVM_TMP"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Hostfile: '*' sets defaults (executable path for pvmgs + our binary);
# the master is named 'localhost' (-n) so pvmd binds to 127.0.0.1 only.
HOSTFILE=$PVM_TMP/hostfile
echo "* ep=$OUT:$PVM_ROOT/lib" >"$HOSTFILE"
getent ahostsv4 localhost | grep -q '^127\.' || fail "localhost does not resolve to 127.x"

log "starting pvmd (PVM_TMP=$PVM_TMP)"
pvmd -nlocalhost "$HOSTFILE" >"$PVM_TMP/pvmd.stdout" 2>"$PVM_TMP/pvmd.stderr" </dev/null &
PVMD_PID=$!

for _ in $(seq 100); do
    [ -s "$PVM_TMP/pvmd.$(id -u)" ] && grep -q ready "$PVM_TMP/pvml.$(id -u)" 2>/dev/null && break
    kill -0 "$PVMD_PID" 2>/dev/null || { cat "$PVM_TMP/pvmd.stderr" >&2; fail "pvmd exited during startup"; }
    sleep 0.1
done
[ -s "$PVM_TMP/pvmd.$(id -u)" ] || fail "pvmd did not come up within 10 s"
log "pvmd up (pid $PVMD_PID): $(head -1 "$PVM_TMP/pvml.$(id -u)")"

timeout "$RUN_TIMEOUT" "$BIN" "$ITERS" "$WARMUP" || fail "pvm_groups benchmark failed or timed out (rc=$?)"
