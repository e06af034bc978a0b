# Open MPI 4.1 of Debian 12 (packages openmpi-bin, libopenmpi-dev).
impl_family=openmpi
impl_mpicc=mpicc.openmpi
impl_mpifort=mpifort.openmpi
impl_mpiexec=mpirun.openmpi
