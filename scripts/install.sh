#!/usr/bin/env bash
# Installs Isthmus into PREFIX (issue 10, item 4; issue 21, item 3):
#   PREFIX/bin/vmd, PREFIX/bin/isthmus, PREFIX/bin/tasker  the daemon, the console, the launcher of jobs
#   PREFIX/lib/isthmus/{openmpi,mpich}/libisthmus.so   the library, one per MPI implementation
#   PREFIX/lib/isthmus/{openmpi,mpich}/libisthmus_f08.a  the isthmus_f08 module's code
#   PREFIX/lib/isthmus/{openmpi,mpich}/libisthmus_vm.a   the isthmus_vm module's code (the
#                                                      virtual machine's calls from Fortran)
#   PREFIX/include/isthmus.h                           the C header
#   PREFIX/include/isthmus/{openmpi,mpich}/isthmus_f08.mod  the use mpi_f08 module
#   PREFIX/include/isthmus/{openmpi,mpich}/isthmus_vm.mod   the isthmus_vm module
#   PREFIX/lib/pkgconfig/isthmus-{openmpi,mpich}.pc    so that, e.g.,
#     mpicc.openmpi app.c $(pkg-config --cflags --libs isthmus-openmpi)
#     mpifort.mpich app.f90 $(pkg-config --cflags --libs isthmus-mpich)
# build a program (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig).
#   PREFIX/lib/python/isthmus                          the Python package (pip install of
#                                                      bridge/capi/python, its pyproject.toml)
#   PREFIX/lib/systemd/user/isthmus-vmd.service        a vmd per user, as PVM's pvmd, and one
#   PREFIX/lib/systemd/user/isthmus-tasker@.service    tasker per implementation (instance = its name)
#   PREFIX/share/modulefiles/isthmus/VERSION           environment-modules / Lmod: PATH,
#                                                      PKG_CONFIG_PATH, PYTHONPATH, ISTHMUS_PREFIX
# Every other implementation of scripts/mpi/ whose libisthmus is built
# (target/NAME/release: scripts/test.sh builds one for each installed) is
# installed the same way under its name (isthmus-openmpi5, isthmus-mpich5,
# isthmus-impi); each .pc also names the implementation's own wrappers and
# launcher: pkg-config --variable=mpicc isthmus-impi (likewise mpifort,
# mpiexec; mpifort is empty where the implementation has none).
#
# Usage: bash scripts/install.sh [--no-build] PREFIX
#   --no-build: install what target/{openmpi,mpich}/release already hold.
# Builds in release mode first; safe to run again (files are replaced).
set -euo pipefail
build=1
if [ "${1:-}" = "--no-build" ]; then build=0; shift; fi
if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: bash scripts/install.sh [--no-build] PREFIX" >&2
  exit 2
fi
. "$(dirname "$0")/env.sh"
bash "$ISTHMUS_ROOT/scripts/install-deps.sh"
cd "$ISTHMUS_ROOT"
mkdir -p "$1"
prefix="$(cd "$1" && pwd)"
version="$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)"

if [ "$build" = 1 ]; then
  echo "== building (release): vmd, isthmus, tasker, libisthmus for Open MPI and for MPICH"
  build_with openmpi build --release -q -p isthmus-vmd --bin vmd --bin isthmus
  build_with openmpi build --release -q -p isthmus-taskers --bin tasker
  build_with openmpi build --release -q -p isthmus-capi
  build_with mpich build --release -q -p isthmus-capi
fi

install -d "$prefix/bin" "$prefix/include" "$prefix/lib/pkgconfig"
for b in vmd isthmus tasker; do
  src="$ISTHMUS_TARGET_OPENMPI/release/$b"
  [ -x "$src" ] || { echo "install: $src is missing (build it, or drop --no-build)" >&2; exit 1; }
  install -m 0755 "$src" "$prefix/bin/$b"
done
install -m 0644 bridge/capi/include/isthmus.h "$prefix/include/isthmus.h"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Compiles the Fortran module bridge/capi/fortran/$1.f90 with this
# implementation's mpifort (if it has one) into $libdir/lib$1.a and
# $moddir/$1.mod; its compiler's messages go to $work/$impl/$1.err.
fortran_module() {
  local m=$1
  [ -n "$impl_mpifort" ] || return 1
  mkdir -p "$work/$impl"
  # shellcheck disable=SC2086
  env $impl_env "$impl_mpifort" -O2 -fPIC -c -J "$work/$impl" -o "$work/$impl/$m.o" \
    "bridge/capi/fortran/$m.f90" 2>"$work/$impl/$m.err" || return 1
  rm -f "$libdir/lib$m.a"
  ar rcs "$libdir/lib$m.a" "$work/$impl/$m.o"
  install -m 0644 "$work/$impl/$m.mod" "$moddir/$m.mod"
}

for impl in $(impls_installed); do
  impl_load "$impl"
  lib="$ISTHMUS_ROOT/target/$impl/release/libisthmus.so"
  case "$impl" in
    openmpi | mpich) [ -f "$lib" ] || { echo "install: $lib is missing (build it, or drop --no-build)" >&2; exit 1; } ;;
    *) [ -f "$lib" ] || continue ;;
  esac
  libdir="$prefix/lib/isthmus/$impl"
  moddir="$prefix/include/isthmus/$impl"
  install -d "$libdir" "$moddir"
  install -m 0755 "$lib" "$libdir/libisthmus.so"

  # The use mpi_f08 module, compiled by this implementation's mpifort
  # (Debian's two must have it; another may have no Fortran this way), and
  # the isthmus_vm module (no MPI module used: any mpifort compiles it).
  f08=""
  for m in isthmus_f08 isthmus_vm; do
    if fortran_module "$m"; then
      f08="${f08:+$f08 }-l$m"
    elif [ "$impl" = openmpi ] || [ "$impl" = mpich ]; then
      echo "install: the $m module does not compile with $impl_mpifort:" >&2
      cat "$work/$impl/$m.err" >&2
      exit 1
    else
      echo "install: $impl: no $m module (${impl_mpifort:-no Fortran wrapper}${impl_mpifort:+ cannot compile it})" >&2
    fi
  done

  name="$impl"
  case "$impl" in openmpi) name="Open MPI" ;; mpich) name="MPICH" ;; abi) name="MPI 5.0 standard ABI (mpicc_abi; MPICH 5, Intel MPI)" ;; esac
  cat > "$prefix/lib/pkgconfig/isthmus-$impl.pc" <<PC
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib/isthmus/$impl
mpicc=$(command -v "$impl_mpicc")
mpifort=$([ -n "$impl_mpifort" ] && command -v "$impl_mpifort")
mpiexec=$(command -v "$impl_mpiexec")

Name: isthmus-$impl
Description: Isthmus for $name programs: Isthmus_Register/Intercomm_create, then plain MPI to separately started jobs (build with its mpicc or mpifort: pkg-config --variable=mpicc)
Version: $version
Cflags: -I\${includedir} -I\${includedir}/isthmus/$impl
Libs: -L\${libdir} -Wl,-rpath,\${libdir} $f08 -listhmus${impl_ldflags:+ $impl_ldflags}
PC
done
# The Python package, built from its pyproject.toml by Debian's pip (the
# interpreter the mpi4py builds are for) in a copy, so that the checkout
# gets no build/ or egg-info. --no-deps: mpi4py must be the build for the
# program's MPI (Debian's for Open MPI; one built with MPICH), not PyPI's.
echo "== Python package -> $prefix/lib/python"
cp -r bridge/capi/python "$work/python"
rm -rf "$prefix/lib/python/isthmus" "$prefix/lib/python"/isthmus-*.dist-info
/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
  --no-deps --no-build-isolation --no-compile --upgrade --target "$prefix/lib/python" "$work/python"

# systemd user units: a vmd per user (the runtime directory is the
# user's, %t/isthmus, which is where the console and taskers look by
# default) and a tasker per implementation, bound to the vmd (a tasker
# exits when its vmd goes; Restart brings it back with the vmd).
units="$prefix/lib/systemd/user"
install -d "$units"
cat > "$units/isthmus-vmd.service" <<UNIT
[Unit]
Description=Isthmus virtual machine daemon (vmd) of this user on this host
Documentation=file://$prefix/share/doc/isthmus/README.md

[Service]
Type=simple
ExecStart=$prefix/bin/vmd --runtime-dir %t/isthmus
Restart=on-failure
RestartSec=2

[Install]
WantedBy=default.target
UNIT
cat > "$units/isthmus-tasker@.service" <<UNIT
[Unit]
Description=Isthmus tasker: launches %i jobs for this user's vmd
BindsTo=isthmus-vmd.service
After=isthmus-vmd.service

[Service]
Type=simple
Environment=ISTHMUS_VMD=unix:%t/isthmus/vmd.sock
ExecStart=$prefix/bin/tasker --impl %i
# The vmd may still be starting: try again.
Restart=on-failure
RestartSec=1

[Install]
WantedBy=isthmus-vmd.service
UNIT

install -d "$prefix/share/doc/isthmus"
install -m 0644 README.md ARCHITECTURE.md "$prefix/share/doc/isthmus/"

# An environment module (Tcl: environment-modules and Lmod both read it).
modules="$prefix/share/modulefiles/isthmus"
install -d "$modules"
cat > "$modules/$version" <<MODULE
#%Module1.0
## Isthmus $version, installed in $prefix by scripts/install.sh
proc ModulesHelp { } {
  puts stderr "Isthmus $version: MPI jobs of different implementations talk (vmd, isthmus, tasker, libisthmus)"
}
module-whatis "Isthmus $version: intercommunicators between separately started MPI jobs of any implementation"
conflict isthmus
prepend-path PATH $prefix/bin
prepend-path PKG_CONFIG_PATH $prefix/lib/pkgconfig
prepend-path PYTHONPATH $prefix/lib/python
setenv ISTHMUS_PREFIX $prefix
MODULE

echo "== installed into $prefix"
echo "   C:       mpicc.openmpi app.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs isthmus-openmpi)"
echo "   Fortran: mpifort.mpich app.f90 \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs isthmus-mpich)"
echo "   module:  module use $prefix/share/modulefiles && module load isthmus"
echo "   systemd: systemctl --user link $units/isthmus-vmd.service $units/isthmus-tasker@.service"
