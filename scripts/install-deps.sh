#!/usr/bin/env bash
# Installs every system package Isthmus needs on Debian 12, idempotently.
# Used by the README's two commands and by .ci/run.
set -euo pipefail

packages=(
  build-essential pkg-config clang libclang-dev   # bindgen (mpi-sys) needs libclang
  protobuf-compiler libprotobuf-dev               # tonic/prost and etcd-client code generation (etcd-client imports google/protobuf/*.proto)
  openmpi-bin libopenmpi-dev                      # Open MPI: mpicc.openmpi, mpirun.openmpi
  mpich libmpich-dev                              # MPICH: mpicc.mpich, mpiexec.mpich
  gfortran                                        # mpifort.openmpi / mpifort.mpich (Fortran tests)
  python3-mpi4py                                  # the isthmus Python package and its tests (mpi4py on Open MPI)
  etcd-server etcd-client                         # state store of a multi-host virtual machine
  pvm pvm-dev                                     # reference for the group-service benchmark
  iproute2 passwd util-linux                      # security tests: network namespaces (ip), test users (useradd), setpriv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages (${missing[*]}); run as root" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    :
  else
    echo "install-deps: cargo not found; install Rust (rustup) first" >&2
    exit 1
  fi
fi
