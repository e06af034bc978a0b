! The MPI's own Fortran sentinels in a program linked with libisthmus, on
! MPI_COMM_WORLD of one job (no Isthmus communicator): MPI_IN_PLACE,
! MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE and MPI_UNWEIGHTED reach the MPI's
! own binding as themselves. (MPICH's binding recognizes them by the
! addresses of the program's common blocks, which the program exports only
! if its link saw MPICH's Fortran library: libisthmus depends on it.)
! `use mpi`, or `mpif.h` with -DUSE_MPIF_H. 2 ranks; prints
! "PASS sentinels rank R" per rank.
program sentinels
#ifndef USE_MPIF_H
  use mpi
#endif
  implicit none
#ifdef USE_MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, x(3), y, req(2), graph, indeg, outdeg, srcs(1), nb(1)
  logical :: weighted

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = (/rank + 1, 10 * (rank + 1), -7/)
  call MPI_Allreduce(MPI_IN_PLACE, x, 3, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (x(1) /= 3 .or. x(2) /= 30 .or. x(3) /= -14) call fail('MPI_IN_PLACE allreduce', x(1))
  y = -1
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, 1 - rank, 4, y, 1, MPI_INTEGER, 1 - rank, 4, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (y /= 1 - rank) call fail('sendrecv with MPI_STATUS_IGNORE', y)
  call MPI_Irecv(y, 1, MPI_INTEGER, 1 - rank, 5, MPI_COMM_WORLD, req(1), ierr)
  call MPI_Isend(rank + 40, 1, MPI_INTEGER, 1 - rank, 5, MPI_COMM_WORLD, req(2), ierr)
  call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  if (y /= 41 - rank) call fail('waitall with MPI_STATUSES_IGNORE', y)
  srcs(1) = 1 - rank
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, srcs, &
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, .false., graph, ierr)
  call MPI_Dist_graph_neighbors_count(graph, indeg, outdeg, weighted, ierr)
  if (weighted .or. indeg /= 1 .or. outdeg /= 1) call fail('MPI_UNWEIGHTED graph', indeg)
  call MPI_Dist_graph_neighbors(graph, 1, nb, MPI_UNWEIGHTED, 1, srcs, MPI_UNWEIGHTED, ierr)
  if (nb(1) /= 1 - rank) call fail('neighbours with MPI_UNWEIGHTED', nb(1))
  call MPI_Comm_free(graph, ierr)
  print '(a,i0)', 'PASS sentinels rank ', rank
  call MPI_Finalize(ierr)

contains

  subroutine fail(what, got)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got
    integer :: e
    print '(a,i0,a,a,a,i0)', 'rank ', rank, ': FAIL ', what, ': ', got
    call MPI_Abort(MPI_COMM_WORLD, 2, e)
  end subroutine fail
end program sentinels
