# Intel MPI from the Python registry (impi-rt, impi-devel); MPICH's ABI
# family. Its wrappers and launcher need I_MPI_ROOT, the installation.
impl_family=mpich
impl_prefix="${impl_prefix:-$ISTHMUS_MPI_HOME/impi}"
impl_mpicc="$impl_prefix/bin/mpicc"
impl_mpifort="$impl_prefix/bin/mpif90"   # gfortran underneath
impl_mpiexec="$impl_prefix/bin/mpiexec.hydra"
impl_env="I_MPI_ROOT=$impl_prefix"
impl_pip="impi-rt==2021.18.1 impi-devel==2021.18.1"
