# MPICH 4.0 of Debian 12 (packages mpich, libmpich-dev).
impl_family=mpich
impl_mpicc=mpicc.mpich
impl_mpifort=mpifort.mpich
impl_mpiexec=mpiexec.mpich
