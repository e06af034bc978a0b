# The MPI 5.0 standard ABI (mpi_abi.h, libmpi_abi.so.1): one libisthmus for
# every implementation that speaks it. Built with MPICH 5's mpicc_abi (from
# the mpich5 entry's installation); its programs run under MPICH 5's or
# Intel MPI's libmpi_abi.so.1, whichever the job's library path names.
# bindgen (mpi-sys) is not given mpicc's -DMPI_ABI by rsmpi: it gets it here.
impl_family=mpich
impl_prefix="${impl_prefix:-$ISTHMUS_MPI_HOME/mpich5}"
impl_mpicc="$impl_prefix/bin/mpicc_abi"
impl_mpifort=""   # no Fortran in the standard ABI's first version
impl_mpiexec="$impl_prefix/bin/mpiexec.hydra"
impl_env="BINDGEN_EXTRA_CLANG_ARGS=-DMPI_ABI"
impl_pip=""       # installed with mpich5 (install-mpis.sh)
# The registry's libmpi_abi.so.1 finds its libfabric through RUNPATH
# $ORIGIN/mpich, which ld does not follow when linking a program: without
# this, Debian's older libfabric is found (fi_getinfo@FABRIC_1.9 undefined).
impl_ldflags="-Wl,-rpath-link,$impl_prefix/lib/mpich"
