/*
 * MPICH's irecv_any: its test/mpi/pt2pt/Makefile.am builds recv_any.c
 * again with -DTEST_NB (MPI_Irecv with MPI_ANY_SOURCE instead of MPI_Recv).
 * Isthmus's, not MPICH's: the runner passes no compiler flags, so this file
 * defines the macro and includes MPICH's unmodified source.
 */
#define TEST_NB
#include "recv_any.c"
