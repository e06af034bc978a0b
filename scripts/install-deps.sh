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
  python3-pip python3-dev python3-venv            # building mpi4py against MPICH (below); the registry's MPIs (install-mpis.sh)
  etcd-server etcd-client                         # state store of a multi-host virtual machine
  pvm pvm-dev                                     # reference for the group-service benchmark
  iproute2 passwd util-linux                      # security tests: network namespaces (ip), test users (useradd), setpriv
  environment-modules systemd                     # the installed prefix's modulefile and systemd units (tests/install.rs: module load, systemd-analyze verify)
  slurm-wlm munge                                 # Slurm tests: slurmctld, slurmd, sbatch, srun, and munged (each test starts its own, testkit/src/slurm.rs)
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
  # No package may start its service (munge, slurmctld, slurmd, etcd): the
  # tests start their own, and a daemon failing to start without its
  # configuration would fail the install. Docker's images have this policy;
  # elsewhere it holds for this install only.
  policy=/usr/sbin/policy-rc.d own_policy=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
  [ -z "$own_policy" ] || rm -f "$policy"
fi

# mpi4py built with MPICH (Debian's python3-mpi4py is built with Open MPI),
# for the Python tests across implementations: one fixed directory, outside
# any checkout, put on PYTHONPATH by the tests (ISTHMUS_MPI4PY_MPICH). Built
# from source by Debian's pip into a staging directory, checked (its MPI
# module must link libmpich), then moved into place; skipped when present.
MPI4PY_VERSION=4.1.2
MPI4PY_MPICH=${ISTHMUS_MPI4PY_MPICH:-/opt/isthmus/mpi4py-mpich}
mpi4py_mpich_ok() {
  local so
  so=$(find "$MPI4PY_MPICH/mpi4py" -maxdepth 1 -name 'MPI.*.so' 2>/dev/null | head -n 1)
  [ -n "$so" ] && [ "$(cat "$MPI4PY_MPICH/.isthmus-mpi4py-version" 2>/dev/null)" = "$MPI4PY_VERSION" ] &&
    links_mpich "$so"
}
# (Not `ldd | grep -q`: grep -q stops reading at the first match, ldd then
# dies of SIGPIPE, and under pipefail the check fails at random.)
links_mpich() {
  local deps
  deps=$(ldd "$1" 2>/dev/null) || return 1
  [[ "$deps" == *libmpich.so* ]]
}
if ! mpi4py_mpich_ok; then
  echo "install-deps: building mpi4py $MPI4PY_VERSION with MPICH into $MPI4PY_MPICH" >&2
  mkdir -p "$(dirname "$MPI4PY_MPICH")"
  stage=$(mktemp -d "$MPI4PY_MPICH.stage.XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  # --target installs outside the system site-packages (no PEP 668 clash);
  # --no-binary: a wheel from PyPI would bring its own MPI, not Debian's MPICH.
  MPICC=mpicc.mpich /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
    --no-cache-dir --no-binary mpi4py --target "$stage" "mpi4py==$MPI4PY_VERSION"
  so=$(find "$stage/mpi4py" -maxdepth 1 -name 'MPI.*.so' | head -n 1)
  if [ -z "$so" ] || ! links_mpich "$so"; then
    echo "install-deps: the mpi4py built in $stage does not link libmpich:" >&2
    [ -n "$so" ] && ldd "$so" >&2
    exit 1
  fi
  echo "$MPI4PY_VERSION" >"$stage/.isthmus-mpi4py-version"
  chmod 755 "$stage"
  rm -rf "$MPI4PY_MPICH"
  mv "$stage" "$MPI4PY_MPICH"
  trap - EXIT
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    :
  else
    echo "install-deps: cargo not found; install Rust (rustup) first" >&2
    exit 1
  fi
fi
