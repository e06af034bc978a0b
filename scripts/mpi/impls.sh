# Sourced by env.sh: the MPI implementations Isthmus builds and tests a
# flavour for, as a list. Each is one file beside this one, NAME.sh, that
# sets (and may use $ISTHMUS_MPI_HOME, where the registry's MPIs go):
#   impl_family   openmpi | mpich — the ABI family: handles, launcher
#                 options and libisthmus's Fortran entry points follow it
#                 (Intel MPI is of MPICH's family);
#   impl_prefix   the installation ("" for Debian's packages, whose
#                 wrappers are on PATH); ISTHMUS_MPI_<NAME>=PREFIX overrides;
#   impl_mpicc, impl_mpifort, impl_mpiexec   its wrappers and launcher;
#   impl_env      VAR=VALUE words its wrappers and jobs need (Intel's I_MPI_ROOT);
#   impl_pip      the Python registry's packages that install it into
#                 impl_prefix (install-mpis.sh), "" for Debian's packages;
#   impl_ldflags  what a program's link needs besides its wrapper's (optional).
# Adding an implementation is adding one such file (and, for its jobs to be
# started by the virtual machine, a launcher in taskers/).

ISTHMUS_MPI_HOME="${ISTHMUS_MPI_HOME:-/opt/isthmus/mpi}"
export ISTHMUS_MPI_HOME

# impls_all: every implementation that has a file, Debian's two first.
impls_all() {
  local f n
  echo openmpi mpich
  for f in "$ISTHMUS_ROOT"/scripts/mpi/*.sh; do
    n=$(basename "$f" .sh)
    case "$n" in impls | openmpi | mpich) ;; *) echo "$n" ;; esac
  done
}

# impl_load NAME: sets the impl_* variables of NAME; fails for an unknown one.
impl_load() {
  local f="$ISTHMUS_ROOT/scripts/mpi/$1.sh" over
  [ "$1" != impls ] && [ -f "$f" ] || { echo "unknown MPI implementation: $1" >&2; return 2; }
  impl_family='' impl_prefix='' impl_mpicc='' impl_mpifort='' impl_mpiexec='' impl_env='' impl_pip='' impl_ldflags=''
  over="ISTHMUS_MPI_$(echo "$1" | tr '[:lower:]-' '[:upper:]_')"
  impl_prefix="${!over:-}"
  # shellcheck disable=SC1090
  . "$f"
}

# impl_installed NAME: its C wrapper runs.
impl_installed() {
  impl_load "$1" || return 1
  command -v "$impl_mpicc" >/dev/null 2>&1
}

# impls_installed: the installed ones, Debian's two first.
impls_installed() {
  local n out=()
  for n in $(impls_all); do
    (impl_installed "$n") && out+=("$n")
  done
  echo "${out[@]}"
}
