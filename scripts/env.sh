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

# Builds with one implementation: build_with openmpi|mpich cargo-args...
build_with() {
  local impl="$1"; shift
  local target
  case "$impl" in
    openmpi) target="$ISTHMUS_TARGET_OPENMPI" ;;
    mpich) target="$ISTHMUS_TARGET_MPICH" ;;
    *) echo "unknown MPI implementation: $impl" >&2; return 2 ;;
  esac
  MPICC="mpicc.$impl" CARGO_TARGET_DIR="$target" cargo "$@"
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
