#!/usr/bin/env bash
# One MPI_COMM_WORLD across implementations (issue 19, item 4): OSU-style
# latency (0 B to 64 KiB, one-way median), bandwidth (64 KiB, 1 MiB,
# windows of 64) between world rank 0 and the last rank, and Allreduce and
# Alltoall (8 B to 1 MiB, the slowest rank's mean) on MPI_COMM_WORLD of a
# world of 2 Open MPI + 2 MPICH ranks (ISTHMUS_WORLD, each part started by
# its own launcher), beside one native Open MPI job of 4 ranks running the
# same program without the library, in the same run. Each is measured
# quiet, then beside one CPU-bound process (bench_start --contended, stopped
# by its PID). One table, with the ratios world ÷ native.
# The program is bridge/capi/bench/world.c.
#
# Two placements:
#   (default)  all on this host.
#   --hosts    two hosts as network namespaces joined by a Linux bridge
#              (scripts/env.sh's netns_hosts, as bench/hosts-data.sh): the
#              Open MPI part (world ranks 0, 1) on host A, the MPICH part
#              (2, 3) on host B, each rank's bridge listening on its host's
#              address (ISTHMUS_DATA_ADDR), so what crosses the parts goes
#              over TCP between 10.79.<k>.1 and .2; one vmd in the root
#              namespace on its filesystem Unix socket (the vmd carries no
#              data). The native reference is one Open MPI job spanning the
#              same two namespaces, ranks 0, 1 on A and 2, 3 on B, started
#              by mpirun on A with a launch agent (plm_rsh_agent) that runs
#              B's orted in B's namespace, under a host name of its own
#              (unshare --uts: with one host name Open MPI takes the ranks
#              of both hosts for neighbours and its shared-memory transport
#              crashes); its ranks use shared memory within a host and TCP
#              (btl_tcp_if_include 10.79.<k>.0/24) across, as the world's
#              parts do, and yield when idle as --oversubscribe makes them
#              on one host (the hostfile's 2 slots per host hide that the 4
#              ranks share this machine's cores: without it, busy-polling
#              ranks took 10 ms scheduler slices per message here). Each run's bytes through the switch are printed,
#              which shows the traffic went between the hosts. Needs root
#              and iproute2, util-linux (unshare).
#
# usage: bench/world.sh [--no-build] [--hosts] [iters]   (default 1000; `5` is a smoke run)
# Every run is bounded (BENCH_WORLD_TIMEOUT seconds, default 600); the trap
# stops only the processes started here (by PID) and deletes only the
# namespaces created here.
set -euo pipefail
. "$(dirname "$0")/../scripts/env.sh"
BUILD=1 HOSTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0; shift ;;
    --hosts) HOSTS=1; shift ;;
    *) break ;;
  esac
done
ITERS=${1:-1000}
RUN_TIMEOUT=${BENCH_WORLD_TIMEOUT:-600}
cd "$ISTHMUS_ROOT"
fail() { echo "bench-world: ERROR: $*" >&2; exit 1; }
if [ $HOSTS = 1 ]; then
  [ "$(id -u)" = 0 ] || fail "--hosts needs root (network namespaces)"
  command -v ip >/dev/null || fail "ip (iproute2) not found"
  command -v unshare >/dev/null || fail "unshare (util-linux) not found"
fi
if [ $BUILD = 1 ]; then
  build_with mpich build --release -q -p isthmus-capi
  build_with openmpi build --release -q -p isthmus-vmd --bins
  build_with openmpi build --release -q -p isthmus-capi
fi
OUT=$(mktemp -d /tmp/isthmus-bench-world.XXXXXX)
NS="isthmus-bw$$"
cleanup() {
  bench_stop_hog
  if [ $HOSTS = 1 ]; then netns_remove "$NS" h1 h2; fi
  if [ -n "${VMD_PID:-}" ]; then kill "$VMD_PID" 2>/dev/null || true; fi
  rm -rf "$OUT"
}
trap cleanup EXIT
O="$ISTHMUS_TARGET_OPENMPI/release" M="$ISTHMUS_TARGET_MPICH/release"
SRC=bridge/capi/bench/world.c
mpicc.openmpi -O2 -o "$OUT/world-ompi" "$SRC" -L"$O" -listhmus -Wl,-rpath,"$O" -Wl,--disable-new-dtags
mpicc.mpich -O2 -o "$OUT/world-mpich" "$SRC" -L"$M" -listhmus -Wl,-rpath,"$M" -Wl,--disable-new-dtags
# The reference without the library.
mpicc.openmpi -O2 -o "$OUT/world-plain" "$SRC"

# How each part and the reference are started: on this host, or each part
# in its host's namespace (A_RUN, B_RUN prefixes) with its data address.
A_RUN=() B_RUN=() A_ENV=() B_ENV=()
if [ $HOSTS = 1 ]; then
  K=$(( $$ % 250 + 1 ))
  A_ADDR="10.79.$K.1" B_ADDR="10.79.$K.2" NET="10.79.$K.0/24"
  netns_hosts "$NS" "h1:$A_ADDR" "h2:$B_ADDR"
  echo "hosts: $NS-h1 ($A_ADDR, the Open MPI part), $NS-h2 ($B_ADDR, the MPICH part)" >&2
  A_RUN=(ip netns exec "$NS-h1") B_RUN=(ip netns exec "$NS-h2")
  A_ENV=(-x ISTHMUS_DATA_ADDR="$A_ADDR") B_ENV=(-genv ISTHMUS_DATA_ADDR "$B_ADDR")
  # Open MPI's launch agent: `agent HOST orted-command` runs the command in
  # HOST's namespace under the host name HOST.
  cat >"$OUT/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in
  $A_ADDR) ns=$NS-h1 ;;
  $B_ADDR) ns=$NS-h2 ;;
  *) echo "agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$0" && eval "\$1"' "\$host" "\$*"
AGENT
  chmod +x "$OUT/agent"
  printf '%s slots=2\n%s slots=2\n' "$A_ADDR" "$B_ADDR" >"$OUT/hostfile"
  native() {
    ip netns exec "$NS-h1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$A_ADDR" \
      timeout "$RUN_TIMEOUT" mpirun.openmpi -n 4 --map-by slot --hostfile "$OUT/hostfile" \
      --mca plm_rsh_agent "$OUT/agent" --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 \
      --mca btl_tcp_if_include "$NET" --mca oob_tcp_if_include "$NET" \
      "$OUT/world-plain" native "$ITERS"
  }
  switch_bytes() { ip -n "$NS-sw" -s -j link show "ph2" | sed -n 's/.*"rx":{"bytes":\([0-9]*\).*"tx":{"bytes":\([0-9]*\).*/\1 \2/p'; }
else
  native() { timeout "$RUN_TIMEOUT" mpirun.openmpi --oversubscribe -n 4 "$OUT/world-plain" native "$ITERS"; }
fi
start_vmd "$OUT" >&2

# run LABEL: the world (Open MPI part 0, MPICH part 1), then the native job;
# RESULT lines with the label after the mode. (The group is the left side
# of `||`, where set -e does not hold: each step says how it failed.)
run() {
  local label="$1" name="bench-world-$1-$$" before after
  [ $HOSTS = 1 ] && before=$(switch_bytes)
  {
    "${B_RUN[@]}" timeout "$RUN_TIMEOUT" mpiexec.mpich -n 2 -genv ISTHMUS_VMD "$ISTHMUS_VMD" \
      -genv ISTHMUS_WORLD "$name:1/2" "${B_ENV[@]}" "$OUT/world-mpich" world "$ITERS" &
    local pid=$!
    "${A_RUN[@]}" timeout "$RUN_TIMEOUT" mpirun.openmpi --oversubscribe -n 2 -x ISTHMUS_VMD \
      -x ISTHMUS_WORLD="$name:0/2" "${A_ENV[@]}" "$OUT/world-ompi" world "$ITERS" || fail "the world's Open MPI part failed"
    wait "$pid" || fail "the world's MPICH part failed"
    if [ $HOSTS = 1 ]; then
      after=$(switch_bytes)
      echo "bytes between the hosts, world: $(( ${after% *} + ${after#* } - ${before% *} - ${before#* } ))" >&2
      before=$after
    fi
    native || fail "the native job failed"
    if [ $HOSTS = 1 ]; then
      after=$(switch_bytes)
      echo "bytes between the hosts, native: $(( ${after% *} + ${after#* } - ${before% *} - ${before#* } ))" >&2
    fi
  } 2>"$OUT/stderr.$label" | grep '^RESULT' | sed "s/^RESULT \([a-z]*\)_/RESULT \1:$label /" >>"$OUT/results" \
    || { cat "$OUT/stderr.$label" >&2; exit 1; }
  [ $HOSTS = 1 ] && grep '^bytes between' "$OUT/stderr.$label" | sed "s/^/$label: /" >>"$OUT/traffic"
  return 0
}
bench_start
run quiet
bench_start --contended
run contended
bench_stop_hog

if [ $HOSTS = 1 ]; then
  PLACE="two network-namespace hosts (Open MPI part on $A_ADDR, MPICH part on $B_ADDR; native: 2 ranks on each)"
else
  PLACE="one host"
fi
awk -v place="$PLACE" '
  { split($2, m, ":"); mode = m[1]; load = m[2]; name = $3
    for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "n" && kv[1] != "bytes" && kv[1] != "p99_us") v[mode, load, name] = kv[2] }
    if (!(name in seen)) { seen[name] = 1; order[++k] = name } }
  function r(a, b, name) {
    if (a == "" || b == "" || b == 0 || a == 0) return "-"
    return sprintf("%.2f", (name ~ /^bandwidth/) ? b / a : a / b)
  }
  END {
    printf "\nOne MPI_COMM_WORLD of 2 Open MPI + 2 MPICH ranks (world) beside one Open MPI job of 4 (native), %s\n", place
    printf "latency: one-way median µs; bandwidth: MB/s; allreduce/alltoall: mean µs (slowest rank)\n"
    printf "ratio: world ÷ native (bandwidth: native ÷ world), so > 1 is the cost of the world\n"
    printf "%-20s %10s %10s %7s   %10s %10s %7s\n", "", "quiet", "", "", "contended", "", ""
    printf "%-20s %10s %10s %7s   %10s %10s %7s\n", "operation_bytes", "world", "native", "ratio", "world", "native", "ratio"
    for (i = 1; i <= k; i++) { n = order[i]
      printf "%-20s %10s %10s %7s   %10s %10s %7s\n", n,
        v["world", "quiet", n], v["native", "quiet", n], r(v["world", "quiet", n], v["native", "quiet", n], n),
        v["world", "contended", n], v["native", "contended", n], r(v["world", "contended", n], v["native", "contended", n], n) }
  }' "$OUT/results"
[ $HOSTS = 1 ] && cat "$OUT/traffic"
echo "iterations: $ITERS (bandwidth: $((ITERS / 10 + 1)) windows of 64); loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
