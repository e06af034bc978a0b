#!/usr/bin/env bash
# Compiles the coupling demo's two programs into examples/coupling/build/
# (what coupling.toml runs): the ocean with mpifort.openmpi against the Open
# MPI flavour of libisthmus, the atmosphere with mpicc.mpich against the
# MPICH flavour. Builds those libraries first unless ISTHMUS_OPENMPI_LIB_DIR
# and ISTHMUS_MPICH_LIB_DIR name directories already holding them. The
# rpath is DT_RPATH (--disable-new-dtags) so that an LD_LIBRARY_PATH naming
# the other flavour's directory cannot swap the library under a program.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../../scripts/env.sh"
cd "$ISTHMUS_ROOT"
ompi_lib="${ISTHMUS_OPENMPI_LIB_DIR:-}"
mpich_lib="${ISTHMUS_MPICH_LIB_DIR:-}"
if [ -z "$ompi_lib" ]; then
  build_with openmpi build --release -q -p isthmus-capi
  ompi_lib="$ISTHMUS_TARGET_OPENMPI/release"
fi
if [ -z "$mpich_lib" ]; then
  build_with mpich build --release -q -p isthmus-capi
  mpich_lib="$ISTHMUS_TARGET_MPICH/release"
fi
mkdir -p "$here/build"
mpifort.openmpi -O2 -o "$here/build/ocean" "$here/ocean.f90" \
  -L"$ompi_lib" -listhmus -Wl,-rpath,"$ompi_lib" -Wl,--disable-new-dtags
mpicc.mpich -O2 -Wall -o "$here/build/atmosphere" "$here/atmosphere.c" \
  -I bridge/capi/include -L"$mpich_lib" -listhmus -Wl,-rpath,"$mpich_lib" -Wl,--disable-new-dtags -lm
echo "built $here/build/ocean and $here/build/atmosphere"
