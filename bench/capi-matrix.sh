#!/usr/bin/env bash
# The C API benchmark across every MPI implementation (issue 25 item 6),
# all in one run on this machine (bench/capi.sh --matrix runs it):
#   - native: each implementation's own ping-pong, two ranks of one job of
#     it (the program built without libisthmus), the reference;
#   - Isthmus: the same ping-pong over an Isthmus intercommunicator between
#     a one-rank job of A and a one-rank job of B, for every unordered pair
#     of the implementations, same-implementation pairs included.
# Latency: one-way, median, 0 B, 8 B, 1 KiB; bandwidth: 64 KiB, 1 MiB
# (windows of 16 MPI_Isend), as bridge/capi/bench/pingpong.c measures.
# Implementations: every installed one of scripts/mpi/ (Debian's Open MPI
# 4.1 and MPICH 4.0; Open MPI 5, MPICH 5 and Intel MPI from the Python
# registry when scripts/install-mpis.sh has installed them), or those of
# ISTHMUS_BENCH_IMPLS. The standard ABI (`abi`) is not a row of its own: its
# runtimes are MPICH 5's and Intel's, which are.
# --contended: beside one CPU-bound process, as bench/capi.sh.
# --no-build: use target/<NAME>/release as it is (libisthmus, the vmd).
# Each job is bounded by ISTHMUS_BENCH_TIMEOUT seconds (default 300); a
# pairing that fails or times out is a row of "-" and a line on stderr.
# Prints one table with ratios: Isthmus ÷ the native number of the slower
# side of the pair (latency: the larger of the two natives; bandwidth: the
# smaller).
# usage: bench/capi.sh --matrix [--contended] [--no-build] [lat_iters [bw_MiB]]
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
CONTENDED=0 BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --contended) CONTENDED=1; shift ;;
    --no-build) BUILD=0; shift ;;
    *) break ;;
  esac
done
ITERS=${1:-5000}
BW=${2:-512}
LIMIT=${ISTHMUS_BENCH_TIMEOUT:-300}
cd "$ISTHMUS_ROOT"
if [ -n "${ISTHMUS_BENCH_IMPLS:-}" ]; then
  IMPLS=$ISTHMUS_BENCH_IMPLS
else
  IMPLS=$(impls_installed | tr ' ' '\n' | grep -vx abi | tr '\n' ' ')
fi
echo "implementations: $IMPLS" >&2
if [ $BUILD = 1 ]; then
  build_with openmpi build --release -q -p isthmus-vmd --bins
  for n in $IMPLS; do
    case "$n" in openmpi) ;; mpich) prime_target mpich "$ISTHMUS_TARGET_OPENMPI" ;; *) prime_target "$n" ;; esac
    build_with "$n" build --release -q -p isthmus-capi
  done
fi
OUT=$(mktemp -d /tmp/isthmus-bench-capi-matrix.XXXXXX)
HOG_PID=""
trap '[ -n "$HOG_PID" ] && kill "$HOG_PID" 2>/dev/null; [ -n "${VMD_PID:-}" ] && kill "$VMD_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
SRC=bridge/capi/bench/pingpong.c
for n in $IMPLS; do
  impl_load "$n"
  lib="$ISTHMUS_ROOT/target/$n/release"
  [ -f "$lib/libisthmus.so" ] || { echo "no libisthmus for $n in $lib (build_with $n build --release -p isthmus-capi)" >&2; exit 1; }
  # (The compilers' warnings go to a log, shown if a build fails.)
  # shellcheck disable=SC2086
  env $impl_env "$impl_mpicc" -O2 -Ibridge/capi/include -o "$OUT/pp-$n" "$SRC" \
    -L"$lib" -listhmus -Wl,-rpath,"$lib" -Wl,--disable-new-dtags $impl_ldflags 2>>"$OUT/cc.log" &&
    # The native reference: the same source without the library.
    # shellcheck disable=SC2086
    env $impl_env "$impl_mpicc" -O2 -Ibridge/capi/include -DNATIVE_ONLY -o "$OUT/plain-$n" "$SRC" \
      $impl_ldflags 2>>"$OUT/cc.log" ||
    { cat "$OUT/cc.log" >&2; echo "building the ping-pong for $n failed" >&2; exit 1; }
done

# job NAME NP VAR=VALUE... -- PROGRAM ARGS...: a job of NAME's launcher,
# its ranks given the variables, bounded by LIMIT seconds. A one-rank job
# (one side of a pairing) is not pinned: Open MPI and Intel MPI pin a job's
# first rank to the first core, and two such jobs would share it.
job() {
  local name=$1 np=$2 vars=() pass=()
  shift 2
  while [ "$1" != "--" ]; do vars+=("$1"); shift; done
  shift
  impl_load "$name"
  [ "$np" = 1 ] && [ "$name" = impi ] && vars+=(I_MPI_PIN=off)
  case "$impl_family" in
    openmpi)
      for v in "${vars[@]}"; do pass+=(-x "${v%%=*}"); done
      [ "$np" = 1 ] && pass+=(--bind-to none)
      pass=(--oversubscribe "${pass[@]}") ;;
    mpich)
      for v in "${vars[@]}"; do pass+=(-genv "${v%%=*}" "${v#*=}"); done ;;
  esac
  # shellcheck disable=SC2086
  env "${vars[@]}" $impl_env timeout --kill-after=5 "$LIMIT" "$impl_mpiexec" -n "$np" "${pass[@]}" "$@" </dev/null
}

start_vmd "$OUT" >&2
if [ $CONTENDED = 1 ]; then bench_start --contended; else bench_start; fi

PAIRS=""
{
  for n in $IMPLS; do
    job "$n" 2 ISTHMUS_BENCH_LABEL="nat-$n" -- "$OUT/plain-$n" native "$ITERS" "$BW" ||
      echo "native $n failed" >&2
  done
  k=0
  for a in $IMPLS; do
    seen=0
    for b in $IMPLS; do
      [ "$b" = "$a" ] && seen=1
      [ $seen = 1 ] || continue
      k=$((k + 1))
      job "$b" 1 ISTHMUS_VMD="$ISTHMUS_VMD" -- "$OUT/pp-$b" "mx$k-b" "mx$k-a" second "$ITERS" "$BW" >/dev/null &
      pid=$!
      sleep 0.3
      job "$a" 1 ISTHMUS_VMD="$ISTHMUS_VMD" ISTHMUS_BENCH_LABEL="pair-$a-$b" -- \
        "$OUT/pp-$a" "mx$k-a" "mx$k-b" first "$ITERS" "$BW" || echo "pairing $a $b failed" >&2
      wait "$pid" || echo "pairing $a $b: the $b side failed" >&2
    done
  done
} 2>"$OUT/stderr" | grep '^RESULT' >"$OUT/results" || true
bench_stop_hog
grep -E 'failed|timeout|Terminated' "$OUT/stderr" >&2 || true

awk -v contended="$CONTENDED" -v impls="$IMPLS" '
  { split($2, n, "_"); name = n[1]; kind = n[2]; size = n[3]
    for (i = 3; i <= NF; i++) { split($i, kv, "="); v[name, kind, size, kv[1]] = kv[2] } }
  function lat(who, s) { return v[who, "lat", s, "median_us"] }
  function bw(who, s) { return v[who, "bw", s, "mbps"] }
  function max(a, b) { return (a == "" || b == "") ? "" : (a + 0 > b + 0 ? a : b) }
  function min(a, b) { return (a == "" || b == "") ? "" : (a + 0 < b + 0 ? a : b) }
  function cell(x, ref) {
    if (x == "") return "-"
    return (ref + 0 > 0) ? sprintf("%s (%.2f)", x, x / ref) : x
  }
  END {
    m = split(impls, I, " ")
    printf "%s; %d implementations: %s\n", (contended ? "CONTENDED: one CPU-bound process beside each job" : "quiet"), m, impls
    printf "native: two ranks of one job of the implementation, without libisthmus\n"
    f = "%-10s %9s %9s %9s %10s %10s\n"
    printf "\nnative      latency µs (median, one-way)     bandwidth MB/s\n"
    printf f, "impl", "0 B", "8 B", "1 KiB", "64 KiB", "1 MiB"
    for (i = 1; i <= m; i++) { a = "nat-" I[i]
      printf f, I[i], lat(a, 0) == "" ? "-" : lat(a, 0), lat(a, 8) == "" ? "-" : lat(a, 8), lat(a, 1024) == "" ? "-" : lat(a, 1024), bw(a, 65536) == "" ? "-" : bw(a, 65536), bw(a, 1048576) == "" ? "-" : bw(a, 1048576) }
    printf "\nIsthmus, one-rank job of A <-> one-rank job of B; (ratio) = Isthmus / native of the slower side\n"
    printf "(latency: the larger native of A and B; bandwidth: the smaller)\n"
    f = "%-22s %16s %16s %16s %17s %17s\n"
    printf f, "A <-> B", "0 B µs", "8 B µs", "1 KiB µs", "64 KiB MB/s", "1 MiB MB/s"
    for (i = 1; i <= m; i++) for (j = i; j <= m; j++) {
      p = "pair-" I[i] "-" I[j]; na = "nat-" I[i]; nb = "nat-" I[j]
      printf f, I[i] " <-> " I[j],
        cell(lat(p, 0), max(lat(na, 0), lat(nb, 0))),
        cell(lat(p, 8), max(lat(na, 8), lat(nb, 8))),
        cell(lat(p, 1024), max(lat(na, 1024), lat(nb, 1024))),
        cell(bw(p, 65536), min(bw(na, 65536), bw(nb, 65536))),
        cell(bw(p, 1048576), min(bw(na, 1048576), bw(nb, 1048576)))
    }
  }' "$OUT/results"
