# MPICH 5 from the Python registry (package mpich), launcher Hydra's mpiexec.
impl_family=mpich
impl_prefix="${impl_prefix:-$ISTHMUS_MPI_HOME/mpich5}"
impl_mpicc="$impl_prefix/bin/mpicc"
impl_mpifort=""   # the registry's package has no Fortran wrapper
impl_mpiexec="$impl_prefix/bin/mpiexec.hydra"
impl_pip="mpich==5.0.2"
