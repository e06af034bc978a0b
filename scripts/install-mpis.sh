#!/usr/bin/env bash
# Installs the MPI implementations that come from the Python registry
# (scripts/mpi/*.sh with impl_pip: Open MPI 5, MPICH 5, Intel MPI) into a
# virtual environment each under $ISTHMUS_MPI_HOME (/opt/isthmus/mpi), with
# mpi4py's binary wheel beside each (it loads the environment's MPI at run
# time: nothing is compiled), idempotently: one already there (its mpicc
# runs) is kept, and only given mpi4py if it lacks it. Debian's two come
# from install-deps.sh. ISTHMUS_MPIS="openmpi5 mpich5" limits the list;
# ISTHMUS_MPIS=none installs nothing.
set -euo pipefail
. "$(dirname "$0")/env.sh"
wanted="${ISTHMUS_MPIS:-$(impls_all)}"
[ "$wanted" = none ] && exit 0
# The mpi4py of every environment (tests/matrix.rs's python cells).
MPI4PY="mpi4py==4.1.2"
# pip_in PREFIX ARGS...: the environment's pip, quiet (its scripts' #! lines
# name the staging directory the environment was made in: python3 -m pip).
pip_in() {
  local prefix="$1"; shift
  "$prefix/bin/python3" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$@"
}
for name in $wanted; do
  impl_load "$name"
  [ -n "$impl_pip" ] || continue
  if [ -x "$impl_mpicc" ]; then
    if ! "$impl_prefix/bin/python3" -c 'import mpi4py' 2>/dev/null; then
      echo "install-mpis: $name: $MPI4PY into $impl_prefix" >&2
      pip_in "$impl_prefix" "$MPI4PY"
    fi
    continue
  fi
  echo "install-mpis: $name ($impl_pip) into $impl_prefix" >&2
  # Staged, then moved into place: the wrappers find their prefix from their
  # own location, so the environment moves whole; a half install never
  # looks installed.
  stage="$impl_prefix.stage"
  rm -rf "$stage"
  mkdir -p "$(dirname "$impl_prefix")"
  /usr/bin/python3 -m venv "$stage"
  # shellcheck disable=SC2086
  pip_in "$stage" $impl_pip "$MPI4PY"
  rm -rf "$impl_prefix"
  mv "$stage" "$impl_prefix"
done
