#!/usr/bin/env bash
# Installs the MPI implementations that come from the Python registry
# (scripts/mpi/*.sh with impl_pip: Open MPI 5, MPICH 5, Intel MPI) into a
# virtual environment each under $ISTHMUS_MPI_HOME (/opt/isthmus/mpi),
# idempotently: one already there (its mpicc runs) is kept. Debian's two
# come from install-deps.sh. ISTHMUS_MPIS="openmpi5 mpich5" limits the list;
# ISTHMUS_MPIS=none installs nothing.
set -euo pipefail
. "$(dirname "$0")/env.sh"
wanted="${ISTHMUS_MPIS:-$(impls_all)}"
[ "$wanted" = none ] && exit 0
for name in $wanted; do
  impl_load "$name"
  [ -n "$impl_pip" ] || continue
  if [ -x "$impl_mpicc" ]; then continue; fi
  echo "install-mpis: $name ($impl_pip) into $impl_prefix" >&2
  # Staged, then moved into place: the wrappers find their prefix from their
  # own location, so the environment moves whole; a half install never
  # looks installed.
  stage="$impl_prefix.stage"
  rm -rf "$stage"
  mkdir -p "$(dirname "$impl_prefix")"
  /usr/bin/python3 -m venv "$stage"
  # shellcheck disable=SC2086
  "$stage/bin/pip" install --quiet --disable-pip-version-check --root-user-action=ignore $impl_pip
  rm -rf "$impl_prefix"
  mv "$stage" "$impl_prefix"
done
