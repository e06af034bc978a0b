! One MPI_COMM_WORLD across implementations (ISTHMUS_WORLD), from Fortran:
! `use mpi` (or, with -DUSE_MPIF_H, `include 'mpif.h'`) sees the world of
! both parts: its size and this rank, a send across the parts (world rank 0
! to the last rank and back) and an Allreduce. Usage: world PART0_SIZE.
! Prints "PASS fortran world rank R of N" per rank.
program world
#ifndef USE_MPIF_H
  use mpi
#endif
  implicit none
#ifdef USE_MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, nprocs, n0, x, total, last, st(MPI_STATUS_SIZE)
  character(len=16) :: arg

  call MPI_Init(ierr)
  call get_command_argument(1, arg)
  read (arg, *) n0
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 4 .or. n0 /= 2) call fail('world size', nprocs)
  last = nprocs - 1
  if (rank == 0) then
    x = 42
    call MPI_Send(x, 1, MPI_INTEGER, last, 5, MPI_COMM_WORLD, ierr)
    call MPI_Recv(x, 1, MPI_INTEGER, last, 6, MPI_COMM_WORLD, st, ierr)
    if (x /= 43 .or. st(MPI_SOURCE) /= last) call fail('reply across', x)
  else if (rank == last) then
    call MPI_Recv(x, 1, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, st, ierr)
    if (x /= 42 .or. st(MPI_SOURCE) /= 0) call fail('send across', x)
    x = 43
    call MPI_Send(x, 1, MPI_INTEGER, 0, 6, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Allreduce(rank + 1, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= nprocs * (nprocs + 1) / 2) call fail('allreduce', total)
  print '(a,i0,a,i0)', 'PASS fortran world rank ', rank, ' of ', nprocs
  call MPI_Finalize(ierr)

contains

  subroutine fail(what, got)
    character(len=*), intent(in) :: what
    integer, intent(in) :: got
    integer :: e
    print '(a,i0,a,a,a,i0)', 'rank ', rank, ': FAIL ', what, ': ', got
    call MPI_Abort(MPI_COMM_WORLD, 2, e)
  end subroutine fail
end program world
