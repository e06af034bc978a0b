#!/usr/bin/env bash
# C API benchmark (issue 10 item 8, issue 18 item 5), all in one run on
# this machine:
#   - C ping-pong over an Isthmus intercommunicator, Open MPI <-> MPICH,
#     over shared memory (the default on one host) and over the Unix
#     socket (ISTHMUS_TRANSPORT=socket), and over shared memory without
#     single copy (ISTHMUS_SHM_CMA=off: every byte through the ring; the
#     default moves messages from 512 KiB up with process_vm_readv);
#   - the Rust API's ping-pong over the bridge, Open MPI <-> MPICH;
#   - two Open MPI jobs joined by MPI_Comm_connect/accept (the reference);
#   - native intra-job ping-pong (Open MPI, 2 ranks: its shared memory)
#     with and without libisthmus linked: the cost of interposition on
#     ordinary traffic.
# --contended runs it all beside one CPU-bound process (started before the
# first pair, stopped by its PID at the end): on a two-core machine the
# pair and the hog then share the cores, as coupled jobs on a busy node do.
# ISTHMUS_WAIT in the environment reaches every Isthmus process.
# Prints one table with ratios.
# --matrix: every MPI implementation and every pairing of them beside each
# one's native numbers instead (bench/capi-matrix.sh, which says more).
# The C (shared memory) and Rust pairs run ROUNDS times, alternately
# (--rounds, default 11), and the table gives the median of their rounds,
# so that what disturbs one round (a build, the hog's placement) falls on
# both paths alike. The per-round C/Rust ratios are printed under the
# table. Each pair's two sides run pinned to CPUs 0 and 1, as mpirun pins
# the native pair's two ranks (--no-pin: neither side pinned).
# usage: bench/capi.sh [--contended] [--rounds N] [--no-pin] [lat_iters [bw_MiB]]
#        bench/capi.sh --matrix [--contended] [--no-build] [lat_iters [bw_MiB]]
set -euo pipefail
if [ "${1:-}" = "--matrix" ]; then shift; exec bash "$(dirname "$0")/capi-matrix.sh" "$@"; fi
. "$(dirname "$0")/../scripts/env.sh"
CONTENDED=0 ROUNDS=11 PIN=1
while [ $# -gt 0 ]; do
  case "$1" in
    --contended) CONTENDED=1; shift ;;
    --rounds) [ $# -ge 2 ] || { echo "bench/capi.sh: --rounds needs a number" >&2; exit 2; }
              ROUNDS=$2; shift 2 ;;
    --pin) PIN=1; shift ;;
    --no-pin) PIN=0; shift ;;
    -*) echo "bench/capi.sh: unknown option $1 (see the usage at the top of the script)" >&2; exit 2 ;;
    *) break ;;
  esac
done
ITERS=${1:-5000}
BW=${2:-512}
cd "$ISTHMUS_ROOT"
build_with mpich build --release -q -p isthmus-examples --bins
build_with mpich build --release -q -p isthmus-capi
build_with openmpi build --release -q -p isthmus-examples -p isthmus-vmd --bins
build_with openmpi build --release -q -p isthmus-capi
OUT=$(mktemp -d /tmp/isthmus-bench-capi.XXXXXX)
HOG_PID=""
trap '[ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null; [ -n "${VMD_PID:-}" ] && kill "$VMD_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
O="$ISTHMUS_TARGET_OPENMPI/release" M="$ISTHMUS_TARGET_MPICH/release"
SRC=bridge/capi/bench/pingpong.c INC=(-Ibridge/capi/include)
mpicc.openmpi -O2 "${INC[@]}" -o "$OUT/pp-ompi" "$SRC" -L"$O" -listhmus -Wl,-rpath,"$O" -Wl,--disable-new-dtags
mpicc.mpich -O2 "${INC[@]}" -o "$OUT/pp-mpich" "$SRC" -L"$M" -listhmus -Wl,-rpath,"$M" -Wl,--disable-new-dtags
# The same source without the library (native mode only).
mpicc.openmpi -O2 "${INC[@]}" -DNATIVE_ONLY -o "$OUT/pp-plain" "$SRC"
start_vmd "$OUT" >&2
# Pinned and contended, the hog shares CPU 1 with the MPICH side of every
# pair (the same placement in each round, so that C and Rust compare).
if [ "$PIN" = 1 ]; then export BENCH_HOG_CPU=1; fi
if [ $CONTENDED = 1 ]; then bench_start --contended; else bench_start; fi

# Pinned (the default), the two sides of a pair run the Open MPI one on
# CPU 0 and the MPICH one on CPU 1 (as mpirun pins the native pair's two
# ranks); each process's engine threads share its one CPU. Unpinned was the
# default once, but Open MPI's mpirun pins its one-rank job to core 0 by
# itself and MPICH's does not pin, so in some rounds the scheduler put both
# sides on core 0 and their 8 B latency was 6-8 µs instead of 0.5 (both
# paths alike, in any phase: per-round C/Rust from 0.09 to 13); --no-pin
# leaves both unpinned (Open MPI's with --bind-to none), which still
# showed 3.4 µs rounds.
PIN_A=(--bind-to none) PIN_B=()
if [ "$PIN" = 1 ]; then PIN_A=(--bind-to none taskset -c 0) PIN_B=(taskset -c 1); fi
pair() { # pair OMPI_CMD... -- MPICH_CMD...: the Open MPI side prints RESULTs
  local a=() b=() seen=0
  for x in "$@"; do
    if [ "$x" = "--" ]; then seen=1; elif [ $seen = 0 ]; then a+=("$x"); else b+=("$x"); fi
  done
  mpiexec.mpich -n 1 -genv ISTHMUS_VMD "$ISTHMUS_VMD" "${PIN_B[@]}" "${b[@]}" >/dev/null &
  local pid=$!
  sleep 0.3
  mpirun.openmpi -n 1 "${PIN_A[@]:0:2}" -x ISTHMUS_VMD "${PIN_A[@]:2}" "${a[@]}"
  wait "$pid"
}
{
  for r in $(seq "$ROUNDS"); do
    pair "$OUT/pp-ompi" capi$r-a capi$r-b first "$ITERS" "$BW" -- "$OUT/pp-mpich" capi$r-b capi$r-a second "$ITERS" "$BW"
    pair "$O/pingpong" --group rs$r-a --peer rs$r-b --first --iters "$ITERS" --bw-mib "$BW" -- \
         "$M/pingpong" --group rs$r-b --peer rs$r-a --iters "$ITERS" --bw-mib "$BW"
  done
  ISTHMUS_TRANSPORT=socket ISTHMUS_BENCH_LABEL=capisock \
    pair "$OUT/pp-ompi" sock-a sock-b first "$ITERS" "$BW" -- "$OUT/pp-mpich" sock-b sock-a second "$ITERS" "$BW"
  ISTHMUS_SHM_CMA=off ISTHMUS_BENCH_LABEL=capiring \
    pair "$OUT/pp-ompi" ring-a ring-b first "$ITERS" "$BW" -- "$OUT/pp-mpich" ring-b ring-a second "$ITERS" "$BW"
  bash bench/reference/ompi_connect_accept.sh "$ITERS" "$BW"
  mpirun.openmpi --oversubscribe -n 2 "$OUT/pp-plain" native "$ITERS" "$BW"
  ISTHMUS_BENCH_LABEL=linked mpirun.openmpi --oversubscribe -n 2 -x ISTHMUS_BENCH_LABEL "$OUT/pp-ompi" native "$ITERS" "$BW"
} 2>"$OUT/stderr" | grep '^RESULT' > "$OUT/results" || { cat "$OUT/stderr" >&2; exit 1; }
bench_stop_hog

awk -v contended="$CONTENDED" '
  { split($2, n, "_"); kind = n[2]; size = n[3]; name = n[1]
    # A key measured in several rounds keeps every value (the median below).
    for (i = 3; i <= NF; i++) { split($i, kv, "="); k = name SUBSEP kind SUBSEP size SUBSEP kv[1]
      nv[k]++; v[k, nv[k]] = kv[2] } }
  function med(k,   n, i, j, t, a) { n = nv[k]; if (n == 0) return ""
    for (i = 1; i <= n; i++) a[i] = v[k, i] + 0
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2 }
  function lat(who, s) { return med(who SUBSEP "lat" SUBSEP s SUBSEP "median_us") }
  function bw(who, s) { return med(who SUBSEP "bw" SUBSEP s SUBSEP "mbps") }
  function r(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "-" }
  function rounds(kind, s, q,   k1, k2, i, out) { k1 = "capi" SUBSEP kind SUBSEP s SUBSEP q; k2 = "bridge" SUBSEP kind SUBSEP s SUBSEP q
    for (i = 1; i <= nv[k1] && i <= nv[k2]; i++) out = out sprintf(" %.2f", v[k1, i] / v[k2, i])
    return out }
  END {
    f = "%-8s %8s %8s %8s %7s %9s %7s %8s %8s %8s %8s\n"
    printf "%s; C = the C library over shared memory, sock = over the Unix socket\n", (contended ? "CONTENDED: one CPU-bound process beside the pair" : "quiet")
    printf "\none-way latency, µs (median)   targets: C/c-a ≤ 1.0 (C ≤ 2 µs quiet), 0.95 ≤ C/Rust ≤ 1.05\n"
    printf f, "size", "C", "C sock", "Rust", "C/Rust", "OMPI c/a", "C/c-a", "sock/c-a", "native", "linked", "lnk/nat"
    split("0 8 1024", L, " ")
    for (i = 1; i <= 3; i++) { s = L[i]
      printf f, s, lat("capi", s), lat("capisock", s), lat("bridge", s), r(lat("capi", s), lat("bridge", s)), lat("ompi", s), r(lat("capi", s), lat("ompi", s)), r(lat("capisock", s), lat("ompi", s)), lat("native", s), lat("linked", s), r(lat("linked", s), lat("native", s)) }
    printf "C/Rust by round (C and Rust alternately):"
    for (i = 1; i <= 3; i++) printf "  %s B:%s", L[i], rounds("lat", L[i], "median_us")
    printf "\n"
    f = "%-8s %8s %8s %8s %7s %8s %7s %9s %7s %8s %8s %7s %8s %8s\n"
    printf "\nbandwidth, MB/s                 targets: C/c-a ≥ 1.0, C/nat ≥ 0.5, 0.95 ≤ C/Rust ≤ 1.05; C ring = ISTHMUS_SHM_CMA=off\n"
    printf f, "size", "C", "C sock", "Rust", "C/Rust", "C ring", "C/ring", "OMPI c/a", "C/c-a", "sock/c-a", "native", "C/nat", "linked", "lnk/nat"
    split("65536 1048576 4194304", B, " ")
    for (i = 1; i <= 3; i++) { s = B[i]
      printf f, s, bw("capi", s), bw("capisock", s), bw("bridge", s), r(bw("capi", s), bw("bridge", s)), bw("capiring", s), r(bw("capi", s), bw("capiring", s)), bw("ompi", s), r(bw("capi", s), bw("ompi", s)), r(bw("capisock", s), bw("ompi", s)), bw("native", s), r(bw("capi", s), bw("native", s)), bw("linked", s), r(bw("linked", s), bw("native", s)) }
    printf "C/Rust by round (C and Rust alternately):"
    for (i = 1; i <= 3; i++) printf "  %s B:%s", B[i], rounds("bw", B[i], "mbps")
    printf "\n"
  }' "$OUT/results"
