#!/usr/bin/env bash
# One MPI_COMM_WORLD across implementations (issue 19, item 4), all in one
# run on this host: OSU-style latency (0 B to 64 KiB, one-way median),
# bandwidth (64 KiB, 1 MiB, windows of 64) between world rank 0 and the
# last rank, and Allreduce and Alltoall (8 B to 1 MiB, the slowest rank's
# mean) on MPI_COMM_WORLD of a world of 2 Open MPI + 2 MPICH ranks
# (ISTHMUS_WORLD, each part started by its own launcher), beside one native
# Open MPI job of 4 ranks running the same program without the library.
# Each is measured quiet, then beside one CPU-bound process (bench_start
# --contended, stopped by its PID). One table, with the ratios world ÷ native.
# The program is bridge/capi/bench/world.c.
# usage: bench/world.sh [--no-build] [iters]   (default 1000; `5` is a smoke run)
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
BUILD=1
if [ "${1:-}" = --no-build ]; then BUILD=0; shift; fi
ITERS=${1:-1000}
cd "$ISTHMUS_ROOT"
if [ $BUILD = 1 ]; then
  build_with mpich build --release -q -p isthmus-capi
  build_with openmpi build --release -q -p isthmus-vmd --bins
  build_with openmpi build --release -q -p isthmus-capi
fi
OUT=$(mktemp -d /tmp/isthmus-bench-world.XXXXXX)
trap 'bench_stop_hog; [ -n "${VMD_PID:-}" ] && kill "$VMD_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
O="$ISTHMUS_TARGET_OPENMPI/release" M="$ISTHMUS_TARGET_MPICH/release"
SRC=bridge/capi/bench/world.c
mpicc.openmpi -O2 -o "$OUT/world-ompi" "$SRC" -L"$O" -listhmus -Wl,-rpath,"$O" -Wl,--disable-new-dtags
mpicc.mpich -O2 -o "$OUT/world-mpich" "$SRC" -L"$M" -listhmus -Wl,-rpath,"$M" -Wl,--disable-new-dtags
# The reference without the library.
mpicc.openmpi -O2 -o "$OUT/world-plain" "$SRC"
start_vmd "$OUT" >&2

# run LABEL: the world (Open MPI part 0, MPICH part 1), then the native job;
# RESULT lines with the label after the mode.
run() {
  local label="$1" name="bench-world-$1-$$"
  {
    mpiexec.mpich -n 2 -genv ISTHMUS_VMD "$ISTHMUS_VMD" -genv ISTHMUS_WORLD "$name:1/2" \
      "$OUT/world-mpich" world "$ITERS" &
    local pid=$!
    mpirun.openmpi --oversubscribe -n 2 -x ISTHMUS_VMD -x ISTHMUS_WORLD="$name:0/2" \
      "$OUT/world-ompi" world "$ITERS"
    wait "$pid"
    mpirun.openmpi --oversubscribe -n 4 "$OUT/world-plain" native "$ITERS"
  } 2>"$OUT/stderr.$label" | grep '^RESULT' | sed "s/^RESULT \([a-z]*\)_/RESULT \1:$label /" >>"$OUT/results" \
    || { cat "$OUT/stderr.$label" >&2; exit 1; }
}
bench_start
run quiet
bench_start --contended
run contended
bench_stop_hog

awk '
  { split($2, m, ":"); mode = m[1]; load = m[2]; name = $3
    for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "n" && kv[1] != "bytes" && kv[1] != "p99_us") v[mode, load, name] = kv[2] }
    if (!(name in seen)) { seen[name] = 1; order[++k] = name } }
  function r(a, b, name) {
    if (a == "" || b == "" || b == 0 || a == 0) return "-"
    return sprintf("%.2f", (name ~ /^bandwidth/) ? b / a : a / b)
  }
  END {
    printf "\nOne MPI_COMM_WORLD of 2 Open MPI + 2 MPICH ranks (world) beside one Open MPI job of 4 (native), one host\n"
    printf "latency: one-way median µs; bandwidth: MB/s; allreduce/alltoall: mean µs (slowest rank)\n"
    printf "ratio: world ÷ native (bandwidth: native ÷ world), so > 1 is the cost of the world\n"
    printf "%-20s %10s %10s %7s   %10s %10s %7s\n", "", "quiet", "", "", "contended", "", ""
    printf "%-20s %10s %10s %7s   %10s %10s %7s\n", "operation_bytes", "world", "native", "ratio", "world", "native", "ratio"
    for (i = 1; i <= k; i++) { n = order[i]
      printf "%-20s %10s %10s %7s   %10s %10s %7s\n", n,
        v["world", "quiet", n], v["native", "quiet", n], r(v["world", "quiet", n], v["native", "quiet", n], n),
        v["world", "contended", n], v["native", "contended", n], r(v["world", "contended", n], v["native", "contended", n], n) }
  }' "$OUT/results"
echo "iterations: $ITERS (bandwidth: $((ITERS / 10 + 1)) windows of 64); loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
