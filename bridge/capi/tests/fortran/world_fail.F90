! Failures in one MPI_COMM_WORLD across implementations (ISTHMUS_WORLD),
! from Fortran (`use mpi`, or with -DUSE_MPIF_H `include 'mpif.h'`): the
! world's last rank (in part 1) ends abnormally while the others wait, as
! tests/c/world_fail.c does from C.
! Usage: world_fail MODE
!   abort - the last rank calls MPI_Abort(MPI_COMM_WORLD, 7) while every
!           other rank waits in a receive from its own part that nothing
!           will match: only the abort can end them.
!   kill  - the last rank kills itself (SIGKILL); its part's other ranks
!           wait in a receive from it (their launcher ends them). Part 0's
!           ranks, under MPI_ERRORS_RETURN: a receive from the dead rank, a
!           send to it and an Allreduce on the world each return an error
!           whose string says which rank failed; then MPI_Finalize.
!           Prints "PASS fortran kill rank R" per rank of part 0.
program world_fail
#ifndef USE_MPIF_H
  use mpi
#endif
  implicit none
#ifdef USE_MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, nprocs, last, x, total, peer, st(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: appnum
  logical :: flag
  character(len=16) :: mode
  character(len=32) :: naming

  call MPI_Init(ierr)
  call get_command_argument(1, mode)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, appnum, flag, ierr)
  if (.not. flag) call fail('no MPI_APPNUM on the world')
  last = nprocs - 1
  x = 0
  ! Every rank is connected and in the world before the failure.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)

  if (mode == 'abort') then
    if (rank == last) call MPI_Abort(MPI_COMM_WORLD, 7, ierr)
    ! A receive within this rank's part that nothing matches.
    peer = rank - 1
    if (rank == 0) peer = 1
    call MPI_Recv(x, 1, MPI_INTEGER, peer, 99, MPI_COMM_WORLD, st, ierr)
    call fail('the receive that nothing matches returned')
  end if
  if (mode /= 'kill') call fail('unknown mode '//trim(mode))
  if (appnum == 1) then
    if (rank == last) call kill(getpid(), 9)
    call MPI_Recv(x, 1, MPI_INTEGER, last, 99, MPI_COMM_WORLD, st, ierr)
    call fail('a receive from the killed rank returned')
  end if
  write (naming, '(a,i0,a)') 'rank ', last, ' of this communicator'
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call MPI_Recv(x, 1, MPI_INTEGER, last, 99, MPI_COMM_WORLD, st, ierr)
  call expect_failure(ierr, 'MPI_Recv', trim(naming))
  call MPI_Send(x, 1, MPI_INTEGER, last, 99, MPI_COMM_WORLD, ierr)
  call expect_failure(ierr, 'MPI_Send', trim(naming))
  ! Which rank of part 1 the leader finds gone first is the race of their
  ! deaths: any "rank N of this communicator".
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call expect_failure(ierr, 'MPI_Allreduce', 'of this communicator')
  print '(a,i0)', 'PASS fortran kill rank ', rank
  call MPI_Finalize(ierr)

contains

  ! The error string of code, which must be an error naming the failure.
  subroutine expect_failure(code, call_name, naming)
    integer, intent(in) :: code
    character(len=*), intent(in) :: call_name, naming
    character(len=MPI_MAX_ERROR_STRING) :: msg
    integer :: length, e
    if (code == MPI_SUCCESS) call fail(call_name//' involving the dead rank succeeded')
    call MPI_Error_string(code, msg, length, e)
    if (index(msg(1:length), 'has failed') == 0 .or. index(msg(1:length), naming) == 0) &
      call fail(call_name//': error string "'//msg(1:length)//'" does not name "'//naming//'"')
    print '(a,i0,a,a,a,a)', 'rank ', rank, ': ', call_name, ': ', msg(1:length)
  end subroutine expect_failure

  subroutine fail(what)
    character(len=*), intent(in) :: what
    integer :: e
    print '(a,i0,a,a)', 'rank ', rank, ': FAIL ', what
    call MPI_Abort(MPI_COMM_WORLD, 2, e)
  end subroutine fail
end program world_fail
