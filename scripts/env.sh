# Sourced by the project's scripts: where each MPI flavour of the build goes.
# rsmpi picks its MPI from MPICC at build time and mpi-sys does not rebuild
# when MPICC changes, so each implementation gets a target dir of its own.
ISTHMUS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ISTHMUS_ROOT
export ISTHMUS_TARGET_OPENMPI="$ISTHMUS_ROOT/target/openmpi"
export ISTHMUS_TARGET_MPICH="$ISTHMUS_ROOT/target/mpich"
# Open MPI refuses to run as root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Keep Open MPI and MPICH on loopback and off the shared-memory transports'
# sizing surprises; nothing here may talk to another address.
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
[ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"

# The implementations, as a list (scripts/mpi/).
. "$ISTHMUS_ROOT/scripts/mpi/impls.sh"

# Builds with one implementation: build_with NAME cargo-args... (NAME one of
# scripts/mpi/*.sh: openmpi, mpich, openmpi5, mpich5, impi, ...), into
# target/NAME with that implementation's MPICC (and its environment).
build_with() {
  local impl="$1"; shift
  impl_load "$impl" || return 2
  # shellcheck disable=SC2086
  env $impl_env MPICC="$impl_mpicc" CARGO_TARGET_DIR="$ISTHMUS_ROOT/target/$impl" cargo "$@"
}

# prime_target NAME [FROM]: starts target/NAME as a copy of FROM (default
# target/mpich: the same dependencies, already built for libisthmus, and the
# smallest) with mpi-sys cleaned, since mpi-sys does not rebuild by itself
# when MPICC changes; done again when NAME's MPICC is not the one
# target/NAME was built with. Only what sees MPI (mpi-sys, rsmpi, the bridge
# and what is above it) is then built again.
prime_target() {
  local t="$ISTHMUS_ROOT/target/$1" from="${2:-$ISTHMUS_TARGET_MPICH}"
  impl_load "$1" || return 2
  [ -f "$t/.isthmus-mpicc" ] && [ "$(cat "$t/.isthmus-mpicc")" = "$impl_mpicc" ] && return 0
  if [ ! -d "$t" ] && [ -d "$from" ]; then
    cp -a "$from" "$t"
  fi
  build_with "$1" clean --release -q -p mpi-sys
  echo "$impl_mpicc" >"$t/.isthmus-mpicc"
}

# start_vmd DIR [vmd args...]: starts the vmd (Open MPI build) with its
# runtime directory (Unix socket, token file) in DIR/run, waits until it
# listens, exports ISTHMUS_VMD (unix:DIR/run/vmd.sock) and sets VMD_PID.
# Clients of the same user need nothing else: the vmd checks their uid.
start_vmd() {
  local dir="$1"; shift
  RUST_LOG=warn "$ISTHMUS_TARGET_OPENMPI/release/vmd" --runtime-dir "$dir/run" --addr-file "$dir/addr" "$@" &
  VMD_PID=$!
  for _ in $(seq 200); do [ -s "$dir/addr" ] && break; sleep 0.05; done
  [ -s "$dir/addr" ] || { echo "vmd did not start" >&2; return 1; }
  ISTHMUS_VMD="$(cat "$dir/addr")"
  export ISTHMUS_VMD
  echo "vmd at $ISTHMUS_VMD"
}

# bench_start [--contended]: the benchmarks' opening: the load on stderr
# and, with --contended, one CPU-bound process beside what they measure
# (its PID in HOG_PID; bench_stop_hog stops it, by that PID).
bench_start() {
  HOG_PID=""
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" >&2
  if [ "${1:-}" = --contended ]; then
    # BENCH_HOG_CPU pins it (a placement every round shares).
    if [ -n "${BENCH_HOG_CPU:-}" ]; then
      taskset -c "$BENCH_HOG_CPU" bash -c 'while :; do :; done' &
    else
      bash -c 'while :; do :; done' &
    fi
    HOG_PID=$!
    echo "contended: one CPU-bound process beside the pair (pid $HOG_PID${BENCH_HOG_CPU:+, on CPU $BENCH_HOG_CPU})" >&2
  fi
}
bench_stop_hog() {
  if [ -n "${HOG_PID:-}" ]; then
    kill "$HOG_PID" 2>/dev/null || true
    wait "$HOG_PID" 2>/dev/null || true
    HOG_PID=""
  fi
}

# netns_hosts PREFIX NAME:ADDR...: one network namespace PREFIX-NAME per
# host, each with loopback up and eth0 at ADDR/24, joined by a Linux bridge
# in a namespace of its own (PREFIX-sw), so nothing is added to the root
# namespace. Needs root. Undo with netns_remove.
netns_hosts() {
  local prefix="$1" h name addr; shift
  ip netns add "$prefix-sw"
  ip -n "$prefix-sw" link add br0 type bridge
  ip -n "$prefix-sw" link set br0 up
  for h in "$@"; do
    name=${h%%:*} addr=${h#*:}
    ip netns add "$prefix-$name"
    ip -n "$prefix-sw" link add "p$name" type veth peer name eth0 netns "$prefix-$name"
    ip -n "$prefix-sw" link set "p$name" master br0
    ip -n "$prefix-sw" link set "p$name" up
    ip -n "$prefix-$name" link set lo up
    ip -n "$prefix-$name" addr add "$addr/24" dev eth0
    ip -n "$prefix-$name" link set eth0 up
  done
}

# netns_remove PREFIX NAME...: kills what still runs in those namespaces
# (and the bridge's) and deletes them; quiet about ones that do not exist.
netns_remove() {
  local prefix="$1" ns p; shift
  for ns in "${@/#/$prefix-}" "$prefix-sw"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
