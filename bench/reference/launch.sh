#!/usr/bin/env bash
# MPI job launch reference: wall time of a direct launch of a trivial MPI
# program (MPI_Init + MPI_Finalize) with mpirun.openmpi and mpiexec.mpich,
# 1 and 4 ranks, measured by launch_timer.c (fork/exec/wait, monotonic clock).
#
# usage: launch.sh [reps [warmup]]    (defaults 10 1)
# stdout: RESULT lines only; diagnostics (incl. the jobs' output) on stderr.
# Runs for Open MPI or MPICH are skipped with a message if that
# implementation is missing; exits non-zero if neither is installed.
set -euo pipefail

REPS=${1:-10}
WARMUP=${2:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${REFERENCE_BUILD_DIR:-$REPO/target/reference}
PER_RUN_TIMEOUT=${LAUNCH_RUN_TIMEOUT:-60}

log() { echo "launch.sh: $*" >&2; }
fail() { log "ERROR: $*"; exit 1; }
# other load on the machine skews every number here; record it
log "loadavg at start: $(cut -d" " -f1-3 /proc/loadavg) ($(nproc) CPUs)"
command -v gcc >/dev/null 2>&1 || fail "gcc not found"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo

mkdir -p "$OUT"
TIMER=$OUT/launch_timer
gcc -O2 -Wall -o "$TIMER" "$HERE/launch_timer.c" || fail "compiling launch_timer.c failed"

have_ompi=0; have_mpich=0
if command -v mpicc.openmpi >/dev/null 2>&1 && command -v mpirun.openmpi >/dev/null 2>&1; then
    have_ompi=1
    mpicc.openmpi -O2 -o "$OUT/mpi_hello.openmpi" "$HERE/mpi_hello.c" || fail "mpicc.openmpi failed"
else
    log "Open MPI (mpicc.openmpi/mpirun.openmpi) not found, skipping its runs"
fi
if command -v mpicc.mpich >/dev/null 2>&1 && command -v mpiexec.mpich >/dev/null 2>&1; then
    have_mpich=1
    mpicc.mpich -O2 -o "$OUT/mpi_hello.mpich" "$HERE/mpi_hello.c" || fail "mpicc.mpich failed"
else
    log "MPICH (mpicc.mpich/mpiexec.mpich) not found, skipping its runs"
fi
[ $have_ompi -eq 1 ] || [ $have_mpich -eq 1 ] || fail "neither Open MPI nor MPICH is installed"

# launch_timer kills a run's whole process group after PER_RUN_TIMEOUT s;
# the outer timeout is a backstop for launch_timer itself.
TOTAL_TIMEOUT=$(( (REPS + WARMUP) * PER_RUN_TIMEOUT + 30 ))
run() { # name -- cmd...
    local name=$1; shift
    log "timing $name ($REPS reps, $WARMUP warm-up)"
    timeout "$TOTAL_TIMEOUT" "$TIMER" "$name" "$REPS" "$WARMUP" "$PER_RUN_TIMEOUT" "$@" \
        || fail "$name failed (rc=$?)"
}

if [ $have_ompi -eq 1 ]; then
    for np in 1 4; do
        run "launch_openmpi_np$np" -- mpirun.openmpi --oversubscribe -n "$np" "$OUT/mpi_hello.openmpi"
    done
fi
if [ $have_mpich -eq 1 ]; then
    for np in 1 4; do
        run "launch_mpich_np$np" -- mpiexec.mpich -n "$np" "$OUT/mpi_hello.mpich"
    done
fi
