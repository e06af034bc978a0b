! MPI_Comm_join across implementations from Fortran, plain MPI (no Isthmus
! call): the same protocol as tests/c/join.c, against which it runs (one
! rank per job, the other job of the other implementation). One source
! for the three bindings: `use mpi` (the default), `use mpi_f08` (-DF08)
! and `mpif.h` (-DUSE_MPIF_H). The socket is made by tests/c/join_socket.c
! (bind(C)): Fortran has no sockets.
!   join listen FILE   listens on 127.0.0.1, writes the port to FILE,
!                      accepts one connection and joins over it;
!   join connect FILE  connects to the port in FILE and joins.
! Then: the intercommunicator is one with one remote rank; point-to-point
! both ways; Allreduce; a Bcast each way (MPI_ROOT); the socket is still
! usable (one byte each way); disconnect leaves MPI_COMM_NULL. Prints
! "PASS join rank 0".
program join
  use, intrinsic :: iso_c_binding, only : c_int, c_char, c_null_char
#if defined(F08)
  use mpi_f08
#elif !defined(USE_MPIF_H)
  use mpi
#endif
  implicit none
#if defined(USE_MPIF_H)
  include 'mpif.h'
#endif
  interface
    integer(c_int) function join_listen(file) bind(C, name="join_listen")
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: file(*)
    end function join_listen
    integer(c_int) function join_connect(file) bind(C, name="join_connect")
      import :: c_int, c_char
      character(kind=c_char), intent(in) :: file(*)
    end function join_connect
    integer(c_int) function join_swap_byte(fd, out) bind(C, name="join_swap_byte")
      import :: c_int
      integer(c_int), value :: fd, out
    end function join_swap_byte
    subroutine join_close(fd) bind(C, name="join_close")
      import :: c_int
      integer(c_int), value :: fd
    end subroutine join_close
  end interface
#if defined(F08)
  type(MPI_Comm) :: inter
#else
  integer :: inter
#endif
  integer :: ierr, rank, fd, rsize, v, back, mine, total, turn, bad, got
  logical :: flag, listener
  double precision :: d(2)
  character(len=32) :: mode
  character(len=4096) :: file

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, mode)
  call get_command_argument(2, file)
  bad = 0
  listener = mode == 'listen'
  if (listener) then
    fd = join_listen(trim(file) // c_null_char)
  else
    fd = join_connect(trim(file) // c_null_char)
  end if
  if (fd < 0) then
    print '(a)', 'FAIL no connected socket'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if

  call MPI_Comm_join(fd, inter, ierr)
  call check(ierr == MPI_SUCCESS, 'MPI_Comm_join')
  if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  call MPI_Comm_test_inter(inter, flag, ierr)
  call MPI_Comm_remote_size(inter, rsize, ierr)
  call check(flag .and. rsize == 1, 'an intercommunicator with one remote rank')

  ! Point-to-point both ways.
  back = -1
  if (listener) then
    v = 41
    call MPI_Send(v, 1, MPI_INTEGER, 0, 3, inter, ierr)
    call MPI_Recv(back, 1, MPI_INTEGER, 0, 4, inter, MPI_STATUS_IGNORE, ierr)
    call check(back == 82, 'the value sent back')
  else
    call MPI_Recv(back, 1, MPI_INTEGER, 0, 3, inter, MPI_STATUS_IGNORE, ierr)
    call check(back == 41, 'the value received')
    back = back * 2
    call MPI_Send(back, 1, MPI_INTEGER, 0, 4, inter, ierr)
  end if

  ! Each side gets the other's value; a Bcast each way.
  mine = 1
  if (listener) mine = 1000
  total = 0
  call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, inter, ierr)
  if (listener) then
    call check(total == 1, 'Allreduce')
  else
    call check(total == 1000, 'Allreduce')
  end if
  do turn = 0, 1
    d = 0d0
    if ((turn == 0) .eqv. listener) then
      d(1) = 2.5d0
      d(2) = -1d0 - turn
      call MPI_Bcast(d, 2, MPI_DOUBLE_PRECISION, MPI_ROOT, inter, ierr)
    else
      call MPI_Bcast(d, 2, MPI_DOUBLE_PRECISION, 0, inter, ierr)
      call check(d(1) == 2.5d0 .and. d(2) == -1d0 - turn, 'Bcast')
    end if
  end do

  ! The socket is left as it was: usable, nothing unread.
  if (listener) then
    got = join_swap_byte(fd, ichar('L'))
    call check(got == ichar('C'), 'a byte over the socket after the join')
  else
    got = join_swap_byte(fd, ichar('C'))
    call check(got == ichar('L'), 'a byte over the socket after the join')
  end if
  call MPI_Comm_disconnect(inter, ierr)
  call check(ierr == MPI_SUCCESS .and. inter == MPI_COMM_NULL, 'disconnect')
  call join_close(fd)
  if (bad == 0) print '(a,i0)', 'PASS join rank ', rank
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      bad = bad + 1
      print '(a,a,a)', trim(mode), ': FAIL ', what
    end if
  end subroutine check

end program join
